/**
 * How a host's catalog view notices what other processes publish, on real profile files: the per-call check must
 * not depend on the held catalog file having no other name (a hard-link backup gives it one), a quarantine
 * another process wrote must not pass for this host's own (which its writer acted on already) when this host's own
 * next state write of that plugin carries it or when it keeps the quarantine time of this host's, the file held
 * after this host's own write is the very one it published, and a profile deleted and created again (its
 * generation back at 1) replaces the one held, while a read that merely finished late is still ignored.
 */
import { closeSync, fstatSync, linkSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResultAsync } from 'neverthrow';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { putPlugin, updatePluginState } from '../../src/catalog/catalogContents.js';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import type { CatalogSnapshot } from '../../src/catalog/catalogTypes.js';
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

  it("does not take another process's hold for its own when it keeps this host's quarantine time", async () => {
    const { catalog, other } = await hostView();
    const since = '2026-11-27T10:00:00.000Z';
    // This host's backoff quarantine after a crash (its supervisor acted on it)...
    const own = (await catalog.updateState('alpha', (row) => ({ ...row, quarantined_at: since, quarantine_reason: 'crash', retry_count: 1, next_retry_at: '2026-11-27T10:00:01.000Z' })))._unsafeUnwrap();
    expect(catalog.quarantinedHere('alpha', own)).toBe(true);
    // ...then a failed canary in another process holds the plugin: the same quarantine time (canaryHold keeps it), no retry.
    (await other.transaction((c) => updatePluginState(c, 'alpha', (row) => ({ ...row, quarantine_reason: 'canary_failed', next_retry_at: null }))))._unsafeUnwrap();
    const held = (await catalog.current())._unsafeUnwrap().contents.states.alpha!;
    expect([held.quarantined_at, held.quarantine_reason]).toEqual([since, 'canary_failed']);
    expect(catalog.quarantinedHere('alpha', held)).toBe(false);
    catalog.close();
  });

  it('holds exactly the catalog file its own transaction published, also when another process published since', async () => {
    const mine = await open();
    const other = await open();
    const written = (await mine.transaction((c) => putPlugin(c, pluginRecords('alpha')), { holdCatalogFile: true }))._unsafeUnwrap();
    (await other.transaction((c) => putPlugin(c, pluginRecords('beta'))))._unsafeUnwrap();
    const fd = mine.takePublishedCatalog(written);
    expect(fd).toBeTypeOf('number');
    try {
      // The descriptor names the file published for `written`, now replaced (no link left), not the live one.
      expect((JSON.parse(readFileSync(fd!, 'utf8')) as { txid: string }).txid).toBe(written.txid);
      expect(fstatSync(fd!).nlink).toBe(0);
      expect(mine.takePublishedCatalog(written)).toBeUndefined();
    } finally {
      closeSync(fd!);
    }
    // Without holdCatalogFile nothing is kept.
    const plain = (await mine.transaction((c) => putPlugin(c, pluginRecords('gamma'))))._unsafeUnwrap();
    expect(mine.takePublishedCatalog(plain)).toBeUndefined();

    // A host's own write holds its file: another process's publish right after shows on the next check.
    const catalog = new HostCatalog(mine, (await mine.snapshot())._unsafeUnwrap());
    (await catalog.updateState('alpha', (row) => row))._unsafeUnwrap();
    expect(catalog.changedOnDisk(true)).toBe(false);
    (await other.transaction((c) => putPlugin(c, pluginRecords('delta'))))._unsafeUnwrap();
    expect(catalog.changedOnDisk()).toBe(true);
    catalog.close();
  });

  it('moves to a profile deleted and created again (its generation lower than the one held), with every plugin of the old one gone', async () => {
    const { catalog } = await hostView();
    for (let i = 0; i < 3; i++) (await catalog.updateState('alpha', (row) => row))._unsafeUnwrap();
    const old = catalog.snapshot;
    const moves: [CatalogSnapshot, CatalogSnapshot][] = [];
    catalog.onMoved((before, after) => moves.push([before, after]));

    rmSync(dir, { recursive: true, force: true });
    const remade = await open();
    (await remade.transaction((c) => putPlugin(c, pluginRecords('beta'))))._unsafeUnwrap();
    expect(catalog.changedOnDisk()).toBe(true);
    const now = (await catalog.current())._unsafeUnwrap();
    expect(now.install_generation).toBeLessThan(old.install_generation);
    expect(Object.keys(now.contents.plugins)).toEqual(['beta']);
    expect(moves.map(([b, a]) => [b.txid, a.txid])).toEqual([[old.txid, now.txid]]);
    expect(catalog.changedOnDisk(true)).toBe(false);

    // Its next generations are followed as usual.
    (await remade.transaction((c) => putPlugin(c, pluginRecords('gamma'))))._unsafeUnwrap();
    expect(Object.keys((await catalog.current())._unsafeUnwrap().contents.plugins).sort()).toEqual(['beta', 'gamma']);
    catalog.close();
  });

  it('ignores a read that finished after a newer generation was seen (the same profile)', async () => {
    const mine = await open();
    (await mine.transaction((c) => putPlugin(c, pluginRecords('alpha'))))._unsafeUnwrap();
    const other = await open();
    // The first read through this view of the store is answered only when the test lets it go.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let readDone: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (readDone = resolve));
    let lateTxid = '';
    let held = true;
    const slow = new Proxy(mine, {
      get(target, key) {
        const value = Reflect.get(target, key, target) as unknown;
        if (key === 'snapshot' && held) {
          held = false;
          return () =>
            new ResultAsync(
              (async () => {
                const read = await target.snapshot();
                lateTxid = read.isOk() ? read.value.txid : '';
                readDone();
                await gate;
                return read;
              })(),
            );
        }
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const catalog = new HostCatalog(slow, (await mine.snapshot())._unsafeUnwrap());
    const late = catalog.refresh();
    // The slow read has read the files before another process publishes.
    await done;
    (await other.transaction((c) => putPlugin(c, pluginRecords('beta'))))._unsafeUnwrap();
    const newer = (await catalog.refresh())._unsafeUnwrap();
    expect(Object.keys(newer.contents.plugins).sort()).toEqual(['alpha', 'beta']);
    expect(lateTxid).not.toBe(newer.txid);
    release();
    const after = (await late)._unsafeUnwrap();
    expect(after.txid).toBe(newer.txid);
    expect(catalog.snapshot.txid).toBe(newer.txid);
    catalog.close();
  });
});
