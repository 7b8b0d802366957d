/**
 * CatalogStore benchmarks: install transaction latency with 1, 100 and 1,000
 * plugins installed (each compared with the latency at 1 plugin, measured in
 * the same run), and listing 1,000 plugins.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CatalogStore } from '../src/catalog/CatalogStore.js';
import { listPlugins, putPlugin } from '../src/catalog/catalogContents.js';
import type { CatalogContents } from '../src/catalog/catalogTypes.js';
import { pluginRecords } from '../test/catalog/helpers/catalogFixtures.js';
import { result, timeMs, type BenchResult } from './harness.js';

const SAMPLES = 60;

async function storeWith(dir: string, installed: number): Promise<CatalogStore> {
  const store = (await CatalogStore.open({ profileDir: dir, profile: 'bench' }))._unsafeUnwrap();
  (
    await store.transaction((current) => {
      let next: CatalogContents = current;
      for (let i = 0; i < installed; i++) next = putPlugin(next, pluginRecords(`pre-${i}`));
      return next;
    })
  )._unsafeUnwrap();
  return store;
}

/** Milliseconds of one transaction installing plugin `id` into `store`. */
async function installLatency(store: CatalogStore, id: string): Promise<number> {
  return timeMs(async () => (await store.transaction((c) => putPlugin(c, pluginRecords(id))))._unsafeUnwrap());
}

/** Runs the catalog benchmarks. */
export async function run(): Promise<BenchResult[]> {
  const base = mkdtempSync(join(tmpdir(), 'bench-catalog-'));
  try {
    const stores = {
      one: await storeWith(join(base, 'p1'), 1),
      hundred: await storeWith(join(base, 'p100'), 99),
      thousand: await storeWith(join(base, 'p1000'), 999),
    };
    // Interleave the three sizes transaction by transaction (rotating which goes first), so that
    // load from other processes on a shared machine moves all of them alike.
    const lat = { one: [] as number[], hundred: [] as number[], thousand: [] as number[] };
    const sizes = ['one', 'hundred', 'thousand'] as const;
    for (let i = 0; i < SAMPLES; i++) {
      for (let k = 0; k < sizes.length; k++) {
        const size = sizes[(i + k) % sizes.length]!;
        lat[size].push(await installLatency(stores[size], `new-${i}`));
      }
    }
    const latency = (name: string, values: number[]): BenchResult =>
      result(
        {
          name,
          baselineName: 'install transaction with 1 plugin installed',
          unit: 'ms',
          compare: 'ratio',
          target: 3,
          better: 'lower',
          note: `${values.length} transactions (lock, read, validate, write three files with fsync, rename, directory fsync).`,
        },
        values,
        lat.one,
      );

    const dir = join(base, 'p1000');
    const names = ['plugin-catalog.json', 'plugins.lock', 'plugin-state.json'];
    const cold: number[] = [];
    const warm: number[] = [];
    const rawParse: number[] = [];
    let count = 0;
    for (let i = 0; i < 15; i++) {
      rawParse.push(await timeMs(() => names.map((n) => JSON.parse(readFileSync(join(dir, n), 'utf8')) as unknown)));
      cold.push(
        await timeMs(async () => {
          const fresh = (await CatalogStore.open({ profileDir: dir, profile: 'bench' }))._unsafeUnwrap();
          count = (await fresh.list())._unsafeUnwrap().length;
        }),
      );
      warm.push(await timeMs(async () => listPlugins((await stores.thousand.snapshot())._unsafeUnwrap())));
    }
    const coldResult = result(
      {
        name: `list ${count} plugins from a freshly opened store (read, parse, validate three files)`,
        baselineName: 'readFileSync + JSON.parse of the three files',
        unit: 'ms',
        compare: 'difference',
        target: 10,
        better: 'lower',
      },
      cold,
      rawParse,
    );
    const warmResult = result(
      {
        name: `list ${count} plugins from an open store (unchanged files are not parsed again)`,
        baselineName: 'readFileSync + JSON.parse of the three files',
        unit: 'ms',
        compare: 'difference',
        target: 10,
        better: 'lower',
      },
      warm,
      rawParse,
    );
    return [
      latency('install transaction with 100 plugins installed', lat.hundred),
      latency('install transaction with 1,000 plugins installed', lat.thousand),
      { ...coldResult, note: `absolute ${coldResult.value.toFixed(2)} ms (issue target ≤ 10 ms: ${coldResult.value <= 10 ? 'met' : 'not met'}).` },
      { ...warmResult, note: `absolute ${warmResult.value.toFixed(2)} ms (issue target ≤ 10 ms: ${warmResult.value <= 10 ? 'met' : 'not met'}).` },
    ];
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
