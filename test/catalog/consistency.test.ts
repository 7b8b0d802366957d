/**
 * The three files must name the same plugins. A plugins.lock whose row was
 * removed on its own (restored from an older backup, edited by hand) used
 * to open silently with that plugin invisible; the store now refuses to
 * open it with CATALOG_INCONSISTENT and leaves the files as they are.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import { putPlugin } from '../../src/catalog/catalogContents.js';
import { pluginRecords } from './helpers/catalogFixtures.js';

let base: string;
let dir: string;
beforeEach(async () => {
  base = mkdtempSync(join(tmpdir(), 'catalog-consistency-'));
  dir = join(base, 'work');
  const store = (await CatalogStore.open({ profileDir: dir, profile: 'work' }))._unsafeUnwrap();
  for (const id of ['alpha', 'beta', 'gamma']) (await store.transaction((c) => putPlugin(c, pluginRecords(id))))._unsafeUnwrap();
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** Rewrites one live file in place, keeping its generation stamp, as a hand edit or a partial restore would. */
const editFile = (name: string, edit: (data: Record<string, any>) => void): string => {
  const path = join(dir, name);
  const data = JSON.parse(readFileSync(path, 'utf8')) as Record<string, any>;
  edit(data);
  const text = JSON.stringify(data, null, 2);
  writeFileSync(path, text);
  return text;
};
const open = () => CatalogStore.open({ profileDir: dir, profile: 'work' });

describe('three-file consistency at open', () => {
  it('refuses a lock that lost a row the catalog and the state still have, names the plugin, and leaves the files alone', async () => {
    const edited = editFile('plugins.lock', (lock) => delete lock.plugins.beta);
    const opened = await open();
    expect(opened.isErr(), 'the profile opened with beta invisible').toBe(true);
    const error = opened._unsafeUnwrapErr();
    expect(error.code).toBe('CATALOG_INCONSISTENT');
    expect(error.details).toMatchObject({ plugins: { beta: ['lock'] } });
    expect(error.message).toContain("'beta' is missing from plugins.lock");
    expect(readFileSync(join(dir, 'plugins.lock'), 'utf8')).toBe(edited);
  });

  it('refuses a state file or a catalog that lost a plugin the other files have', async () => {
    editFile('plugin-state.json', (state) => delete state.plugins.alpha);
    editFile('plugin-catalog.json', (catalog) => {
      catalog.variants = catalog.variants.filter((v: { plugin_id: string }) => v.plugin_id !== 'gamma');
      delete catalog.plugins.gamma;
    });
    const error = (await open())._unsafeUnwrapErr();
    expect(error.code).toBe('CATALOG_INCONSISTENT');
    expect(error.details.plugins).toEqual({ alpha: ['state'], gamma: ['catalog'] });
  });

  it('opens a consistent profile and keeps every plugin visible', async () => {
    const store = (await open())._unsafeUnwrap();
    expect((await store.list())._unsafeUnwrap().map((p) => p.plugin_id)).toEqual(['alpha', 'beta', 'gamma']);
  });
});
