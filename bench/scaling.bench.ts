/**
 * Scaling curves (issue 18): how cost grows with the work, not one point.
 *
 * - catalog: opening a store and listing it, and one install transaction, at
 *   10, 100, 1,000 and 10,000 installed plugins;
 * - warm calls through PluginHost at 1, 8, 32 and 128 calls in flight (p50
 *   and p99 of each call's latency) to one sandboxed plugin;
 * - memory of the host process (heap after gc(), RSS) with 0 to 100 idle
 *   plugins started.
 *
 * Each curve is drawn into docs/ as SVG (bench/support/svgPlot.ts); the rows
 * report the far end of each curve against its near end, measured in the
 * same run, as design notes (the issue asks for the curves, not targets).
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CatalogStore } from '../src/catalog/CatalogStore.js';
import { putPlugin } from '../src/catalog/catalogContents.js';
import type { CatalogContents, CatalogVariant, LockedPlugin, PluginDescriptor, PluginStateRecord } from '../src/catalog/catalogTypes.js';
import { PluginHost } from '../src/index.js';
import { pluginRecords } from '../test/catalog/helpers/catalogFixtures.js';
import { median, percentile, result, timeMs, type BenchResult } from './harness.js';
import { withHelloProfile } from './support/helloProfile.js';
import { renderPlot } from './support/svgPlot.js';

const DOCS = fileURLToPath(new URL('../docs/', import.meta.url));
const CATALOG_SIZES = [10, 100, 1000, 10_000] as const;
const CATALOG_RUNS = 11;
const IN_FLIGHT = [1, 8, 32, 128] as const;
const CALLS_PER_LEVEL = 1024;
const IDLE_STEPS = [0, 25, 50, 100] as const;


/** A store of `count` plugins written in one transaction (built as one content, not `count` puts, which is quadratic). */
async function catalogTemplate(dir: string, count: number): Promise<void> {
  const store = (await CatalogStore.open({ profileDir: dir, profile: 'bench' }))._unsafeUnwrap();
  const variants: CatalogVariant[] = [];
  const descriptors: Record<string, PluginDescriptor> = {};
  const plugins: Record<string, LockedPlugin> = {};
  const states: Record<string, PluginStateRecord> = {};
  const owners: Record<string, CatalogContents['namespace_owners'][string]> = {};
  for (let i = 0; i < count; i++) {
    const records = pluginRecords(`pre-${i}`);
    const id = records.lock.plugin_id;
    variants.push(...records.variants);
    descriptors[id] = records.descriptor!;
    plugins[id] = records.lock;
    states[id] = records.state;
    owners[id] = { namespace_owner: records.lock.namespace_owner!, first_recorded_at: records.state.installed_at };
  }
  (await store.transaction(() => ({ variants, descriptors, plugins, states, namespace_owners: owners })))._unsafeUnwrap();
}

interface CatalogPoint {
  readonly size: number;
  readonly open: number[];
  readonly install: number[];
}

async function catalogCurves(): Promise<CatalogPoint[]> {
  const base = mkdtempSync(join(tmpdir(), 'bench-scaling-catalog-'));
  try {
    const points = CATALOG_SIZES.map((size) => ({ size, open: [] as number[], install: [] as number[], dir: join(base, `p${size}`) }));
    for (const p of points) await catalogTemplate(p.dir, p.size);
    const scratch = join(base, 'scratch');
    for (let run = 0; run < CATALOG_RUNS; run++) {
      for (let k = 0; k < points.length; k++) {
        const p = points[(run + k) % points.length]!;
        p.open.push(
          await timeMs(async () => {
            const store = (await CatalogStore.open({ profileDir: p.dir, profile: 'bench' }))._unsafeUnwrap();
            (await store.list())._unsafeUnwrap();
          }),
        );
        rmSync(scratch, { recursive: true, force: true });
        cpSync(p.dir, scratch, { recursive: true });
        const store = (await CatalogStore.open({ profileDir: scratch, profile: 'bench' }))._unsafeUnwrap();
        p.install.push(await timeMs(async () => (await store.transaction((c) => putPlugin(c, pluginRecords(`new-${run}`))))._unsafeUnwrap()));
      }
    }
    return points.map(({ size, open, install }) => ({ size, open, install }));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

interface CallPoint {
  readonly inFlight: number;
  readonly p50: number;
  readonly p99: number;
}

/** Latency of each call with `inFlight` calls kept outstanding, `CALLS_PER_LEVEL` calls per level. */
async function callCurves(host: PluginHost): Promise<CallPoint[]> {
  const call = async (): Promise<number> =>
    timeMs(async () => {
      const r = await host.call('plug.hello.hello', { name: 'bench' });
      if (r.isErr()) throw r.error;
    });
  for (let i = 0; i < 200; i++) await call();
  const out: CallPoint[] = [];
  for (const inFlight of IN_FLIGHT) {
    const latencies: number[] = [];
    let started = 0;
    const worker = async (): Promise<void> => {
      while (started < CALLS_PER_LEVEL) {
        started++;
        latencies.push(await call());
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    out.push({ inFlight, p50: median(latencies), p99: percentile(latencies, 99) });
  }
  return out;
}

interface MemoryPoint {
  readonly plugins: number;
  readonly heapMiB: number;
  readonly rssMiB: number;
}

async function memoryCurve(profileDir: string, helloPkg: string): Promise<MemoryPoint[]> {
  const last = IDLE_STEPS[IDLE_STEPS.length - 1]!;
  const installer = (await PluginHost.open({ profileDir, profileKind: 'dev' }))._unsafeUnwrap();
  const manifest = JSON.parse(await readFile(join(helloPkg, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  for (let i = 0; i < last; i++) {
    await writeFile(join(helloPkg, 'manifest.json'), JSON.stringify({ ...manifest, plugin_id: `idle-${i}`, namespace_owner: `io.example.idle-${i}` }));
    (await installer.install(helloPkg, { canary: false }))._unsafeUnwrap();
  }
  await installer.close();
  const gc = (globalThis as { gc?: () => void }).gc;
  const host = (await PluginHost.open({ profileDir, profileKind: 'dev', idleTimeoutMs: 0 }))._unsafeUnwrap();
  const out: MemoryPoint[] = [];
  let started = 0;
  try {
    for (const step of IDLE_STEPS) {
      for (; started < step; started++) {
        const r = await host.call(`plug.idle-${started}.hello`, { name: 'idle' });
        if (r.isErr()) throw r.error;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      gc?.();
      const usage = process.memoryUsage();
      out.push({ plugins: step, heapMiB: usage.heapUsed / 2 ** 20, rssMiB: usage.rss / 2 ** 20 });
    }
  } finally {
    await host.close();
  }
  return out;
}

function writePlots(catalog: CatalogPoint[], calls: CallPoint[], memory: MemoryPoint[]): void {
  writeFileSync(
    join(DOCS, 'scaling-catalog.svg'),
    renderPlot({
      title: 'Catalog cost by installed plugins (median ms)',
      xLabel: 'plugins installed',
      yLabel: 'ms',
      xLog: true,
      yLog: true,
      series: [
        { label: 'open + list (fresh store)', points: catalog.map((p) => [p.size, median(p.open)] as const) },
        { label: 'install transaction', points: catalog.map((p) => [p.size, median(p.install)] as const) },
      ],
    }),
  );
  writeFileSync(
    join(DOCS, 'scaling-warm-call.svg'),
    renderPlot({
      title: 'Warm call latency through PluginHost by calls in flight',
      xLabel: 'calls in flight',
      yLabel: 'ms per call',
      xLog: true,
      yLog: true,
      series: [
        { label: 'p50', points: calls.map((p) => [p.inFlight, p.p50] as const) },
        { label: 'p99', points: calls.map((p) => [p.inFlight, p.p99] as const) },
      ],
    }),
  );
  writeFileSync(
    join(DOCS, 'scaling-memory.svg'),
    renderPlot({
      title: 'Host process memory by idle plugins started',
      xLabel: 'idle plugins',
      yLabel: 'MiB',
      series: [
        { label: 'heap used (after gc)', points: memory.map((p) => [p.plugins, p.heapMiB] as const) },
        { label: 'resident set', points: memory.map((p) => [p.plugins, p.rssMiB] as const) },
      ],
    }),
  );
}

/** Design notes: the issue asks for the curves, not a bound; each row's bound is linear growth with the work. */
const design = { unit: 'ms', compare: 'ratio', better: 'lower', role: 'design' } as const;

/** Runs the scaling curves and writes their plots. */
export async function run(): Promise<BenchResult[]> {
  const { calls, memory } = await withHelloProfile('bench-scaling-host-', async (profileDir, _helloEntry, helloPkg) => {
    const host = (await PluginHost.open({ profileDir, profileKind: 'dev', plugins: { hello: { maxInFlight: 128 } } }))._unsafeUnwrap();
    let curves: CallPoint[];
    try {
      curves = await callCurves(host);
    } finally {
      await host.close();
    }
    return { calls: curves, memory: await memoryCurve(profileDir, helloPkg) };
  });
  // After the host curves, so that the resident set they report holds none of the large catalogs' pages.
  const catalog = await catalogCurves();
  writePlots(catalog, calls, memory);
  const [small, large] = [catalog[0]!, catalog[catalog.length - 1]!];
  const curve = (pick: (p: CatalogPoint) => number[]): string => catalog.map((p) => `${p.size}: ${median(pick(p)).toFixed(2)} ms`).join(', ');
  const [oneCall, manyCalls] = [calls[0]!, calls[calls.length - 1]!];
  const [noPlugins, allPlugins] = [memory[0]!, memory[memory.length - 1]!];
  const perPlugin = (f: (p: MemoryPoint) => number): string => ((f(allPlugins) - f(noPlugins)) / allPlugins.plugins).toFixed(3);
  return [
    result(
      {
        ...design,
        target: large.size / small.size,
        name: `open + list of a store with ${large.size.toLocaleString('en-US')} plugins`,
        baselineName: `the same with ${small.size} plugins`,
        note: `${CATALOG_RUNS} runs per size, sizes interleaved; curve ${curve((p) => p.open)}. Plot: [docs/scaling-catalog.svg](docs/scaling-catalog.svg).`,
      },
      large.open,
      small.open,
    ),
    result(
      {
        ...design,
        target: large.size / small.size,
        name: `install transaction with ${large.size.toLocaleString('en-US')} plugins installed`,
        baselineName: `the same with ${small.size} plugins`,
        note: `${CATALOG_RUNS} transactions per size, each into a fresh copy of the store opened before the clock starts; curve ${curve((p) => p.install)}. Plot: [docs/scaling-catalog.svg](docs/scaling-catalog.svg).`,
      },
      large.install,
      small.install,
    ),
    {
      ...design,
      target: manyCalls.inFlight / oneCall.inFlight,
      name: `warm call p99 through PluginHost with ${manyCalls.inFlight} calls in flight`,
      value: manyCalls.p99,
      baseline: oneCall.p99,
      baselineName: 'p99 with 1 call in flight',
      spread: [manyCalls.p50, manyCalls.p99],
      note: `${CALLS_PER_LEVEL} calls per level to one sandboxed hello plugin (maxInFlight 128), after 200 warm-up calls; spread shows p50–p99. p50/p99 by calls in flight: ${calls.map((p) => `${p.inFlight}: ${p.p50.toFixed(3)}/${p.p99.toFixed(3)} ms`).join(', ')}. Plot: [docs/scaling-warm-call.svg](docs/scaling-warm-call.svg).`,
    },
    {
      ...design,
      unit: 'MiB',
      compare: 'difference',
      target: 2 * allPlugins.plugins,
      name: `host heap with ${allPlugins.plugins} idle plugins (after gc)`,
      value: allPlugins.heapMiB,
      baseline: noPlugins.heapMiB,
      baselineName: 'the same host before any plugin started',
      spread: [allPlugins.heapMiB, allPlugins.heapMiB],
      note: `One host (idleTimeoutMs 0), plugins started one call each, measured after gc(): heap ${memory.map((p) => `${p.plugins}: ${p.heapMiB.toFixed(1)}`).join(', ')} MiB; RSS ${memory.map((p) => `${p.plugins}: ${p.rssMiB.toFixed(1)}`).join(', ')} MiB; per plugin +${perPlugin((p) => p.heapMiB)} MiB heap (the plugins' own processes are not counted). The resident set (measured before the catalog curves) includes the SDK, the sandbox's helpers and each plugin's pipes and session. Plot: [docs/scaling-memory.svg](docs/scaling-memory.svg).`,
    },
  ];
}
