/**
 * CatalogStore benchmarks: install transaction latency with 1, 100 and 1,000
 * plugins installed (each compared with the latency at 1 plugin, measured in
 * the same run), and listing 1,000 plugins. Every transaction starts from a
 * fresh copy of its store, so each sample installs into exactly as many
 * plugins as its label says.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CatalogStore } from '../src/catalog/CatalogStore.js';
import { listPlugins, putPlugin } from '../src/catalog/catalogContents.js';
import type { CatalogContents } from '../src/catalog/catalogTypes.js';
import { pluginRecords } from '../test/catalog/helpers/catalogFixtures.js';
import { result, timeMs, type BenchResult } from './harness.js';
import { buildCli } from './support/builtCli.js';

const SAMPLES = 60;
const CLI_RUNS = 10;

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

/**
 * Milliseconds of one transaction installing plugin `id` into a fresh copy of
 * the store in `template` (copied and opened before the clock starts).
 */
async function installLatency(template: string, scratch: string, id: string): Promise<number> {
  rmSync(scratch, { recursive: true, force: true });
  cpSync(template, scratch, { recursive: true });
  const store = (await CatalogStore.open({ profileDir: scratch, profile: 'bench' }))._unsafeUnwrap();
  (await store.snapshot())._unsafeUnwrap();
  return timeMs(async () => (await store.transaction((c) => putPlugin(c, pluginRecords(id))))._unsafeUnwrap());
}

/** Runs the catalog benchmarks. */
export async function run(): Promise<BenchResult[]> {
  const base = mkdtempSync(join(tmpdir(), 'bench-catalog-'));
  try {
    const templates = { one: join(base, 'p1'), hundred: join(base, 'p100'), thousand: join(base, 'p1000') };
    const stores = {
      one: await storeWith(templates.one, 1),
      hundred: await storeWith(templates.hundred, 100),
      thousand: await storeWith(templates.thousand, 1000),
    };
    // Interleave the three sizes transaction by transaction (rotating which goes first), so that
    // load from other processes on a shared machine moves all of them alike.
    const lat = { one: [] as number[], hundred: [] as number[], thousand: [] as number[] };
    const sizes = ['one', 'hundred', 'thousand'] as const;
    for (let i = 0; i < SAMPLES; i++) {
      for (let k = 0; k < sizes.length; k++) {
        const size = sizes[(i + k) % sizes.length]!;
        lat[size].push(await installLatency(templates[size], join(base, 'scratch'), `new-${i}`));
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
          note: `${values.length} transactions, each into a fresh copy of the store (lock, read, validate, write three files with fsync, rename, directory fsync); the baseline likewise into a 1-plugin store. Each is the first transaction of its store: the entries it keeps are copied from the live files' bytes, read again for it while the mutation is checked (one scan proves their text is JSON.stringify's; the parse cache keeps no file text), not stringified again (issue 18, second round).`,
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
        compare: 'absolute',
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
        compare: 'absolute',
        target: 10,
        better: 'lower',
      },
      warm,
      rawParse,
    );
    const cli = await buildCli();
    const cliList: number[] = [];
    const nodeStart: number[] = [];
    try {
      const listArgs = [cli.entry, 'list', '--profile-dir', dir, '--profile', 'bench'];
      const processMs = (args: readonly string[]): Promise<number> => timeMs(() => execFileSync(process.execPath, args, { stdio: 'ignore' }));
      await processMs(listArgs);
      for (let i = 0; i < CLI_RUNS; i++) {
        nodeStart.push(await processMs(['-e', '0']));
        cliList.push(await processMs(listArgs));
      }
    } finally {
      await cli.remove();
    }
    const cliResult = result(
      {
        name: `CLI \`list\` of ${count} plugins end to end (process start, PluginHost.open, list, print)`,
        baselineName: 'node -e 0',
        unit: 'ms',
        compare: 'difference',
        target: 1000,
        better: 'lower',
        role: 'design',
        note: `${CLI_RUNS} interleaved runs of each process after one warm-up; the CLI built from tsup.config.ts's ESM build into a scratch directory, listing the same 1,000-plugin profile as the rows above. Reported beside the listing row as issue 18 asks; the issue sets it no target (the bound shown is only a sanity check). \`list\` opens its host with the sandbox proved at the first spawn (proveAt: 'first_spawn'), which it never reaches, so it no longer pays the sandbox probe (a bubblewrap start of Node, ~200-600 ms in a cold process); what remains is mostly loading the library's modules.`,
      },
      cliList,
      nodeStart,
    );
    return [
      latency('install transaction with 100 plugins installed', lat.hundred),
      latency('install transaction with 1,000 plugins installed', lat.thousand),
      {
        ...coldResult,
        note: `${cold.length} runs; the issue's target is the listing time itself (≤ 10 ms), the parse baseline is context. Cut in issue 18: the schemas' date-time values are checked without allocating (ajv-formats' full check had cost more than the parse), the files are read into one buffer each (Latin-1 when ASCII) concurrently, the list after open recognises the cached files by one stat each, one readdir replaces three failed opens of .next files.`,
      },
      { ...warmResult, note: `${warm.length} runs; the issue's target is the listing time itself (≤ 10 ms), the parse baseline is context.` },
      cliResult,
    ];
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
