/**
 * A host keeps running a plugin while the CLI, in another process, removes
 * it and installs it again. What the old install's process does afterwards
 * is not the new install's: its crash must not quarantine the version the
 * CLI installed, in this host or in any host opened later. Real CLI
 * processes, real sandboxed plugin.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from '../cli/cliHarness.js';
import { answered, HostPool, jsonOf, packagedVersion, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterAll(async () => {
  await pool.cleanup();
  await removePackages();
});

const ECHO = 'plug.host-probe.echo';

describe('a plugin removed and installed again by the CLI while a host runs it', () => {
  it('does not charge the old process\'s crash to the new install', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    expect(jsonOf(answered(await host.call(ECHO, { message: 'before' })))).toMatchObject({ success: true });

    expect((await cli(['remove', 'host-probe', '--yes', '--profile-dir', dir, '--json'])).code).toBe(0);
    const reinstalled = await cli(['install', await packagedVersion('probe', '1.1.0'), '--dev', '--yes', '--skip-canary', '--profile-dir', dir, '--json']);
    expect(reinstalled.code, reinstalled.stderr).toBe(0);

    // The old process is still this host's session: it crashes in a call.
    expect((await host.call('plug.host-probe.crash', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');

    const fresh = await pool.open(dir);
    const info = (await fresh.info('host-probe'))._unsafeUnwrap();
    expect([info.version, info.status]).toEqual(['1.1.0', 'active']);
    expect(jsonOf(answered(await fresh.call(ECHO, { message: 'after' })))).toMatchObject({ success: true });
  });
});
