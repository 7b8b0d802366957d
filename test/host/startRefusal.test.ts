/**
 * `info()` of a host opened with `sandbox.proveAt: 'first_spawn'` where no
 * sandbox exists: the plugin cannot start there, and info says so instead of
 * describing it as running unconfined. The probe plugin installed by a real
 * host; the other host is told to sandbox for a platform no backend exists for.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { answered, HostPool, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

describe('info() on a host that cannot start plugins', () => {
  it('gives the error every start fails with, and no enforced policy, where no sandbox exists', async () => {
    const dir = await pool.profile();
    await pool.install(dir, ['probe']);
    const host = await pool.open(dir, { sandbox: { proveAt: 'first_spawn', platform: 'aix' } });

    const info = answered(await host.info('host-probe'));
    expect(info.enforced_capabilities).toBeNull();
    expect(info.start_refusal).toMatchObject({ code: 'PLUGIN_SANDBOX_UNSUPPORTED', hint: expect.stringContaining('bubblewrap') });
    const call = await host.call('plug.host-probe.echo', { message: 'hi' });
    expect(call._unsafeUnwrapErr().code).toBe(info.start_refusal?.code);
  });

  it('describes the sandbox, with no refusal, where one exists', async () => {
    const dir = await pool.profile();
    await pool.install(dir, ['probe']);
    const host = await pool.open(dir, { sandbox: { proveAt: 'first_spawn' } });
    const info = answered(await host.info('host-probe'));
    expect(info.start_refusal).toBeUndefined();
    expect(info.enforced_capabilities).toMatchObject({ enforced: true });
  });
});
