/**
 * A busy plugin against its host's event loop: while a sandboxed plugin
 * spins four threads (more than this machine's cores), the host's
 * event-loop delay p99 (perf_hooks monitorEventLoopDelay) with the plugin's
 * tree under the default CPU weight, against the same plugin with no weight
 * (`cpuWeight: false`, its threads weighing as much as the host's), in
 * alternating rounds of the same run.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { unverifiedCommand } from '../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../src/sandbox/backends.js';
import { SandboxSpawner } from '../src/sandbox/SandboxSpawner.js';
import { DEFAULT_TREE_LIMITS } from '../src/sandbox/treeLimits.js';
import { median, pairedResult, roundRatioSpread, type BenchResult } from './harness.js';

const ROUNDS = 6;
const THREADS = 4;
const MEASURE_MS = 2_000;
const RESOLUTION_MS = 5;

// THREADS - 1 workers and the main thread spin for ever, after saying so.
const SPINNING = `
const { Worker } = require('node:worker_threads');
for (let i = 1; i < ${THREADS}; i++) new Worker('for (;;);', { eval: true });
console.log('spinning');
setImmediate(() => { for (;;); });`;

/**
 * The host's event-loop delay p99 in ms over {@link MEASURE_MS}, beyond the sampling interval: the histogram records
 * the time between its timer's runs, so an idle loop already reads {@link RESOLUTION_MS}, a floor that would hide how
 * much a busy plugin adds.
 */
async function loopDelayP99(): Promise<number> {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
  histogram.disable();
  return Math.max(0, histogram.percentile(99) / 1e6 - RESOLUTION_MS);
}

/** {@link loopDelayP99} while `spawner` runs the spinning plugin. */
async function delayBeside(spawner: SandboxSpawner, dir: string): Promise<number> {
  const p = (
    await spawner.spawn({
      executable: unverifiedCommand([process.execPath, '-e', SPINNING], dir, nodeRuntimePaths()),
      env: {},
      network: false,
      writeDir: join(dir, 'work'),
      hiddenPaths: [],
      pluginId: 'busy',
    })
  )._unsafeUnwrap();
  try {
    await new Promise((resolve) => p.stdout.once('data', resolve));
    return await loopDelayP99();
  } finally {
    await p.stop({ stdinGraceMs: 0, termGraceMs: 0 });
  }
}

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'cpu-weight-bench-'));
  mkdirSync(join(dir, 'work'));
  try {
    const weighed = (await SandboxSpawner.create({ backend: 'auto' }))._unsafeUnwrap();
    const unweighed = (await SandboxSpawner.create({ backend: 'auto', cpuWeight: false }))._unsafeUnwrap();
    const values: number[] = [];
    const baselines: number[] = [];
    const alone: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const pair = [
        async () => values.push(await delayBeside(weighed, dir)),
        async () => baselines.push(await delayBeside(unweighed, dir)),
        async () => alone.push(await loopDelayP99()),
      ];
      for (let k = 0; k < pair.length; k++) await pair[(i + k) % pair.length]!();
    }
    return [
      pairedResult(
        {
          name: `host event-loop delay p99 (beyond its ${RESOLUTION_MS} ms sampling interval) beside a plugin spinning ${THREADS} threads, its tree at CPU weight ${DEFAULT_TREE_LIMITS.cpuWeight}`,
          baselineName: 'the same plugin without a CPU weight (cpuWeight: false)',
          unit: 'ms',
          compare: 'ratio',
          target: 0.5,
          better: 'lower',
          note: `${ROUNDS} alternating rounds of ${MEASURE_MS} ms each (monitorEventLoopDelay, resolution ${RESOLUTION_MS} ms, whose interval is taken off each p99) on an otherwise idle host event loop (with no plugin running the same p99 is ${median(alone).toFixed(2)} ms, median of the rounds), backend ${weighed.backendName}; ${roundRatioSpread(values, baselines)}. Without a weight the plugin's ${THREADS} threads each weigh as much as the host's thread; with it the whole tree weighs a quarter of one (docs/security-model.md "Resource limits")`,
        },
        values,
        baselines,
      ),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
