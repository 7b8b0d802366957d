/**
 * A host keeps running a plugin while the CLI, in another process, removes
 * it and installs it again. The old install's process is not the new
 * install's: the host stops it (the install root it ran from is gone) and,
 * opened without hotReload, treats the reinstall as any install made while
 * it is open (pending restart, seed 001); nothing the old process did is
 * charged to the version the CLI installed, in this host or in any host
 * opened later. The same when the whole profile is deleted and the CLI makes
 * it again, its catalog generation starting over below the one the host
 * holds. Real CLI processes, real sandboxed plugin.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { cli } from '../cli/cliHarness.js';
import { answered, HostPool, jsonOf, nextEvent, packagedVersion, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterAll(async () => {
  await pool.cleanup();
  await removePackages();
});

const ECHO = 'plug.host-probe.echo';

describe('a plugin removed and installed again by the CLI while a host runs it', () => {
  it('stops the old process and charges nothing to the new install', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    expect(jsonOf(answered(await host.call(ECHO, { message: 'before' })))).toMatchObject({ success: true });

    expect((await cli(['remove', 'host-probe', '--yes', '--profile-dir', dir, '--json'])).code).toBe(0);
    const reinstalled = await cli(['install', await packagedVersion('probe', '1.1.0'), '--dev', '--yes', '--skip-canary', '--profile-dir', dir, '--json']);
    expect(reinstalled.code, reinstalled.stderr).toBe(0);

    // The old process is no longer run for any call: the reinstall waits for the next open here.
    expect((await host.call('plug.host-probe.crash', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_PENDING_RESTART');
    expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({ version: '1.1.0', status: 'installed_pending_restart' });

    const fresh = await pool.open(dir);
    const info = (await fresh.info('host-probe'))._unsafeUnwrap();
    expect([info.version, info.status]).toEqual(['1.1.0', 'active']);
    expect(jsonOf(answered(await fresh.call(ECHO, { message: 'after' })))).toMatchObject({ success: true });
  });

  it('the profile deleted (rm -rf) and made again by the CLI: the host follows the new profile, not the generation number', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    // A few state writes, so the generation held is above the one the recreated profile reaches.
    for (let i = 0; i < 2; i++) {
      answered(await host.quarantine('host-probe'));
      answered(await host.unquarantine('host-probe'));
    }
    const spawned = nextEvent(host, 'spawn');
    expect(jsonOf(answered(await host.call(ECHO, { message: 'before' })))).toMatchObject({ success: true });
    const { pid } = await spawned;
    const held = await generationIn(dir);

    const exited = nextEvent(host, 'exit');
    // The poll may see the profile in between, made by the CLI but still empty (a remove), or only its install (an upgrade).
    const changes: HostEventMap['catalog:changed'][] = [];
    host.events.on('catalog:changed', (change) => changes.push(change));
    await rm(dir, { recursive: true, force: true });
    const reinstalled = await cli(['install', await packagedVersion('probe', '1.1.0'), '--dev', '--yes', '--skip-canary', '--profile-dir', dir, '--json']);
    expect(reinstalled.code, reinstalled.stderr).toBe(0);
    expect(await generationIn(dir)).toBeLessThan(held);

    // The install the old process ran is gone with its profile: it stops, and the new install waits for the next open here.
    expect((await host.call(ECHO, { message: 'after' }))._unsafeUnwrapErr().code).toBe('PLUGIN_PENDING_RESTART');
    expect((await exited).pid).toBe(pid);
    expect(changes.flatMap((c) => [...c.removed, ...c.upgraded])).toContain('host-probe');
    expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({ version: '1.1.0', status: 'installed_pending_restart' });

    const fresh = await pool.open(dir);
    expect(jsonOf(answered(await fresh.call(ECHO, { message: 'fresh' })))).toMatchObject({ success: true });
  });
});

/** The install generation of the catalog in profile `dir`. */
async function generationIn(dir: string): Promise<number> {
  return (JSON.parse(await readFile(join(dir, 'plugin-catalog.json'), 'utf8')) as { install_generation: number }).install_generation;
}
