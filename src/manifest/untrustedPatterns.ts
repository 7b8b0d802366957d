/**
 * The regular-expression engine of every Ajv instance that compiles schemas
 * this project did not write: a plugin's output schema, its manifest's
 * request and response schemas, the input schemas it lists.
 *
 * Ajv's default engine is V8's backtracking RegExp, and both the pattern and
 * the string it is matched against can come from a plugin: `^(a+)+$` against
 * thirty `a`s and a `!` blocks the host's thread for seconds, and with it
 * every other plugin and the gateway. Here a pattern RE2 can express runs in
 * RE2 (re2js, linear in the input); one it cannot (lookaround,
 * backreferences, which published servers' schemas do use) runs in V8's
 * engine on a worker thread while the host's thread waits for it, bounded:
 * one validation spends at most `nativeBudgetMs` there, then the match is cut
 * (the worker is ended) and the validation fails with
 * {@link PatternBudgetExceeded}. The host's thread waits for those matches,
 * and with it every other plugin: so an owner whose matches took
 * `ownerBudgetMs` within the last `ownerWindowMs` gets its matches refused
 * unrun until enough of them are older than that (a manifest whose pattern
 * backtracks on every argument held the thread 100 ms at every call,
 * indefinitely). The owner of a request schema's matches is the plugin and
 * the caller whose arguments they are, so that one caller's arguments cannot
 * spend every other caller's share; of a response or canary schema's, the
 * plugin.
 */
import { RE2JS } from 're2js';
import { Worker } from 'node:worker_threads';
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types/index.js';
import settings from '../../etc/untrusted-patterns.json' with { type: 'json' };

/** Thrown out of a validation whose patterns that RE2 cannot run took longer than their budget; callers report it as the schema failure of their data. */
export class PatternBudgetExceeded extends Error {
  constructor(pattern: string, why: string) {
    super(`pattern ${JSON.stringify(pattern)} ${why}`);
    this.name = 'PatternBudgetExceeded';
  }
}

/** The shared word a waiting host thread and the worker exchange, by its states. */
const IDLE = 0;
const MATCHING = 1;
const MATCHED = 2;
const NOT_MATCHED = 3;

const WORKER_SOURCE = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const state = new Int32Array(workerData);
const compiled = new Map();
parentPort.on('message', ({ source, flags, input }) => {
  const key = flags + '/' + source;
  let pattern = compiled.get(key);
  Atomics.store(state, 0, ${MATCHING});
  Atomics.notify(state, 0);
  if (pattern === undefined) {
    if (compiled.size >= ${settings.maxCachedPatterns}) compiled.clear();
    pattern = new RegExp(source, flags);
    compiled.set(key, pattern);
  }
  Atomics.store(state, 0, pattern.test(input) ? ${MATCHED} : ${NOT_MATCHED});
  Atomics.notify(state, 0);
});
`;

/** The worker that runs V8 matches, started on first need and ended when a match overruns. */
interface NativeMatcher {
  readonly worker: Worker;
  readonly state: Int32Array;
}

let matcher: NativeMatcher | undefined;

/** Milliseconds of native matching left to the validation in progress; `undefined` outside {@link withPatternBudget}. */
let budgetLeftMs: number | undefined;

/** Native matches of one owner that ended less than `ownerWindowMs` ago, the oldest first. */
interface OwnerSpending {
  readonly entries: SpendingEntry[];
  /** The sum of the entries' `spentMs`. */
  totalMs: number;
}

/**
 * Matches that ended within `ownerEntryMs` of `firstEndedAt`, dated by the
 * last of them: counted a little longer than each was, never shorter, and an
 * owner holds at most one entry per `ownerEntryMs` of its window.
 */
interface SpendingEntry {
  readonly firstEndedAt: number;
  endedAt: number;
  spentMs: number;
}

/** By plugin id, then by caller (`undefined`: the plugin's own schemas, or calls naming no caller). */
const spendingByPlugin = new Map<string, Map<string | undefined, OwnerSpending>>();

/** How many owners {@link spendingByPlugin} holds, and how many it may before owners idle for a window are dropped. */
let ownersHeld = 0;
let sweepAbove = settings.ownerSweepFloor;

/** The plugin, and the caller when it is a request's check, whose validation is in progress; `undefined` when none was named. */
let currentPlugin: string | undefined;
let currentCaller: string | undefined;

/**
 * Runs one validation with a fresh native-matching budget, so that many
 * strings under one lookahead pattern cannot add up to a long block; its
 * native matching also counts against the budget per window of `plugin` (a
 * plugin id) and `caller` (the caller whose arguments are checked), when a
 * plugin is named.
 */
export function withPatternBudget<T>(validate: () => T, plugin?: string, caller?: string): T {
  const outer = budgetLeftMs;
  const outerPlugin = currentPlugin;
  const outerCaller = currentCaller;
  budgetLeftMs = settings.nativeBudgetMs;
  currentPlugin = plugin;
  currentCaller = caller;
  try {
    return validate();
  } finally {
    budgetLeftMs = outer;
    currentPlugin = outerPlugin;
    currentCaller = outerCaller;
  }
}

/** The spending of `plugin` for `caller` in the window that ends `now`, without the entries that left it. */
function ownerSpending(plugin: string, caller: string | undefined, now: number): OwnerSpending {
  const held = spendingByPlugin.get(plugin)?.get(caller);
  if (held !== undefined) {
    const { entries } = held;
    while (entries.length > 0 && now - entries[0]!.endedAt >= settings.ownerWindowMs) held.totalMs -= entries.shift()!.spentMs;
    return held;
  }
  if (ownersHeld >= sweepAbove) dropIdleOwners(now);
  const spending: OwnerSpending = { entries: [], totalMs: 0 };
  let byCaller = spendingByPlugin.get(plugin);
  if (byCaller === undefined) {
    byCaller = new Map();
    spendingByPlugin.set(plugin, byCaller);
  }
  byCaller.set(caller, spending);
  ownersHeld++;
  return spending;
}

/** Drops the owners with nothing in their window: callers come and go, and each would otherwise stay for the process's life. */
function dropIdleOwners(now: number): void {
  for (const [plugin, byCaller] of spendingByPlugin) {
    for (const [caller, spending] of byCaller) {
      const last = spending.entries.at(-1);
      if (last !== undefined && now - last.endedAt < settings.ownerWindowMs) continue;
      byCaller.delete(caller);
      ownersHeld--;
    }
    if (byCaller.size === 0) spendingByPlugin.delete(plugin);
  }
  sweepAbove = Math.max(settings.ownerSweepFloor, ownersHeld * 2);
}

/** Adds a match that ended at `now` to `spending`. */
function charge(spending: OwnerSpending, now: number, spentMs: number): void {
  spending.totalMs += spentMs;
  const last = spending.entries.at(-1);
  if (last !== undefined && now - last.firstEndedAt < settings.ownerEntryMs) {
    last.endedAt = now;
    last.spentMs += spentMs;
  } else spending.entries.push({ firstEndedAt: now, endedAt: now, spentMs });
}

/** Whose budget a refusal names. */
function ownerLabel(plugin: string, caller: string | undefined): string {
  return caller === undefined ? `plugin '${plugin}'` : `caller '${caller}' of plugin '${plugin}'`;
}

function nativeMatcher(): NativeMatcher {
  if (matcher === undefined) {
    const state = new Int32Array(new SharedArrayBuffer(4));
    // No loaders or flags of the host: the worker needs RegExp and nothing else.
    const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: state.buffer });
    worker.unref();
    worker.on('error', () => {
      if (matcher?.worker === worker) matcher = undefined;
    });
    matcher = { worker, state };
  }
  return matcher;
}

/** Matches in V8's engine on the worker, the host's thread waiting at most the budget left. */
function nativeTest(source: string, flags: string, input: string): boolean {
  const spending = currentPlugin === undefined ? undefined : ownerSpending(currentPlugin, currentCaller, performance.now());
  if (spending !== undefined && spending.totalMs >= settings.ownerBudgetMs) {
    const owner = ownerLabel(currentPlugin!, currentCaller);
    throw new PatternBudgetExceeded(source, `was not run: ${owner} spent its ${settings.ownerBudgetMs} ms of backtracking matches in the last ${settings.ownerWindowMs / 1000} s`);
  }
  const validationLeft = budgetLeftMs ?? settings.nativeBudgetMs;
  if (validationLeft <= 0) throw new PatternBudgetExceeded(source, `was not run: this validation spent its ${settings.nativeBudgetMs} ms of backtracking matches`);
  const left = spending === undefined ? validationLeft : Math.min(validationLeft, settings.ownerBudgetMs - spending.totalMs);
  const { worker, state } = nativeMatcher();
  Atomics.store(state, 0, IDLE);
  worker.postMessage({ source, flags, input });
  // A worker still starting is not the pattern's time: its start has a bound of its own.
  if (Atomics.wait(state, 0, IDLE, settings.workerStartMs) === 'timed-out') {
    cut(worker);
    throw new PatternBudgetExceeded(source, `was not run: the matching thread did not answer in ${settings.workerStartMs} ms`);
  }
  const started = performance.now();
  Atomics.wait(state, 0, MATCHING, left);
  const outcome = Atomics.load(state, 0);
  // A wait is charged at most its bound: the host's thread resuming late under load is not the pattern's time.
  const ended = performance.now();
  const spentMs = Math.min(ended - started, left);
  if (budgetLeftMs !== undefined) budgetLeftMs -= spentMs;
  if (spending !== undefined) charge(spending, ended, spentMs);
  if (outcome === MATCHING) {
    cut(worker);
    throw new PatternBudgetExceeded(source, `was cut after ${Math.round(left)} ms of backtracking (a match RE2 cannot run, bounded to ${settings.nativeBudgetMs} ms per validation)`);
  }
  return outcome === MATCHED;
}

function cut(worker: Worker): void {
  if (matcher?.worker === worker) matcher = undefined;
  void worker.terminate();
}

/**
 * The pattern rewritten for RE2 with JavaScript's meaning, or `undefined`
 * when RE2 would read it differently in a way not rewritten here: `.` and
 * `\s` are narrower in RE2, so they become JavaScript's classes; `\S` inside a
 * class and an empty class (`[]`, `[^]`) have no such rewrite.
 */
function re2Source(source: string): string | undefined {
  const translated = RE2JS.translateRegExp(source);
  let out = '';
  let inClass = false;
  for (let i = 0; i < translated.length; i++) {
    const ch = translated.charAt(i);
    if (ch === '\\') {
      const next = translated.charAt(i + 1);
      i++;
      if (next === 's') out += inClass ? settings.jsWhitespace : `[${settings.jsWhitespace}]`;
      else if (next === 'S') {
        if (inClass) return undefined;
        out += `[^${settings.jsWhitespace}]`;
      } else out += ch + next;
    } else if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
    } else if (ch === '[') {
      const negated = translated.charAt(i + 1) === '^';
      if (translated.charAt(i + (negated ? 2 : 1)) === ']') return undefined;
      inClass = true;
      out += negated ? '[^' : '[';
      if (negated) i++;
    } else if (ch === '.') out += `[^${settings.jsLineTerminators}]`;
    else out += ch;
  }
  return out;
}

/**
 * The pattern as RE2 runs it with JavaScript's meaning, or `undefined` when
 * it runs in V8's engine instead: the worker validating large answers
 * (answerValidation.ts) runs the same rule from this translation.
 */
export function linearPatternSource(source: string): string | undefined {
  return re2Source(source);
}

function linearPattern(source: string): RE2JS | undefined {
  const rewritten = re2Source(source);
  if (rewritten === undefined) return undefined;
  try {
    return RE2JS.compile(rewritten);
  } catch {
    return undefined;
  }
}

/**
 * Ajv's `code.regExp` for schemas this project did not write. The pattern is
 * first compiled by V8 (not run), so that a pattern JavaScript refuses is
 * refused as before.
 */
export const untrustedPatternEngine: RegExpEngine = Object.assign((source: string, flags: string): RegExpLike => new BoundedPattern(source, flags), {
  code: 'untrustedPatternEngine',
});

/** One compiled pattern; its text is Ajv's key for it (Ajv shares one compiled pattern per distinct text). */
class BoundedPattern implements RegExpLike {
  readonly #source: string;
  readonly #flags: string;
  readonly #label: string;
  readonly #linear: RE2JS | undefined;

  constructor(source: string, flags: string) {
    this.#label = String(new RegExp(source, flags));
    this.#source = source;
    this.#flags = flags;
    this.#linear = linearPattern(source);
    // Started at compile, so that the first match does not wait on the host's thread for a worker to boot.
    if (this.#linear === undefined) nativeMatcher();
  }

  test(input: string): boolean {
    return this.#linear === undefined ? nativeTest(this.#source, this.#flags, input) : this.#linear.test(input);
  }

  toString(): string {
    return this.#label;
  }
}
