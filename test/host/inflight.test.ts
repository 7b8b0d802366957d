/**
 * Remove and upgrade while a call is in flight: the call finishes (the
 * host drains the plugin's calls before stopping it, up to a deadline), and
 * one still running at the deadline fails with the retryable
 * PLUGIN_CALL_INTERRUPTED saying why, never with HOST_CLOSED ("open a new
 * PluginHost") from a host that is still open. The same holds when another
 * PluginHost on the profile removes or upgrades the plugin.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { answered, HostPool, jsonOf, packagedVersion, probeEchoInFlight, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const ECHO = 'plug.host-probe.echo';

/** Starts a long call that starts the plugin, once the host has spawned it. */
const callInFlight = (host: PluginHost, delayMs: number) => probeEchoInFlight(host, delayMs, 'spawn');

describe('a call in flight when its plugin is removed or upgraded by the same host', () => {
  it('finishes before the remove stops the plugin; later calls find no operation', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const { call } = await callInFlight(host, 800);
    const removed = await host.remove('host-probe');
    expect(removed.isOk(), removed.isErr() ? removed.error.message : '').toBe(true);
    expect(jsonOf(answered(await call))).toMatchObject({ success: true, data: { args: { message: 'in flight' } } });
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('VARIANT_NOT_FOUND');
  });

  it('fails a call still running at the drain deadline with PLUGIN_CALL_INTERRUPTED (retryable, reason removed)', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const { call } = await callInFlight(host, 60_000);
    expect((await host.remove('host-probe', { drainTimeoutMs: 50 })).isOk()).toBe(true);
    const error = (await call)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CALL_INTERRUPTED');
    expect(error.retryable).toBe(true);
    expect(error.details).toMatchObject({ plugin_id: 'host-probe', reason: 'removed' });
    expect(error.hint).not.toContain('Open a new PluginHost');
  });

  it('finishes before an upgrade stops the old version', async () => {
    const host = await pool.installed(await pool.profile(), ['probe'], { activation: 'immediate' });
    const { call } = await callInFlight(host, 800);
    const upgraded = await host.install(await packagedVersion('probe', '1.1.0'), { canary: false });
    expect(upgraded.isOk(), upgraded.isErr() ? upgraded.error.message : '').toBe(true);
    expect(jsonOf(answered(await call))).toMatchObject({ success: true });
    expect((await host.info('host-probe'))._unsafeUnwrap().version).toBe('1.1.0');
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
  });

  it('fails an upgrade-interrupted call with reason upgraded', async () => {
    const host = await pool.installed(await pool.profile(), ['probe'], { activation: 'immediate' });
    const { call } = await callInFlight(host, 60_000);
    expect((await host.install(await packagedVersion('probe', '1.1.0'), { canary: false, drainTimeoutMs: 50 })).isOk()).toBe(true);
    const error = (await call)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CALL_INTERRUPTED');
    expect(error.details).toMatchObject({ plugin_id: 'host-probe', reason: 'upgraded' });
  });

  it("drains an upgrade this host installs with the caller's drainTimeoutMs under hotReload too, not the host's", async () => {
    // No poll: the install's own write moves the snapshot, which the watch sees.
    const host = await pool.installed(await pool.profile(), ['probe'], { hotReload: { pollMs: 3_600_000 } });
    // Shorter than the host's drain (callTimeoutMs, 30 s): it would finish if that drain applied.
    const { call } = await callInFlight(host, 3_000);
    expect((await host.install(await packagedVersion('probe', '1.1.0'), { canary: false, drainTimeoutMs: 50 })).isOk()).toBe(true);
    const error = (await call)._unsafeUnwrapErr();
    expect([error.code, error.details.reason]).toEqual(['PLUGIN_CALL_INTERRUPTED', 'upgraded']);
    expect(jsonOf(answered(await host.call(ECHO, {})))).toMatchObject({ success: true });
    expect(answered(await host.info('host-probe')).version).toBe('1.1.0');
  });
});

/** Starts a long call on a plugin that is already running (an earlier call started it), once the host has sent it. */
const callOnWarmPlugin = async (host: PluginHost, delayMs: number) => {
  answered(await host.call(ECHO, {}));
  return probeEchoInFlight(host, delayMs, 'call:start');
};

describe('a call in flight when another PluginHost on the profile removes or upgrades its plugin', () => {
  it('finishes when the other host removes the plugin', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const other = await pool.open(dir);
    const { call } = await callOnWarmPlugin(host, 800);
    expect((await other.remove('host-probe')).isOk()).toBe(true);
    expect(jsonOf(answered(await call))).toMatchObject({ success: true });
  });

  it('finishes when the other host upgrades the plugin', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const other = await pool.open(dir);
    const { call } = await callOnWarmPlugin(host, 800);
    expect((await other.install(await packagedVersion('probe', '1.1.0'), { canary: false })).isOk()).toBe(true);
    expect(jsonOf(answered(await call))).toMatchObject({ success: true });
  });
});
