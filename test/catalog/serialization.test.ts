import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import { putPlugin, removePlugin, updatePluginState } from '../../src/catalog/catalogContents.js';
import { pluginRecords } from './helpers/catalogFixtures.js';

const FILES = ['plugin-catalog.json', 'plugins.lock', 'plugin-state.json'];

describe('catalog files on disk', () => {
  let dir = '';
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('are exactly JSON.stringify of their content, generation after generation, with per-entry JSON reused', async () => {
    dir = await mkdtemp(join(tmpdir(), 'catalog-text-'));
    const store = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrap();
    const steps = [
      (c: Parameters<typeof putPlugin>[0]) => putPlugin(c, pluginRecords('alpha')),
      (c: Parameters<typeof putPlugin>[0]) => putPlugin(c, pluginRecords('beta')),
      (c: Parameters<typeof putPlugin>[0]) => updatePluginState(c, 'alpha', (s) => ({ ...s, retry_count: 2, last_error_code: 'PLUGIN_CRASHED' })),
      (c: Parameters<typeof putPlugin>[0]) => removePlugin(c, 'beta'),
      (c: Parameters<typeof putPlugin>[0]) => putPlugin(c, pluginRecords('beta', '2026-06-01T00:00:00.000Z')),
      (c: Parameters<typeof putPlugin>[0]) => {
        const records = pluginRecords('gamma');
        return putPlugin(c, { ...records, descriptor: { ...records.descriptor!, name: 'Γάμμα "quoted" ✓ 🚀', description: 'tab\there\u2028' } });
      },
      (c: Parameters<typeof putPlugin>[0]) => putPlugin(c, pluginRecords('delta')),
    ];
    for (const step of steps) {
      (await store.transaction((current) => step(current)))._unsafeUnwrap();
      for (const name of FILES) {
        const text = await readFile(join(dir, name), 'utf8');
        expect(text).toBe(`${JSON.stringify(JSON.parse(text))}\n`);
      }
      const fresh = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrap();
      expect((await fresh.snapshot())._unsafeUnwrap().contents).toEqual((await store.snapshot())._unsafeUnwrap().contents);
    }
    const state = JSON.parse(await readFile(join(dir, 'plugin-state.json'), 'utf8'));
    expect(state.plugins.alpha).toMatchObject({ retry_count: 2, last_error_code: 'PLUGIN_CRASHED' });
    expect(Object.keys(state.plugins).sort()).toEqual(['alpha', 'beta', 'delta', 'gamma']);
    const catalog = JSON.parse(await readFile(join(dir, 'plugin-catalog.json'), 'utf8'));
    expect(catalog.plugins.gamma.name).toBe('Γάμμα "quoted" ✓ 🚀');
  });
});
