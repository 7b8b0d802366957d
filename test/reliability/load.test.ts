/**
 * The load scenario: one host with 50 plugins installed and 10 of
 * them running, 10,000 mixed calls with random faults injected. Every call
 * must settle exactly once, with its own answer or a stable error code, in
 * bounded time; host RSS stays bounded; nothing survives close().
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isHostErrorCode, PluginHost } from '../../src/index.js';
import { FaultPackages, type FaultProtocol } from './support/faultPackages.js';
import { MemorySampler } from './support/memory.js';
import { killMarked, survivorsAfter } from './support/processScan.js';
import { ResultsFile, type LoadRecord } from './support/results.js';

const INSTALLED: Readonly<Record<FaultProtocol, number>> = { 'mcp-plugin': 20, 'ndjson-rpc': 20, handshake: 10 };
const RUNNING: Readonly<Record<FaultProtocol, number>> = { 'mcp-plugin': 5, 'ndjson-rpc': 4, handshake: 1 };
const CALLS = 10_000;
/** One call in this many goes to the one-shot handshake plugin (a process launch each). */
const HANDSHAKE_EVERY = 100;
const FAULT_RATE = 0.03;
const CONCURRENCY = 32;
const CALL_TIMEOUT_MS = 1_000;
/** What a call may take beyond its timeout: a cold start (sandbox + initialize) is not covered by the MCP request timeout. */
const DEADLINE_SLACK_MS = 10_000;
const RSS_GROWTH_LIMIT_MB = 300;
const FAULTS = ['crash-mid-call', 'never-answer', 'late-answer', 'garbage-line', 'half-line-eof', 'oversize-line', 'wrong-id', 'result-and-error', 'neither'] as const;
/** The codes a call may end with; anything else is not a stable outcome of these faults. */
const ALLOWED_CODES = new Set([
  'PLUGIN_TIMEOUT',
  'PLUGIN_CRASHED',
  'PLUGIN_INVALID_JSON',
  'PLUGIN_MALFORMED_RESPONSE',
  'PLUGIN_FRAME_TOO_LARGE',
  'VARIANT_QUARANTINED',
]);

const SHORT: Readonly<Record<FaultProtocol, string>> = { 'mcp-plugin': 'mcp', 'ndjson-rpc': 'ndj', handshake: 'hs' };
const idOf = (protocol: FaultProtocol, n: number): string => `load-${SHORT[protocol]}-${String(n).padStart(2, '0')}`;

/** A small deterministic PRNG (mulberry32), so a failing mix can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const results = new ResultsFile('load');
let packages: FaultPackages;
let profileDir: string;

beforeAll(async () => {
  packages = await FaultPackages.build();
  profileDir = await mkdtemp(join(tmpdir(), 'reliability-load-'));
}, 120_000);
afterAll(async () => {
  await packages?.dispose();
  await rm(profileDir, { recursive: true, force: true });
});

it('answers 10,000 mixed calls with injected faults across 10 running plugins of 50 installed', { timeout: 240_000 }, async () => {
  const marker = `load-${randomBytes(6).toString('hex')}`;
  const seed = Number(process.env.LOAD_SEED ?? 20_260_101);
  const random = prng(seed);
  const host = (
    await PluginHost.open({
      profileDir,
      profileKind: 'dev',
      activation: 'immediate',
      env: { FAULT_MARKER: marker, FAULT_DELAY_MS: '1500' },
      callTimeoutMs: CALL_TIMEOUT_MS,
      maxInFlight: 8,
      // Short, long ladder: a crashed plugin is back within 100 ms and never reaches permanent quarantine here.
      backoffScheduleMs: Array.from({ length: 10_000 }, () => 100),
    })
  )._unsafeUnwrap();
  const problems: string[] = [];
  try {
    for (const protocol of ['mcp-plugin', 'ndjson-rpc', 'handshake'] as const) {
      for (let n = 1; n <= INSTALLED[protocol]; n++) {
        const pkg = await packages.package(protocol, { pluginId: idOf(protocol, n), faulty: true });
        (await host.install(pkg, { canary: false }))._unsafeUnwrap();
      }
    }
    expect((await host.list())._unsafeUnwrap()).toHaveLength(50);

    const keepAlive = [
      ...Array.from({ length: RUNNING['mcp-plugin'] }, (_, i) => idOf('mcp-plugin', i + 1)),
      ...Array.from({ length: RUNNING['ndjson-rpc'] }, (_, i) => idOf('ndjson-rpc', i + 1)),
    ];
    const plan = Array.from({ length: CALLS }, (_, i) => {
      const plugin = i % HANDSHAKE_EVERY === 0 ? idOf('handshake', 1) : keepAlive[Math.floor(random() * keepAlive.length)]!;
      const fault = random() < FAULT_RATE ? FAULTS[Math.floor(random() * FAULTS.length)]! : undefined;
      return { plugin, fault, nonce: `${i}-${Math.floor(random() * 1e9)}` };
    });

    const sampler = new MemorySampler(50);
    const settled = new Array<number>(CALLS).fill(0);
    const codes: Record<string, number> = {};
    let answeredOk = 0;
    let overDeadline = 0;
    let misdelivered = 0;
    let next = 0;
    const started = performance.now();
    const worker = async (): Promise<void> => {
      while (next < CALLS) {
        const i = next++;
        const { plugin, fault, nonce } = plan[i]!;
        const t0 = performance.now();
        const result =
          fault === undefined
            ? await host.call(`plug.${plugin}.echo`, { message: nonce })
            : await host.call(`plug.${plugin}.work`, { fault, nonce });
        const ms = performance.now() - t0;
        settled[i]! += 1;
        if (ms > CALL_TIMEOUT_MS + DEADLINE_SLACK_MS) overDeadline += 1;
        if (result.isErr()) {
          codes[result.error.code] = (codes[result.error.code] ?? 0) + 1;
          continue;
        }
        answeredOk += 1;
        if (fault === undefined && !JSON.stringify(result.value.value).includes(nonce)) misdelivered += 1;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const wallMs = Math.round(performance.now() - started);

    await host.close();
    const orphans = await survivorsAfter(marker, 1_000);
    const memory = sampler.stop();
    const growth = Math.round((memory.peakRssMb - memory.baselineRssMb) * 10) / 10;
    const lost = settled.filter((n) => n === 0).length;
    const duplicated = settled.filter((n) => n > 1).length + misdelivered;
    const unstable = Object.keys(codes).filter((c) => !isHostErrorCode(c) || !ALLOWED_CODES.has(c));

    if (lost > 0) problems.push(`${lost} call(s) never settled`);
    if (duplicated > 0) problems.push(`${duplicated} call(s) settled twice or received another call's answer`);
    if (overDeadline > 0) problems.push(`${overDeadline} call(s) took longer than ${CALL_TIMEOUT_MS + DEADLINE_SLACK_MS} ms`);
    if (unstable.length > 0) problems.push(`unexpected codes: ${unstable.join(', ')}`);
    if (growth > RSS_GROWTH_LIMIT_MB) problems.push(`host RSS grew by ${growth} MiB (limit ${RSS_GROWTH_LIMIT_MB})`);
    if (orphans.length > 0) problems.push(`${orphans.length} plugin process(es) survived close()`);

    const record: LoadRecord = {
      installed: 50,
      running: 10,
      calls: CALLS,
      faulty_calls: plan.filter((p) => p.fault !== undefined).length,
      answered_ok: answeredOk,
      stable_errors: codes,
      lost,
      duplicated,
      over_deadline: overDeadline,
      peak_rss_mb: memory.peakRssMb,
      rss_growth_mb: growth,
      orphans: orphans.length,
      wall_ms: wallMs,
      passed: problems.length === 0,
      problems,
    };
    results.recordLoad(record);
    expect(problems).toEqual([]);
  } finally {
    await host.close();
    killMarked(marker);
  }
});
