/**
 * Validation of a plugin's large answers against a schema on worker threads,
 * with a deadline, so that the host's thread, which every plugin and the
 * gateway share, never runs one.
 *
 * The schema bounds (schemaLimits.ts, schemaExpansion.ts) keep one schema's
 * compile and its walk of one value in check, but what a validation costs is
 * the schema's expanded size times the answer's elements: an output schema
 * within every bound (a `$ref` DAG of 8192 expanded subschemas under
 * `items`) against a 1 MiB answer of `{}` elements held the host's thread
 * 5.7 to 6.7 s on the 2-core machine under load (bench/answerValidation.bench.ts
 * measures it), and every other plugin's calls stalled meanwhile. An answer
 * of at most `offThreadValidationBytes` (most answers) is still checked on
 * the host's thread as before, with no worker involved: its cost is bounded
 * by that size. A larger one is copied once (the structured clone of
 * `postMessage`) to one of at most `offThreadValidationWorkers` workers,
 * started on first need and ended after `offThreadValidationIdleMs` idle.
 * A validation that runs longer than `offThreadValidationTimeoutMs` has its
 * worker terminated and is reported as `timeout`, never as passed; the
 * caller fails the call. Waiting for a worker does not count against the
 * deadline, and waiting answers take turns by owner (a plugin's process or
 * id), so one plugin's flood of large answers delays another plugin's large
 * answers by at most one validation per worker, never fails them.
 *
 * A validation belongs to the call that asked for it: when one of its
 * `signals` aborts (the caller's signal, the host or connection closing), the
 * wait ends at once with `cancelled` and the worker running it is terminated
 * rather than left to finish a verdict nobody reads. Terminating is the
 * bounded choice: a worker in a backtracking pattern cannot be interrupted
 * otherwise, and one left running would stay busy (and keep the process
 * alive) up to the deadline; the next large answer starts a new worker. Idle
 * workers and their idle timers are unref'd, so an idle pool never keeps
 * the process alive.
 *
 * The worker runs the same Ajv settings as the thread's path, with the same
 * pattern rule: a pattern RE2 can express runs in RE2, translated on the
 * host's thread by untrustedPatterns.ts (so both paths read a pattern
 * alike); one it cannot runs in V8's engine on the worker itself, bounded by
 * the deadline instead of the per-validation budget of the thread's path.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import { LINEAR_KEYWORDS_SOURCE } from './linearKeywords.js';
import { linearPatternSource } from './untrustedPatterns.js';

/** Answers up to this estimate of their JSON bytes are validated on the host's thread (etc/plugin-answers.json). */
export const OFF_THREAD_VALIDATION_BYTES: number = pluginAnswerLimits.offThreadValidationBytes;
/** How long one validation may run on a worker before the worker is ended and the answer refused (etc/plugin-answers.json). */
export const OFF_THREAD_VALIDATION_TIMEOUT_MS: number = pluginAnswerLimits.offThreadValidationTimeoutMs;
const MAX_WORKERS = pluginAnswerLimits.offThreadValidationWorkers;
const IDLE_MS = pluginAnswerLimits.offThreadValidationIdleMs;
const HEAP_MB = pluginAnswerLimits.offThreadValidationHeapMb;
/** Schema errors put into an error text: an invalid 1 MiB answer has one per element, and the text crosses back by copy. */
const MAX_ERRORS_IN_TEXT = 100;
/** Compiled schemas a worker keeps; past it the worker starts over with new Ajv instances (Ajv keeps every schema it compiled). */
const WORKER_SCHEMAS = 64;

/**
 * Which Ajv the schema is read with: `output`, an MCP tool's output schema
 * with the settings of outputSchemaValidators.ts (the SDK client's, draft-07,
 * but the first error only, as text); `response`, a manifest's response schema
 * with those of callSchemas.ts (draft 2020-12, the first error's pointer).
 */
export type AnswerSchemaDialect = 'output' | 'response';

/** One validation asked of a worker. */
export interface OffThreadValidation {
  readonly dialect: AnswerSchemaDialect;
  /** The schema's JSON text (the worker's cache key; it parses it at its first use). */
  readonly schemaText: string;
  readonly value: unknown;
  /** Whose answers these are: waiting validations take turns by owner. */
  readonly owner: unknown;
  /** Any of these aborting ends the validation as `cancelled` and terminates its worker (the call's and its host's). */
  readonly signals?: readonly (AbortSignal | undefined)[];
}

/**
 * What a worker found: `valid`; `invalid` with the error text (the first
 * error's text for `output`, the first with its pointer for `response`); `timeout`, the
 * deadline passed and the worker was ended; `failed`, the worker could not
 * run it (it did not start, ran out of its heap, or the schema did not
 * compile there); `cancelled`, one of its signals aborted first (its worker,
 * if one ran it, was terminated): the caller reports its own abort or close.
 */
export type OffThreadVerdict =
  | { readonly kind: 'valid'; readonly durationMs: number }
  | { readonly kind: 'invalid'; readonly message: string; readonly pointer: string; readonly durationMs: number }
  | { readonly kind: 'timeout'; readonly durationMs: number }
  | { readonly kind: 'failed'; readonly reason: string; readonly durationMs: number }
  | { readonly kind: 'cancelled'; readonly durationMs: number };

/** The pool's state, for monitoring and tests. */
export interface OffThreadValidationState {
  /** Workers alive (busy or idle). */
  readonly workers: number;
  readonly busy: number;
  /** Validations waiting for a worker. */
  readonly waiting: number;
  /** Workers ended at a deadline so far. */
  readonly timedOut: number;
  /** Workers terminated because their validation was cancelled so far. */
  readonly cancelled: number;
}

/**
 * Whether `value`'s JSON text would be longer than `limit` bytes, estimated
 * without writing it (string lengths in UTF-16 units, 8 per number); walks at
 * most about `limit` / 2 values, so a small answer costs a few microseconds
 * and a large one no more than a small one.
 */
export function answerLargerThan(value: unknown, limit: number): boolean {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') bytes += item.length + 2;
    else if (typeof item === 'number') bytes += 8;
    else if (Array.isArray(item)) {
      // A byte per element (its comma) before any is pushed: a million-element array is decided here, not walked.
      bytes += 2 + item.length;
      if (bytes > limit) return true;
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === 'object') {
      // Object.keys, not for-in: for-in over a parsed object of 200,000 members took 200 ms, the keys array a few.
      const keys = Object.keys(item);
      bytes += 2 + keys.length * 4;
      if (bytes > limit) return true;
      for (const key of keys) {
        bytes += key.length;
        stack.push((item as Record<string, unknown>)[key]);
      }
    } else bytes += 5;
    // The stack holds at most what was counted, so the walk stops within about `limit` values.
    if (bytes > limit) return true;
  }
  return false;
}

/**
 * The RE2 form of each pattern `schemaText` names (`pattern` strings and
 * `patternProperties` keys), or null for one RE2 cannot run: the worker
 * cannot load untrustedPatterns.ts, so the translation is made here.
 */
function patternsOf(schemaText: string): Record<string, string | null> {
  const patterns: Record<string, string | null> = {};
  const add = (source: string): void => {
    if (!Object.hasOwn(patterns, source)) patterns[source] = linearPatternSource(source) ?? null;
  };
  const stack: unknown[] = [JSON.parse(schemaText)];
  while (stack.length > 0) {
    const item = stack.pop();
    if (Array.isArray(item)) stack.push(...item);
    else if (item !== null && typeof item === 'object') {
      const record = item as Record<string, unknown>;
      if (typeof record.pattern === 'string') add(record.pattern);
      const byPattern = record.patternProperties;
      if (byPattern !== null && typeof byPattern === 'object' && !Array.isArray(byPattern)) for (const key of Object.keys(byPattern)) add(key);
      stack.push(...Object.values(record));
    }
  }
  return patterns;
}

/** The translations of the schemas asked for lately, by schema text (the same schema answers many calls). */
const patternCache = new Map<string, Record<string, string | null>>();

function cachedPatternsOf(schemaText: string): Record<string, string | null> {
  let patterns = patternCache.get(schemaText);
  if (patterns === undefined) {
    if (patternCache.size >= WORKER_SCHEMAS) patternCache.delete(patternCache.keys().next().value!);
    patterns = patternsOf(schemaText);
    patternCache.set(schemaText, patterns);
  }
  return patterns;
}

// The worker is eval'd CommonJS that loads Ajv, ajv-formats and re2js by the paths the host's own module resolves, so
// it runs the same copies from this repository's sources (tests) and from the built package alike.
const WORKER_SOURCE = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const pick = (module, name) => module[name] ?? module.default ?? module;
const Ajv = pick(require(workerData.ajv), 'Ajv');
const Ajv2020 = pick(require(workerData.ajv2020), 'Ajv2020');
const formats = pick(require(workerData.formats), 'default');
const { RE2JS } = require(workerData.re2js);
const equal = pick(require(workerData.equal), 'default');
const { fullFormats } = require(workerData.formatList);
const addLinearKeywords = new Function('ajv', 'equal', 'urlRegex', workerData.linearKeywords);
let linear = {};
const engine = Object.assign((source, flags) => {
  const label = String(new RegExp(source, flags));
  let re2;
  if (typeof linear[source] === 'string') { try { re2 = RE2JS.compile(linear[source]); } catch {} }
  const native = re2 === undefined ? new RegExp(source, flags) : undefined;
  return { test: (input) => (re2 !== undefined ? re2.test(input) : native.test(input)), toString: () => label };
}, { code: 'workerPatternEngine' });
const newAjv = (dialect) => {
  const ajv = dialect === 'output'
    ? new Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: false, code: { regExp: engine } })
    : new Ajv2020({ strict: false, addUsedSchema: false, code: { regExp: engine } });
  formats(ajv);
  addLinearKeywords(ajv, equal, fullFormats.url);
  return ajv;
};
let shared = {};
let compiled = new Map();
function validatorOf(dialect, text) {
  const key = dialect + '\\n' + text;
  let entry = compiled.get(key);
  if (entry === undefined) {
    if (compiled.size >= ${WORKER_SCHEMAS}) { compiled = new Map(); shared = {}; }
    const ajv = dialect === 'output' && text.includes('"$id"') ? newAjv(dialect) : (shared[dialect] ??= newAjv(dialect));
    entry = { ajv, validate: ajv.compile(JSON.parse(text)) };
    compiled.set(key, entry);
  }
  return entry;
}
parentPort.on('message', ({ dialect, schemaText, value, patterns }) => {
  linear = patterns;
  let entry;
  try { entry = validatorOf(dialect, schemaText); } catch (error) {
    parentPort.postMessage({ kind: 'failed', reason: 'the schema did not compile on the validation worker: ' + (error && error.message || String(error)) });
    return;
  }
  if (entry.validate(value)) { parentPort.postMessage({ kind: 'valid' }); return; }
  const errors = entry.validate.errors ?? [];
  if (dialect === 'output') {
    const more = errors.length > ${MAX_ERRORS_IN_TEXT} ? ' (and ' + (errors.length - ${MAX_ERRORS_IN_TEXT}) + ' more)' : '';
    parentPort.postMessage({ kind: 'invalid', pointer: errors[0]?.instancePath ?? '', message: entry.ajv.errorsText(errors.slice(0, ${MAX_ERRORS_IN_TEXT})) + more });
  } else {
    parentPort.postMessage({ kind: 'invalid', pointer: errors[0]?.instancePath ?? '', message: errors[0]?.message ?? 'does not match' });
  }
});
`;

/** The module paths the worker loads, resolved once from this module. */
let modulePaths: Record<string, string> | undefined;

function workerModules(): Record<string, string> {
  // linearKeywords: the thread's uniqueItems, enum and url checks, whose source the worker runs as it is.
  if (modulePaths === undefined) {
    const require = createRequire(import.meta.url);
    modulePaths = { ajv: require.resolve('ajv'), ajv2020: require.resolve('ajv/dist/2020.js'), formats: require.resolve('ajv-formats'), re2js: require.resolve('re2js'), equal: require.resolve('ajv/dist/runtime/equal'), formatList: require.resolve('ajv-formats/dist/formats'), linearKeywords: LINEAR_KEYWORDS_SOURCE };
  }
  return modulePaths;
}

interface Job {
  readonly request: OffThreadValidation;
  readonly resolve: (verdict: OffThreadVerdict) => void;
  started: number;
  timer: NodeJS.Timeout | undefined;
  /** The worker running it, once one does. */
  slot: PoolWorker | undefined;
  done: boolean;
  /** Removes its abort listeners. */
  detach: (() => void) | undefined;
}

interface PoolWorker {
  readonly worker: Worker;
  job: Job | undefined;
  idleTimer: NodeJS.Timeout | undefined;
}

class ValidationPool {
  readonly #workers = new Set<PoolWorker>();
  readonly #idle: PoolWorker[] = [];
  /** Waiting jobs by owner; an owner is moved to the end after each of its jobs starts (Map order is the turn order). */
  readonly #waiting = new Map<unknown, Job[]>();
  #waitingCount = 0;
  #timedOut = 0;
  #cancelled = 0;

  state(): OffThreadValidationState {
    return { workers: this.#workers.size, busy: this.#workers.size - this.#idle.length, waiting: this.#waitingCount, timedOut: this.#timedOut, cancelled: this.#cancelled };
  }

  validate(request: OffThreadValidation): Promise<OffThreadVerdict> {
    return new Promise((resolve) => {
      const signals = (request.signals ?? []).filter((signal): signal is AbortSignal => signal !== undefined);
      if (signals.some((signal) => signal.aborted)) {
        resolve({ kind: 'cancelled', durationMs: 0 });
        return;
      }
      const job: Job = { request, resolve, started: 0, timer: undefined, slot: undefined, done: false, detach: undefined };
      if (signals.length > 0) {
        const onAbort = (): void => this.#cancel(job);
        for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
        job.detach = () => {
          for (const signal of signals) signal.removeEventListener('abort', onAbort);
        };
      }
      const queue = this.#waiting.get(request.owner);
      if (queue === undefined) this.#waiting.set(request.owner, [job]);
      else queue.push(job);
      this.#waitingCount++;
      this.#pump();
    });
  }

  /** Starts waiting jobs while a worker is idle or another may be started. */
  #pump(): void {
    while (this.#waitingCount > 0) {
      const slot = this.#idle.pop() ?? (this.#workers.size < MAX_WORKERS ? this.#spawn() : undefined);
      if (slot === undefined) return;
      this.#run(slot, this.#nextJob());
    }
  }

  #nextJob(): Job {
    const [owner, queue] = this.#waiting.entries().next().value!;
    const job = queue.shift()!;
    this.#waiting.delete(owner);
    if (queue.length > 0) this.#waiting.set(owner, queue);
    this.#waitingCount--;
    return job;
  }

  #spawn(): PoolWorker | undefined {
    let worker: Worker;
    try {
      // No loaders or flags of the host (a test runner's, an application's --inspect): the worker needs Ajv and nothing else.
      worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: workerModules(), resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
    } catch {
      return undefined;
    }
    const slot: PoolWorker = { worker, job: undefined, idleTimer: undefined };
    worker.on('message', (message: WorkerAnswer) => this.#answered(slot, message));
    worker.on('error', (error) => this.#lost(slot, `the validation worker failed: ${error.message}`));
    worker.on('exit', (code) => this.#lost(slot, `the validation worker exited with code ${code}`));
    this.#workers.add(slot);
    return slot;
  }

  #run(slot: PoolWorker, job: Job): void {
    if (slot.idleTimer !== undefined) clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    slot.job = job;
    job.slot = slot;
    // Held while it works, so a host with nothing else to do still hears its verdict; let go when idle.
    slot.worker.ref();
    job.started = performance.now();
    job.timer = setTimeout(() => this.#timeout(slot, job), OFF_THREAD_VALIDATION_TIMEOUT_MS);
    const { dialect, schemaText, value } = job.request;
    try {
      slot.worker.postMessage({ dialect, schemaText, value, patterns: cachedPatternsOf(schemaText) });
    } catch (error) {
      // A value the structured clone refuses cannot come from JSON.parse; said as a failure, never as passed.
      this.#finish(slot, { kind: 'failed', reason: `the answer could not be handed to the validation worker: ${String(error)}`, durationMs: 0 });
    }
  }

  #answered(slot: PoolWorker, answer: WorkerAnswer): void {
    const job = slot.job;
    if (job === undefined) return;
    const durationMs = performance.now() - job.started;
    this.#finish(slot, answer.kind === 'invalid' ? { ...answer, durationMs } : answer.kind === 'failed' ? { ...answer, durationMs } : { kind: 'valid', durationMs });
  }

  #finish(slot: PoolWorker, verdict: OffThreadVerdict): void {
    const job = slot.job!;
    clearTimeout(job.timer);
    slot.job = undefined;
    slot.worker.unref();
    this.#idle.push(slot);
    slot.idleTimer = setTimeout(() => this.#retire(slot), IDLE_MS);
    slot.idleTimer.unref();
    settle(job, verdict);
    this.#pump();
  }

  /** A validation whose caller stopped waiting: out of the queue, or its worker terminated (see the module's note). */
  #cancel(job: Job): void {
    if (job.done) return;
    const slot = job.slot;
    if (slot === undefined) {
      const queue = this.#waiting.get(job.request.owner);
      const at = queue?.indexOf(job) ?? -1;
      if (queue !== undefined && at >= 0) {
        queue.splice(at, 1);
        if (queue.length === 0) this.#waiting.delete(job.request.owner);
        this.#waitingCount--;
      }
      settle(job, { kind: 'cancelled', durationMs: 0 });
      return;
    }
    if (slot.job !== job) return;
    clearTimeout(job.timer);
    this.#cancelled++;
    this.#drop(slot);
    void slot.worker.terminate();
    settle(job, { kind: 'cancelled', durationMs: performance.now() - job.started });
    this.#pump();
  }

  #timeout(slot: PoolWorker, job: Job): void {
    if (slot.job !== job) return;
    this.#timedOut++;
    this.#drop(slot);
    void slot.worker.terminate();
    settle(job, { kind: 'timeout', durationMs: performance.now() - job.started });
    this.#pump();
  }

  /** A worker that died on its own (out of its heap, say): its job fails, and the next job gets a new worker. */
  #lost(slot: PoolWorker, reason: string): void {
    if (!this.#workers.has(slot)) return;
    const job = slot.job;
    this.#drop(slot);
    if (job !== undefined) {
      clearTimeout(job.timer);
      settle(job, { kind: 'failed', reason, durationMs: performance.now() - job.started });
    }
    this.#pump();
  }

  #retire(slot: PoolWorker): void {
    if (slot.job !== undefined) return;
    this.#drop(slot);
    void slot.worker.terminate();
  }

  #drop(slot: PoolWorker): void {
    this.#workers.delete(slot);
    const at = this.#idle.indexOf(slot);
    if (at >= 0) this.#idle.splice(at, 1);
    if (slot.idleTimer !== undefined) clearTimeout(slot.idleTimer);
    slot.job = undefined;
  }
}

/** Hands `job` its verdict once and lets go of its signals. */
function settle(job: Job, verdict: OffThreadVerdict): void {
  if (job.done) return;
  job.done = true;
  job.detach?.();
  job.resolve(verdict);
}

type WorkerAnswer = { kind: 'valid' } | { kind: 'invalid'; message: string; pointer: string } | { kind: 'failed'; reason: string };

const pool = new ValidationPool();

/** Validates one large answer on a worker with a deadline; the verdict never says passed unless the worker said so. */
export function validateOffThread(request: OffThreadValidation): Promise<OffThreadVerdict> {
  return pool.validate(request);
}

const TIMEOUT_HINT =
  "Checking this answer against the tool's schema took longer than offThreadValidationTimeoutMs (etc/plugin-answers.json) on a validation worker, so it is refused rather than handed on unchecked: the cost is the schema's subschemas (counted once per way its $refs reach them) times the answer's elements, and a pattern RE2 cannot run may backtrack. Ask the tool for less; its author can simplify the schema (fewer shared $refs under items, no lookaround patterns).";
const FAILED_HINT =
  "The validation worker could not check this answer (details.validation_error: out of its offThreadValidationHeapMb heap, or it could not start), so it is refused rather than handed on unchecked. Ask the tool for less; if every large answer fails this way, report it with details.validation_error.";

/**
 * The failure of a call whose answer a worker did not finish checking:
 * `code` (the code a schema mismatch of that schema has) with
 * `details.reason` `validation_timeout` or `validation_failed`.
 */
export function unfinishedValidation(
  verdict: Extract<OffThreadVerdict, { kind: 'timeout' | 'failed' }>,
  code: 'PLUGIN_MALFORMED_RESPONSE' | 'PLUGIN_RESPONSE_SCHEMA_VIOLATION',
  tool: string,
  schema: AnswerSchemaDialect,
): HostError {
  if (verdict.kind === 'timeout') {
    return hostError(code, `the result of '${tool}' could not be checked against its ${schema} schema within ${OFF_THREAD_VALIDATION_TIMEOUT_MS} ms, so it is refused`, {
      hint: TIMEOUT_HINT,
      details: { tool, reason: 'validation_timeout', timeout_ms: OFF_THREAD_VALIDATION_TIMEOUT_MS },
    });
  }
  return hostError(code, `the result of '${tool}' could not be checked against its ${schema} schema, so it is refused: ${verdict.reason}`, {
    hint: FAILED_HINT,
    details: { tool, reason: 'validation_failed', validation_error: verdict.reason },
  });
}

/** The pool's workers and waiting validations now. */
export function offThreadValidationState(): OffThreadValidationState {
  return pool.state();
}
