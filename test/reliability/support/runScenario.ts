/**
 * Runs one fault scenario through the real PluginHost (real sandbox, real
 * processes) and measures what the issue asks for: the code of the faulty
 * call and how long it took to come back, a healthy plugin answering during
 * and after the fault, what the next call does, host memory, the time
 * `close()` takes, and whether any plugin process survived it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Result } from 'neverthrow';
import { PluginHost, type HostError, type CallResult } from '../../../src/index.js';
import type { NextCall, Scenario } from '../scenarios.js';
import { MemorySampler } from './memory.js';
import { killMarked, survivorsAfter } from './processScan.js';
import type { ScenarioRecord } from './results.js';
import { SkewClock } from './SkewClock.js';

/** Growth of host RSS over a scenario above which memory is not "bounded". */
export const RSS_GROWTH_LIMIT_MB = 200;
/** How long after `close()` a plugin process may still be seen being reaped. */
const REAP_WAIT_MS = 1_000;
/** Slack on top of a call's own timeout before the host counts as hung. */
const HANG_SLACK_MS = 30_000;
/** More than the first step of the backoff ladder (30 s). */
const PAST_BACKOFF_MS = 31_000;
/** Bytes of the floods: the issue's 1 GiB on stdout, 256 MiB on stderr (the ring keeps 64 KiB of either). */
const FLOOD_BYTES: Partial<Record<Scenario['fault'], number>> = { 'flood-stdout': 1024 ** 3, 'flood-stderr': 256 * 1024 ** 2 };

/** The packages a scenario installs. */
export interface ScenarioPackages {
  /** The fault plugin of the scenario's protocol, installed as `faulty`. */
  readonly faulty: string;
  /** A healthy ndjson-rpc plugin, installed as `healthy`. */
  readonly healthy: string;
}

type Outcome = { readonly kind: 'done'; readonly result: Result<CallResult, HostError>; readonly ms: number } | { readonly kind: 'hung'; readonly ms: number };

async function timed(call: PromiseLike<Result<CallResult, HostError>>, boundMs: number): Promise<Outcome> {
  const started = performance.now();
  let cancel: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => (cancel = setTimeout(() => resolve('hung'), boundMs)));
  const result = await Promise.race([call, hung]);
  clearTimeout(cancel);
  const ms = Math.round(performance.now() - started);
  return result === 'hung' ? { kind: 'hung', ms } : { kind: 'done', result, ms };
}

const codeOf = (o: Outcome): string => (o.kind === 'hung' ? 'HUNG' : o.result.isOk() ? 'ok' : o.result.error.code);

/** The facts that explain a failure: how the process ended, how much of a line the frame cap saw before reporting it. */
function detailNote(o: Outcome): string {
  if (o.kind !== 'done' || o.result.isOk()) return '';
  const details = o.result.error.details;
  const exit = details.exit as { description?: unknown } | null | undefined;
  const seen = details.bytes_seen;
  const notes = [
    ...(typeof exit?.description === 'string' ? [exit.description] : []),
    ...(typeof seen === 'number' ? [`reported after ${seen} bytes of the line`] : []),
  ];
  return notes.length === 0 ? '' : ` (${notes.join('; ')})`;
}

const NEXT_WORDS: Readonly<Record<NextCall, string>> = {
  ok: 'answered',
  'fails-again': 'fails again the same way',
  'quarantined-then-ok': 'VARIANT_QUARANTINED, then respawned after the backoff and answered',
  'quarantined-then-same': 'VARIANT_QUARANTINED, then respawned after the backoff and failed the same way',
};

/** The scenario's promised outcome in words. */
export const expectedText = (s: Scenario): string => `${s.code}; next call: ${NEXT_WORDS[s.next]}`;

/** Runs `s` and returns its record; never throws for a plugin misbehaving. */
export async function runScenario(s: Scenario, packages: ScenarioPackages): Promise<ScenarioRecord> {
  const marker = `${s.id.replace(/[^a-z0-9]+/g, '-')}-${randomBytes(6).toString('hex')}`;
  const profileDir = await mkdtemp(join(tmpdir(), 'reliability-'));
  const clock = new SkewClock();
  const problems: string[] = [];
  const flood = FLOOD_BYTES[s.fault];
  const env: Record<string, string> = {
    ...(process.env.PATH === undefined ? {} : { PATH: process.env.PATH }),
    FAULT_MARKER: marker,
    FAULT_DELAY_MS: String(s.timeoutMs + 1_500),
    ...(s.scope === 'process' ? { FAULT_MODE: s.fault } : {}),
    ...(flood === undefined ? {} : { FAULT_FLOOD_BYTES: String(flood) }),
  };
  const opened = await PluginHost.open({ profileDir, profileKind: 'dev', activation: 'immediate', clock, env, callTimeoutMs: s.timeoutMs });
  if (opened.isErr()) throw opened.error;
  const host = opened.value;
  let sampler: MemorySampler | undefined;
  try {
    for (const pkg of [packages.faulty, packages.healthy]) {
      const installed = await host.install(pkg, { canary: false });
      if (installed.isErr()) throw installed.error;
    }
    const bound = s.timeoutMs + HANG_SLACK_MS;
    const work = (): PromiseLike<Result<CallResult, HostError>> =>
      host.call('plug.faulty.work', s.scope === 'call' ? { fault: s.fault } : {}, { timeoutMs: s.timeoutMs });
    const echo = (id: string, message: string): PromiseLike<Result<CallResult, HostError>> => host.call(`plug.${id}.echo`, { message });

    sampler = new MemorySampler();
    const healthyDuring = timed(echo('healthy', 'during'), bound);
    const faulty = await timed(work(), bound);
    const observedCode = codeOf(faulty);
    if (observedCode !== s.code) problems.push(`the faulty call gave ${observedCode}, expected ${s.code}`);
    if ((await healthyDuring).kind !== 'done' || codeOf(await healthyDuring) !== 'ok') problems.push(`the healthy plugin gave ${codeOf(await healthyDuring)} during the fault`);

    let faultySpawns = 0;
    host.events.on('spawn', (e) => {
      if (e.plugin_id === 'faulty') faultySpawns += 1;
    });
    const next = await observeNext(s, observedCode, clock, () => timed(echo('faulty', 'next'), bound), () => faultySpawns, bound);
    if (next.problem !== undefined) problems.push(next.problem);
    const healthyAfter = await timed(echo('healthy', 'after'), bound);
    if (codeOf(healthyAfter) !== 'ok') problems.push(`the healthy plugin gave ${codeOf(healthyAfter)} after the fault`);

    const closeStarted = performance.now();
    const closed = await Promise.race([host.close().then(() => 'closed' as const), new Promise<'hung'>((r) => setTimeout(() => r('hung'), HANG_SLACK_MS).unref())]);
    const closeMs = Math.round(performance.now() - closeStarted);
    if (closed === 'hung') problems.push(`close() did not finish within ${HANG_SLACK_MS} ms`);
    const survivors = await survivorsAfter(marker, REAP_WAIT_MS);
    if (survivors.length > 0) problems.push(`${survivors.length} plugin process(es) survived close(): ${survivors.map((p) => `${p.pid} ${p.cmdline.slice(0, 80)}`).join('; ')}`);
    const memory = sampler.stop();
    const growth = Math.round((memory.peakRssMb - memory.baselineRssMb) * 10) / 10;
    if (growth > RSS_GROWTH_LIMIT_MB) problems.push(`host RSS grew by ${growth} MiB (limit ${RSS_GROWTH_LIMIT_MB})`);

    return {
      id: s.id,
      protocol: s.protocol,
      fault: s.fault,
      expected: expectedText(s),
      observed: `${observedCode}${detailNote(faulty)}; next call: ${next.words}`,
      passed: problems.length === 0,
      peak_rss_mb: memory.peakRssMb,
      rss_growth_mb: growth,
      detect_ms: faulty.ms,
      close_ms: closeMs,
      problems,
    };
  } finally {
    sampler?.stop();
    await host.close();
    killMarked(marker);
    await rm(profileDir, { recursive: true, force: true });
  }
}

/** A later call's outcome in the report's words, relative to the faulty call's observed code. */
function outcomeWords(code: string, faultyCode: string): string {
  if (code === 'ok') return 'answered';
  return code === faultyCode ? 'failed the same way' : `failed with ${code}`;
}

/**
 * Makes the next call(s) and describes what they did, in the words of
 * {@link expectedText} when the observation matches, so the report's
 * "observed" column is always what happened, never the expectation.
 */
async function observeNext(
  s: Scenario,
  faultyCode: string,
  clock: SkewClock,
  callNext: () => Promise<Outcome>,
  spawnCount: () => number,
  bound: number,
): Promise<{ readonly words: string; readonly problem?: string }> {
  const first = await callNext();
  const firstCode = codeOf(first);
  const expectCode = (code: string, got: string, when = ''): string | undefined => (got === code ? undefined : `the next call${when} gave ${got}, expected ${code}`);
  switch (s.next) {
    case 'ok':
    case 'fails-again': {
      const problem = expectCode(s.next === 'ok' ? 'ok' : s.code, firstCode);
      const words = firstCode === 'ok' ? 'answered' : firstCode === faultyCode ? 'fails again the same way' : `fails with ${firstCode}`;
      return problem === undefined ? { words } : { words, problem };
    }
    case 'quarantined-then-ok':
    case 'quarantined-then-same': {
      const refused = expectCode('VARIANT_QUARANTINED', firstCode, ' during the backoff');
      const spawnsBefore = spawnCount();
      clock.advance(PAST_BACKOFF_MS);
      const after = await Promise.race([callNext(), new Promise<Outcome>((r) => setTimeout(() => r({ kind: 'hung', ms: bound }), bound).unref())]);
      const afterCode = codeOf(after);
      const respawned = spawnCount() > spawnsBefore;
      const wanted = s.next === 'quarantined-then-ok' ? 'ok' : s.code;
      const problem = refused ?? expectCode(wanted, afterCode, ' after the backoff') ?? (respawned ? undefined : 'the plugin was not respawned after the backoff');
      const words = `${firstCode}, then ${respawned ? 'respawned' : 'not respawned'} after the backoff and ${outcomeWords(afterCode, faultyCode)}`;
      return problem === undefined ? { words } : { words, problem };
    }
  }
}
