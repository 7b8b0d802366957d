/**
 * Seed 002 (mcptest subprocess plugin protocol v1), "Error semantics": what
 * PluginHost does with an ndjson-rpc plugin's malformed answer and crash by
 * default, and the stricter policies a host may opt into. Real echo plugin
 * subprocesses (fixtures/plugins/ndjson-echo, ECHO_MODE picks the fault).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PluginHostOptions } from '../../src/host/PluginHost.js';
import { FakeClock, HostPool, removePackages } from '../support/hostHarness.js';

describe('seed 002 mcptest protocol: error semantics through PluginHost', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  async function echoHost(options: PluginHostOptions) {
    const host = await pool.installed(await pool.profile(), ['ndjson'], { clock: new FakeClock(), ...options });
    const spawned: number[] = [];
    const crashes: string[] = [];
    host.events.on('spawn', (e) => spawned.push(e.pid));
    host.events.on('crash', (e) => crashes.push(e.code));
    return { host, spawned, crashes };
  }

  it('seed 002 "Malformed response": a line that is not JSON fails that call with the raw line attached, and the child is left running', async () => {
    const { host, spawned, crashes } = await echoHost({ env: { ECHO_MODE: 'garbage' } });
    const error = (await host.call('plug.host-ndjson.echo', { n: 1 }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_INVALID_JSON');
    expect(error.details.raw_line).toBe('this is not json');
    expect((await host.call('plug.host-ndjson.echo', { n: 2 }))._unsafeUnwrap().value).toEqual({ n: 2 });
    expect(spawned).toHaveLength(1);
    expect(crashes).toEqual([]);
    expect((await host.info('host-ndjson'))._unsafeUnwrap()).toMatchObject({ status: 'active' });
  });

  it('seed 002 "Wire format" (one JSON object per line): a line over the frame cap fails only its call; the next call is answered by the same child', async () => {
    const { host, spawned } = await echoHost({ plugins: { 'host-ndjson': { maxFrameBytes: 256 } } });
    const error = (await host.call('plug.host-ndjson.echo', { text: 'x'.repeat(1000) }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_FRAME_TOO_LARGE');
    expect((await host.call('plug.host-ndjson.echo', { text: 'short' }))._unsafeUnwrap().value).toEqual({ text: 'short' });
    expect(spawned).toHaveLength(1);
    expect((await host.info('host-ndjson'))._unsafeUnwrap()).toMatchObject({ status: 'active' });
  });

  it('seed 002 "Crash": every follow-up call surfaces the crash too (no auto-respawn, no quarantine) until the host reloads the plugin', async () => {
    const { host, spawned, crashes } = await echoHost({ env: { ECHO_MODE: 'crash-before' } });
    expect((await host.call('plug.host-ndjson.echo', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');
    const followUp = (await host.call('plug.host-ndjson.ping', {}))._unsafeUnwrapErr();
    expect(followUp.code).toBe('PLUGIN_CRASHED');
    expect(followUp.details).toMatchObject({ sticky: true, plugin_id: 'host-ndjson' });
    expect(spawned).toHaveLength(1);
    expect(crashes).toEqual(['PLUGIN_CRASHED']);
    expect((await host.info('host-ndjson'))._unsafeUnwrap()).toMatchObject({ status: 'active' });
    (await host.unquarantine('host-ndjson'))._unsafeUnwrap();
    const fresh = (await host.call('plug.host-ndjson.echo', {}))._unsafeUnwrapErr();
    expect(fresh.code).toBe('PLUGIN_CRASHED');
    expect(fresh.details.sticky).toBeUndefined();
    expect(spawned).toHaveLength(2);
  });

  it('seed 002 "Auto-respawn is a future-ticket policy choice": a host opts into ndjsonCrash respawn (backoff ladder) and ndjsonMalformed stop-plugin', async () => {
    const respawning = await echoHost({ env: { ECHO_MODE: 'crash-before' }, ndjsonCrash: 'respawn' });
    expect((await respawning.host.call('plug.host-ndjson.echo', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');
    expect((await respawning.host.info('host-ndjson'))._unsafeUnwrap()).toMatchObject({ status: 'quarantined', last_error_code: 'PLUGIN_CRASHED' });
    expect((await respawning.host.call('plug.host-ndjson.echo', {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retry_after_ms: 30_000 });

    const strict = await echoHost({ env: { ECHO_MODE: 'garbage' }, plugins: { 'host-ndjson': { ndjsonMalformed: 'stop-plugin' } } });
    expect((await strict.host.call('plug.host-ndjson.echo', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_INVALID_JSON');
    expect((await strict.host.info('host-ndjson'))._unsafeUnwrap()).toMatchObject({ status: 'quarantined', last_error_code: 'PLUGIN_INVALID_JSON' });
  });
});
