/**
 * The load scenario: one host with 50 plugins installed and 10 of
 * them running, 10,000 mixed calls with random faults injected into four of
 * the running plugins. Every call must settle exactly once, in bounded time;
 * every call to a plugin that never gets a fault must be answered with its
 * own answer; a call to a faulted plugin may fail only with its own fault's
 * code or with what a fault does to the calls sharing its process (crashed
 * under them, or refused during the crash backoff), and each fault sent alone
 * ends with its own code. Host RSS stays bounded;
 * the process scan sees the running plugins before close() and none after.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isHostErrorCode, PluginHost } from '../../src/index.js';
import { FaultPackages, type FaultProtocol } from '../support/faultPackages.js';
import { MemorySampler } from './support/memory.js';
import { killMarked, processesWithMarker, survivorsAfter } from './support/processScan.js';
import { ResultsFile, type LoadRecord } from './support/results.js';
import { SCENARIOS } from './scenarios.js';

const INSTALLED: Readonly<Record<FaultProtocol, number>> = { 'mcp-plugin': 20, 'ndjson-rpc': 20, handshake: 10 };
const RUNNING: Readonly<Record<FaultProtocol, number>> = { 'mcp-plugin': 5, 'ndjson-rpc': 4, handshake: 1 };
/** The last this-many running plugins of a protocol take the faulted calls; the others never see a fault. */
const FAULTED_RUNNING: Readonly<Record<FaultProtocol, number>> = { 'mcp-plugin': 2, 'ndjson-rpc': 2, handshake: 0 };
const CALLS = 10_000;
/** One call in this many goes to the one-shot handshake plugin (a process launch each). */
const HANDSHAKE_EVERY = 100;
/** The share of calls to a faulted plugin that carry a fault. */
const FAULT_RATE = 0.07;
const CONCURRENCY = 32;
/** The timeout of a faulted call: short, so never-answer and late-answer (1.5 s) time out. */
const CALL_TIMEOUT_MS = 1_000;
/** The timeout of an unfaulted call: a loaded machine cannot turn a healthy answer into a timeout. */
const UNFAULTED_TIMEOUT_MS = 60_000;
/** What a call may take beyond its timeout: a cold start (sandbox + initialize) is not covered by the MCP request timeout. */
const DEADLINE_SLACK_MS = 30_000;
const RSS_GROWTH_LIMIT_MB = 300;
/** Longer than the 100 ms crash backoff used here, so a fault sent alone is never refused as quarantined. */
const SOLO_PAUSE_MS = 300;
const FAULTS = ['crash-mid-call', 'never-answer', 'late-answer', 'garbage-line', 'half-line-eof', 'oversize-line', 'wrong-id', 'result-and-error', 'neither'] as const;
/** The fault matrix's scenario of `fault` on `protocol`. */
function scenarioOf(protocol: FaultProtocol, fault: (typeof FAULTS)[number]): (typeof SCENARIOS)[number] {
  const scenario = SCENARIOS.find((s) => s.id === `${protocol}/${fault}`);
  if (scenario === undefined) throw new Error(`no scenario ${protocol}/${fault}`);
  return scenario;
}
const expectedCode = (protocol: FaultProtocol, fault: (typeof FAULTS)[number]): string => scenarioOf(protocol, fault).code;

/**
 * What the injected faults may do to the other calls of the same plugin: a
 * fault that ends the process (its next call is quarantined) fails every call
 * in flight on it with that fault's code, and calls that arrive during the
 * backoff are refused with VARIANT_QUARANTINED. A timeout is never collateral.
 */
function collateralCodes(protocol: FaultProtocol): ReadonlySet<string> {
  // Under this host's ndjson-rpc policies (stop-plugin, respawn) every fault but a timeout ends the process.
  const ends = (s: (typeof SCENARIOS)[number]): boolean => s.next.startsWith('quarantined') || (protocol === 'ndjson-rpc' && s.code !== 'PLUGIN_TIMEOUT' && s.code !== 'ok');
  const ending = FAULTS.map((f) => scenarioOf(protocol, f)).filter(ends);
  return new Set(['VARIANT_QUARANTINED', ...ending.map((s) => s.code)]);
}
const COLLATERAL_CODES: Readonly<Record<FaultProtocol, ReadonlySet<string>>> = {
  'mcp-plugin': collateralCodes('mcp-plugin'),
  'ndjson-rpc': collateralCodes('ndjson-rpc'),
  handshake: collateralCodes('handshake'),
};

const SHORT: Readonly<Record<FaultProtocol, string>> = { 'mcp-plugin': 'mcp', 'ndjson-rpc': 'ndj', handshake: 'hs' };
const idOf = (protocol: FaultProtocol, n: number): string => `load-${SHORT[protocol]}-${String(n).padStart(2, '0')}`;
const isFaulted = (protocol: FaultProtocol, n: number): boolean => n <= RUNNING[protocol] && n > RUNNING[protocol] - FAULTED_RUNNING[protocol];
const protocolOf = (pluginId: string): FaultProtocol => (Object.keys(SHORT) as FaultProtocol[]).find((p) => pluginId.startsWith(`load-${SHORT[p]}-`))!;

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
      // With 8 calls in flight a bad ndjson-rpc line cannot be tied to its call, so this host stops the
      // plugin for it (failing every call in flight) and respawns crashed ones on the ladder, instead of
      // the mcptest protocol's defaults (fail the oldest call, sticky crash), which assume serialized calls.
      ndjsonMalformed: 'stop-plugin',
      ndjsonCrash: 'respawn',
    })
  )._unsafeUnwrap();
  const problems: string[] = [];
  try {
    for (const protocol of ['mcp-plugin', 'ndjson-rpc', 'handshake'] as const) {
      for (let n = 1; n <= INSTALLED[protocol]; n++) {
        const pkg = await packages.package(protocol, { pluginId: idOf(protocol, n), faulty: isFaulted(protocol, n) });
        (await host.install(pkg, { canary: false }))._unsafeUnwrap();
      }
    }
    expect((await host.list())._unsafeUnwrap()).toHaveLength(50);

    const keepAlive = (['mcp-plugin', 'ndjson-rpc'] as const).flatMap((protocol) =>
      Array.from({ length: RUNNING[protocol] }, (_, i) => ({ id: idOf(protocol, i + 1), faulted: isFaulted(protocol, i + 1) })),
    );
    const plan = Array.from({ length: CALLS }, (_, i) => {
      const target = i % HANDSHAKE_EVERY === 0 ? { id: idOf('handshake', 1), faulted: false } : keepAlive[Math.floor(random() * keepAlive.length)]!;
      const fault = target.faulted && random() < FAULT_RATE ? FAULTS[Math.floor(random() * FAULTS.length)]! : undefined;
      return { plugin: target.id, faultedPlugin: target.faulted, fault, nonce: `${i}-${Math.floor(random() * 1e9)}` };
    });

    const sampler = new MemorySampler(50);
    const settled = new Array<number>(CALLS).fill(0);
    const codes: Record<string, number> = {};
    /** Failures of calls to plugins that never get a fault, by code. */
    const unfaultedPluginFailures: Record<string, number> = {};
    /** Failures on faulted plugins whose code is neither the call's own fault's nor a collateral one. */
    const wrongCodes: Record<string, number> = {};
    let unfaultedPluginCalls = 0;
    let answeredOk = 0;
    let overDeadline = 0;
    let misdelivered = 0;
    let next = 0;
    const started = performance.now();
    const worker = async (): Promise<void> => {
      while (next < CALLS) {
        const i = next++;
        const { plugin, faultedPlugin, fault, nonce } = plan[i]!;
        const timeoutMs = fault === undefined ? UNFAULTED_TIMEOUT_MS : CALL_TIMEOUT_MS;
        const t0 = performance.now();
        const result =
          fault === undefined
            ? await host.call(`plug.${plugin}.echo`, { message: nonce }, { timeoutMs })
            : await host.call(`plug.${plugin}.work`, { fault, nonce }, { timeoutMs });
        const ms = performance.now() - t0;
        settled[i]! += 1;
        if (!faultedPlugin) unfaultedPluginCalls += 1;
        if (ms > timeoutMs + DEADLINE_SLACK_MS) overDeadline += 1;
        if (result.isErr()) {
          const { code } = result.error;
          codes[code] = (codes[code] ?? 0) + 1;
          const own = fault === undefined ? undefined : expectedCode(protocolOf(plugin), fault);
          if (!faultedPlugin) unfaultedPluginFailures[code] = (unfaultedPluginFailures[code] ?? 0) + 1;
          else if (code !== own && !COLLATERAL_CODES[protocolOf(plugin)].has(code)) {
            const key = `${code} on ${fault === undefined ? 'an unfaulted call' : fault}`;
            wrongCodes[key] = (wrongCodes[key] ?? 0) + 1;
          }
          continue;
        }
        if (fault !== undefined && expectedCode(protocolOf(plugin), fault) !== 'ok') {
          const key = `an answer to ${fault}`;
          wrongCodes[key] = (wrongCodes[key] ?? 0) + 1;
        }
        answeredOk += 1;
        if (fault === undefined && !JSON.stringify(result.value.value).includes(nonce)) misdelivered += 1;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const wallMs = Math.round(performance.now() - started);

    // Under load a fault that ends the process often cuts a slower fault's call first (collateral), so whether each
    // fault's own code shows up in the mix depends on scheduling. Each fault is therefore also sent alone to a faulted
    // plugin, past its crash backoff, where only its own code may come back.
    const soloMismatches: string[] = [];
    for (const protocol of ['mcp-plugin', 'ndjson-rpc'] as const) {
      const plugin = idOf(protocol, RUNNING[protocol]);
      for (const fault of FAULTS) {
        await sleep(SOLO_PAUSE_MS);
        const result = await host.call(`plug.${plugin}.work`, { fault, nonce: `solo-${fault}` }, { timeoutMs: CALL_TIMEOUT_MS });
        const code = result.isErr() ? result.error.code : 'ok';
        if (code !== expectedCode(protocol, fault)) soloMismatches.push(`${protocol}/${fault} alone: ${code}, expected ${expectedCode(protocol, fault)}`);
      }
    }

    // Positive control of the orphan scan: the plugins that never crash are alive now, and the scan must see them.
    const unfaultedAlive = keepAlive.filter((p) => !p.faulted).length;
    const seenBeforeClose = processesWithMarker(marker).length;
    await host.close();
    const orphans = await survivorsAfter(marker, 1_000);
    const memory = sampler.stop();
    const growth = Math.round((memory.peakRssMb - memory.baselineRssMb) * 10) / 10;
    const lost = settled.filter((n) => n === 0).length;
    const duplicated = settled.filter((n) => n > 1).length + misdelivered;
    const unstable = Object.keys(codes).filter((c) => !isHostErrorCode(c));
    const list = (tally: Record<string, number>): string => Object.entries(tally).map(([k, n]) => `${k} ×${n}`).join(', ');

    if (lost > 0) problems.push(`${lost} call(s) never settled`);
    if (Object.keys(unfaultedPluginFailures).length > 0) {
      problems.push(`calls to plugins that never got a fault failed: ${list(unfaultedPluginFailures)}`);
    }
    if (Object.keys(wrongCodes).length > 0) problems.push(`calls to faulted plugins ended with codes no fault explains: ${list(wrongCodes)}`);
    problems.push(...soloMismatches);
    if (seenBeforeClose < unfaultedAlive) {
      problems.push(`the process scan saw ${seenBeforeClose} marked process(es) before close(), fewer than the ${unfaultedAlive} running unfaulted plugins`);
    }
    if (duplicated > 0) problems.push(`${duplicated} call(s) settled twice or received another call's answer`);
    if (overDeadline > 0) problems.push(`${overDeadline} call(s) took longer than their timeout plus ${DEADLINE_SLACK_MS} ms`);
    if (unstable.length > 0) problems.push(`unexpected codes: ${unstable.join(', ')}`);
    if (growth > RSS_GROWTH_LIMIT_MB) problems.push(`host RSS grew by ${growth} MiB (limit ${RSS_GROWTH_LIMIT_MB})`);
    if (orphans.length > 0) problems.push(`${orphans.length} plugin process(es) survived close()`);

    const record: LoadRecord = {
      installed: 50,
      running: 10,
      calls: CALLS,
      faulty_calls: plan.filter((p) => p.fault !== undefined).length,
      unfaulted_plugin_calls: unfaultedPluginCalls,
      unfaulted_plugin_failures: unfaultedPluginFailures,
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
