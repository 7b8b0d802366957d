/**
 * The parse cache keeps what the files parsed to, not their text: the
 * encoder needs the text only for the first transaction after a store is
 * opened, and reads it again then. Real files in a temporary profile.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CATALOG_FILE_KINDS } from '../../src/catalog/catalogFiles.js';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import { putPlugin } from '../../src/catalog/catalogContents.js';
import { readGeneration, type ParseCache } from '../../src/catalog/generationFiles.js';
import { pluginRecords } from './helpers/catalogFixtures.js';

const STATE_FILE = 'plugin-state.json';

async function storeWith(dir: string, ids: readonly string[]): Promise<CatalogStore> {
  const store = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrap();
  for (const id of ids) (await store.transaction((current) => putPlugin(current, pluginRecords(id))))._unsafeUnwrap();
  return store;
}

describe('catalog parse cache', () => {
  let dir = '';
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('keeps no file text once the files are parsed', async () => {
    dir = await mkdtemp(join(tmpdir(), 'catalog-cache-'));
    await storeWith(dir, ['alpha', 'beta']);
    const cache: ParseCache = new Map();
    const read = await readGeneration(dir, cache);
    expect(read.isOk() && 'selected' in read.value).toBe(true);
    for (const kind of CATALOG_FILE_KINDS) {
      const version = cache.get(kind)?.version as Readonly<Record<string, unknown>> | undefined;
      expect(version?.data, kind).toBeDefined();
      expect(version?.['text'], kind).toBeUndefined();
    }
  });

  it('still copies a kept entry from the file on disk in the first transaction after open', async () => {
    dir = await mkdtemp(join(tmpdir(), 'catalog-cache-'));
    await storeWith(dir, ['alpha', 'beta']);
    // A member given twice parses to its last value; only a copy of the entry's text keeps the first one.
    const path = join(dir, STATE_FILE);
    const written = await readFile(path, 'utf8');
    const marked = written.replace('"beta":{', '"beta":{"retry_count":7,');
    expect(marked).not.toBe(written);
    await writeFile(path, marked);

    const reopened = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrap();
    expect((await reopened.snapshot())._unsafeUnwrap().contents.states['beta']?.retry_count).toBe(0);
    (await reopened.transaction((current) => putPlugin(current, pluginRecords('gamma'))))._unsafeUnwrap();
    const after = await readFile(path, 'utf8');
    expect(after).toContain('"beta":{"retry_count":7,');
    expect(JSON.parse(after).plugins.gamma).toBeDefined();
  });
});
