/**
 * PluginHost is protocol- and language-neutral: ndjson-rpc and one-shot
 * handshake plugins installed from GUM JSON v1 manifests under the neutral
 * preset, and a dependency-free Python MCP server, all sandboxed.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeClock, HostPool, jsonOf, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

describe('ndjson-rpc plugin', () => {
  it('is called through PluginHost and kept alive across calls', async () => {
    const host = await pool.installed(await pool.profile(), ['ndjson']);
    let spawns = 0;
    host.events.on('spawn', (e) => {
      spawns++;
      expect(e.sandboxed).toBe(true);
    });
    expect((await host.call('plug.host-ndjson.echo', { a: 1, nested: { b: [2] } }))._unsafeUnwrap()).toEqual({ shape: 'ndjson-rpc', isError: false, value: { a: 1, nested: { b: [2] } } });
    expect((await host.call('plug.host-ndjson.ping', undefined))._unsafeUnwrap()).toEqual({ shape: 'ndjson-rpc', isError: false, value: 'pong' });
    expect((await host.call('plug.host-ndjson.echo', 'text'))._unsafeUnwrap().value).toBe('text');
    expect(spawns).toBe(1);
    expect((await host.info('host-ndjson'))._unsafeUnwrap()).toMatchObject({ shape: 'ndjson-rpc', status: 'active' });
  });

  it('returns application errors as isError results and, with ndjsonCrash respawn, counts a crash toward quarantine', async () => {
    const appError = await pool.installed(await pool.profile(), ['ndjson'], { env: { ECHO_MODE: 'app-error' } });
    expect((await appError.call('plug.host-ndjson.echo', { x: 1 }))._unsafeUnwrap()).toEqual({
      shape: 'ndjson-rpc',
      isError: true,
      value: { code: 1001, message: 'application says no', data: { x: 1 } },
    });

    const dir = await pool.profile();
    const crashing = await pool.installed(dir, ['ndjson'], { env: { ECHO_MODE: 'crash-before' }, clock: new FakeClock(), ndjsonCrash: 'respawn' });
    expect((await crashing.call('plug.host-ndjson.echo', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');
    expect((await crashing.info('host-ndjson'))._unsafeUnwrap()).toMatchObject({ status: 'quarantined', last_error_code: 'PLUGIN_CRASHED' });
    expect((await crashing.call('plug.host-ndjson.echo', {}))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');
  });

  it('with ndjsonMalformed stop-plugin, gives calls queued behind a protocol failure that failure, not HOST_CLOSED', async () => {
    const host = await pool.installed(await pool.profile(), ['ndjson'], { env: { ECHO_MODE: 'garbage' }, clock: new FakeClock(), ndjsonMalformed: 'stop-plugin' });
    const [first, queued] = await Promise.all([host.call('plug.host-ndjson.echo', { n: 1 }), host.call('plug.host-ndjson.echo', { n: 2 })]);
    expect(first._unsafeUnwrapErr().code).toBe('PLUGIN_INVALID_JSON');
    const sibling = queued._unsafeUnwrapErr();
    expect(sibling.code).toBe('PLUGIN_INVALID_JSON');
    expect(sibling.details.stopped_by_other_call).toBe(true);
    expect(host.closed).toBe(false);
  });
});

describe('handshake plugin', () => {
  it('launches once per call and answers through PluginHost', async () => {
    const host = await pool.installed(await pool.profile(), ['handshake']);
    let spawns = 0;
    host.events.on('spawn', () => spawns++);
    expect((await host.call('plug.host-handshake.upper', { text: 'quiet' }))._unsafeUnwrap()).toEqual({ shape: 'handshake', isError: false, value: 'QUIET' });
    expect((await host.call('plug.host-handshake.echo', { n: 1 }))._unsafeUnwrap()).toEqual({ shape: 'handshake', isError: false, value: { n: 1 } });
    const failed = (await host.call('plug.host-handshake.fail', {}))._unsafeUnwrap();
    expect(failed.isError).toBe(true);
    expect(failed.value).toEqual({ code: 'E_FAIL', message: 'the tool failed on purpose' });
    expect(spawns).toBe(3);
    expect((await host.canary('host-handshake'))._unsafeUnwrap()).toEqual({ plugin_id: 'host-handshake', mode: 'passive', status: 'passed' });
  });

  it('counts every failed launch, and a failed launch does not disturb the calls beside it', async () => {
    const clock = new FakeClock();
    const host = await pool.installed(await pool.profile(), ['handshake'], { clock });
    const [died, echoed] = await Promise.all([host.call('plug.host-handshake.die', {}), host.call('plug.host-handshake.echo', { beside: true })]);
    expect(died._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_CRASHED', details: { stderr_tail: expect.stringContaining('dying on request') } });
    expect(echoed._unsafeUnwrap().value).toEqual({ beside: true });
    expect((await host.info('host-handshake'))._unsafeUnwrap()).toMatchObject({ status: 'quarantined', last_error_code: 'PLUGIN_CRASHED' });
    expect((await host.call('plug.host-handshake.echo', {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retry_after_ms: 30_000 });
    clock.advance(30_000);
    expect((await host.call('plug.host-handshake.die', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');
    expect((await host.call('plug.host-handshake.echo', {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retry_after_ms: 60_000 });
  });

  it('enforces the host-owned capability allow-list', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['handshake'], {
      env: { PLUGIN_CAPABILITIES: 'net.fetch' },
      handshakeCapabilities: { 'host-handshake': ['fs.read'] },
    });
    const refused = (await host.call('plug.host-handshake.echo', {}))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_CAPABILITY_NOT_ALLOWED');
    expect((await host.info('host-handshake'))._unsafeUnwrap().status).toBe('active');

    const allowed = await pool.installed(await pool.profile(), ['handshake'], {
      env: { PLUGIN_CAPABILITIES: 'fs.read' },
      handshakeCapabilities: { 'host-handshake': ['fs.read'] },
    });
    expect((await allowed.call('plug.host-handshake.echo', { ok: true }))._unsafeUnwrap().value).toEqual({ ok: true });
  });
});

describe('Python MCP plugin with no third-party dependencies', () => {
  it('installs with its interpreter pinned and answers in the sandbox', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['helloPython']);
    const info = (await host.info('hello-python'))._unsafeUnwrap();
    const lock = JSON.parse(await readFile(join(dir, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { binding: { argv_normalized: string[] } }> };
    expect(lock.plugins['hello-python']?.binding.argv_normalized.join(' ')).toMatch(/python3/);
    expect(info.enforced_capabilities).toMatchObject({ backend: expect.stringMatching(/^(landlock|bubblewrap)$/), network: false });
    expect(jsonOf((await host.call('plug.hello-python.hello', { name: 'sandbox' }))._unsafeUnwrap())).toEqual({ success: true, data: { greeting: 'Hello, sandbox!' } });
    expect((await host.call('plug.hello-python.hello', { name: '' }))._unsafeUnwrapErr()).toMatchObject({ code: 'INVALID_ARGS', source_error_code: 'INVALID_INPUT' });
  });
});
