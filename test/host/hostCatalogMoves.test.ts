/**
 * How a host's catalog view notices what other processes publish, on real profile files: the per-call check must
 * not depend on the held catalog file having no other name (a hard-link backup gives it one), and a quarantine
 * another process wrote must not pass for this host's own (which its writer acted on already) when this host's own
 * next state write of that plugin carries it.
 */
import { linkSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { putPlugin, updatePluginState } from '../../src/catalog/catalogContents.js';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import { HostCatalog } from '../../src/host/hostCatalog.js';
import { pluginRecords } from '../catalog/helpers/catalogFixtures.js';

let base: string;
let dir: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'host-catalog-moves-'));
  dir = join(base, 'work');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

const open = async (): Promise<CatalogStore> => (await CatalogStore.open({ profileDir: dir, profile: 'work' }))._unsafeUnwrap();

async function hostView(): Promise<{ catalog: HostCatalog; other: CatalogStore }> {
  const mine = await open();
  (await mine.transaction((c) => putPlugin(c, pluginRecords('alpha'))))._unsafeUnwrap();
  const catalog = new HostCatalog(mine, (await mine.snapshot())._unsafeUnwrap());
  (await catalog.refresh())._unsafeUnwrap();
  return { catalog, other: await open() };
}

describe("a host's catalog view", () => {
  it('sees another process publish while the catalog file has a second name (a hard-link backup), on the call path and the poll', async () => {
    const { catalog, other } = await hostView();
    expect(catalog.changedOnDisk()).toBe(false);
    linkSync(join(dir, 'plugin-catalog.json'), join(base, 'backup-plugin-catalog.json'));
    (await catalog.refresh())._unsafeUnwrap();
    expect([catalog.changedOnDisk(), catalog.changedOnDisk(true)]).toEqual([false, false]);

    (await other.transaction((c) => putPlugin(c, pluginRecords('beta'))))._unsafeUnwrap();
    expect([catalog.changedOnDisk(), catalog.changedOnDisk(true)]).toEqual([true, true]);
    expect(Object.keys((await catalog.current())._unsafeUnwrap().contents.plugins).sort()).toEqual(['alpha', 'beta']);
    expect(catalog.changedOnDisk()).toBe(false);
    catalog.close();
  });

  it("tells another process's quarantine from its own, also when its own next state write of that plugin carries it", async () => {
    const { catalog, other } = await hostView();
    const quarantinedAt = '2026-11-27T10:00:00.000Z';
    (await other.transaction((c) => updatePluginState(c, 'alpha', (row) => ({ ...row, quarantined_at: quarantinedAt, quarantine_reason: 'operator', permanent_quarantine: true }))))._unsafeUnwrap();
    const carried = (await catalog.updateState('alpha', (row) => row))._unsafeUnwrap();
    expect(carried.quarantined_at).toBe(quarantinedAt);
    expect(catalog.quarantinedHere('alpha', carried)).toBe(false);

    // Its own quarantine is its own however the snapshot reaches it (here, a read by another view of the profile).
    const own = (await catalog.updateState('alpha', (row) => ({ ...row, quarantined_at: '2026-11-27T10:00:05.000Z', quarantine_reason: 'crash' })))._unsafeUnwrap();
    expect(catalog.quarantinedHere('alpha', own)).toBe(true);
    expect(catalog.quarantinedHere('alpha', (await other.snapshot())._unsafeUnwrap().contents.states.alpha)).toBe(true);
    catalog.close();
  });
});
