/**
 * Concurrency: four processes each install 25 plugins into one profile at
 * the same time. All 100 are recorded, none is lost, no process sees an error
 * (lock waits only), and a reader polling meanwhile without the lock always
 * sees one consistent generation.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import { listPlugins } from '../../src/catalog/catalogContents.js';
import { bundleScript } from '../support/bundleScript.js';
import { startHelper } from '../support/childHelper.js';

let helper: { file: string; dir: string };
let base: string;
beforeAll(async () => {
  helper = await bundleScript(join(import.meta.dirname, 'helpers/installLoop.ts'));
  base = mkdtempSync(join(tmpdir(), 'catalog-concurrency-'));
});
afterAll(() => {
  rmSync(helper.dir, { recursive: true, force: true });
  rmSync(base, { recursive: true, force: true });
});

it('records all 100 installs of 4 processes × 25 on one profile', { timeout: 120_000 }, async () => {
  const dir = join(base, 'profile');
  const reader = (await CatalogStore.open({ profileDir: dir, profile: 'work' }))._unsafeUnwrap();
  const children = ['a', 'b', 'c', 'd'].map((prefix) => startHelper(helper.file, [dir, 'work', prefix, '25']));

  let running = true;
  let reads = 0;
  let lastGeneration = 0;
  const polling = (async () => {
    while (running) {
      const snap = (await reader.snapshot())._unsafeUnwrap();
      const ids = Object.keys(snap.contents.plugins).sort();
      expect(Object.keys(snap.contents.states).sort()).toEqual(ids);
      expect([...new Set(snap.contents.variants.map((v) => v.plugin_id))].sort()).toEqual(ids);
      expect(ids.length).toBe(snap.install_generation);
      expect(snap.install_generation).toBeGreaterThanOrEqual(lastGeneration);
      lastGeneration = snap.install_generation;
      reads++;
      await new Promise((r) => setTimeout(r, 1));
    }
  })();

  const exits = await Promise.all(children.map((c) => c.exited));
  running = false;
  await polling;
  for (const exit of exits) {
    expect(exit.stderr).toBe('');
    expect(exit.code).toBe(0);
    expect(exit.stdout).toContain('done 25');
  }
  const snap = (await reader.snapshot())._unsafeUnwrap();
  const ids = listPlugins(snap).map((p) => p.plugin_id);
  expect(ids).toHaveLength(100);
  for (const prefix of ['a', 'b', 'c', 'd']) for (let i = 0; i < 25; i++) expect(ids).toContain(`${prefix}-${i}`);
  expect(snap.install_generation).toBe(100);
  expect(reads).toBeGreaterThan(0);
});
