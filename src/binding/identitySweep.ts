/**
 * The identity sweep of a package tree check: one status call per directory
 * and file of a pinned tree, compared with the identity last seen holding
 * the pinned bytes, spread over the host's thread and worker threads.
 *
 * A file the host holds a descriptor on (see packageTree.ts) is looked at
 * with `fstat`; anything else with `lstat` of its path. Most of an `lstat`'s
 * cost is the kernel walking the path (about 1–2 µs per entry on the
 * machines measured, twice an `fstat` with Node's own cost included), and no
 * coarser kernel signal says that a file's bytes are unchanged (a write
 * moves the file's times, never its directory's), so what is left to make a
 * large tree cheaper is more threads. The entries split evenly: each thread
 * claims chunks from a shared counter, so a worker that wakes late or is
 * descheduled leaves its share to the others, and a sweep is never slower
 * than the host's thread alone.
 *
 * The sweep only sorts entries into "status as recorded" and "look again";
 * every entry it flags is checked again on the host's thread by the full
 * check (listed again, re-hashed), so a worker clears an entry only by the
 * same comparison, from the same source text, that the host's thread runs.
 */
import { fstatSync, lstatSync, type Stats } from 'node:fs';
import { availableParallelism } from 'node:os';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';

/** Numbers per entry in {@link IdentityTable.values}: dev, ino, size, mtimeMs, ctimeMs, permission bits, kind. */
const FIELDS = 7;
/** The kind field of a directory (a file's is 0). */
const DIRECTORY = 1;
/** What a sweep writes for an entry whose status is the recorded one. */
export const SWEEP_UNCHANGED = 0;
/** A regular file with the recorded permission bits whose identity moved: its bytes must be hashed again. */
export const SWEEP_IDENTITY_MOVED = 1;
/** Anything else (missing, another type, another mode, a directory whose identity moved): the full check decides. */
export const SWEEP_LOOK_AGAIN = 2;
/** Entries a thread claims at a time: small enough to share evenly, large enough that the counter is not contended. */
const CHUNK = 64;
/** Below this many entries a sweep stays on the host's thread: waking a worker costs more than it saves. */
const WORKER_MIN_ENTRIES = 512;
/** Worker threads at most, beside the host's own (a sweep is bounded by the kernel's per-core lstat rate). */
const MAX_WORKERS = 3;
/** Entries the host's thread sweeps between two turns of the event loop. */
const ENTRIES_PER_TURN = 2048;

/** What the table records of one entry. */
export interface RecordedIdentity {
  readonly dev: number;
  readonly ino: number;
  /** A directory's is ignored. */
  readonly size: number;
  readonly mtimeMs: number;
  /** `NaN` for an identity that must never match. */
  readonly ctimeMs: number;
}

/** The entries of one tree and their recorded statuses, in memory the workers share. */
export interface IdentityTable {
  readonly id: number;
  /** Absolute paths, directories first then files, in the order of the tree's list. */
  readonly paths: readonly string[];
  /** {@link FIELDS} numbers per entry. */
  readonly values: Float64Array;
  /**
   * Per entry, a descriptor the host holds open on the file last found
   * holding its pinned bytes, or -1: a held file is swept by `fstat` (no path
   * walk), which vouches for its path only while its directory is unchanged
   * (the caller checks that).
   */
  readonly descriptors: Int32Array;
}

let nextTableId = 1;

/** A table for `paths` with every identity unset (set each with {@link recordIdentity}). */
export function createIdentityTable(paths: readonly string[]): IdentityTable {
  return {
    id: nextTableId++,
    paths,
    values: new Float64Array(new SharedArrayBuffer(paths.length * FIELDS * Float64Array.BYTES_PER_ELEMENT)),
    descriptors: new Int32Array(new SharedArrayBuffer(Math.max(paths.length, 1) * Int32Array.BYTES_PER_ELEMENT)).fill(-1),
  };
}

/** Records the status entry `index` must have: its kind, permission bits and identity. */
export function recordIdentity(table: IdentityTable, index: number, directory: boolean, permissions: number, identity: RecordedIdentity): void {
  const at = index * FIELDS;
  const v = table.values;
  v[at] = identity.dev;
  v[at + 1] = identity.ino;
  v[at + 2] = identity.size;
  v[at + 3] = identity.mtimeMs;
  v[at + 4] = identity.ctimeMs;
  v[at + 5] = permissions;
  v[at + 6] = directory ? DIRECTORY : 0;
}

type Lstat = (path: string) => Stats | undefined;
type Fstat = (fd: number) => Stats;
type SweptTable = Pick<IdentityTable, 'paths' | 'values' | 'descriptors'>;
type SweepRange = (lstat: Lstat, fstat: Fstat, table: SweptTable, flags: Uint8Array, start: number, end: number, fields: number) => void;

/**
 * Writes a verdict into `flags` for each entry of `table` in [start, end).
 * Self-contained, names from outside only through its parameters: worker
 * threads run its source text.
 */
function sweepRange(lstat: Lstat, fstat: Fstat, table: SweptTable, flags: Uint8Array, start: number, end: number, fields: number): void {
  const { paths, values, descriptors } = table;
  for (let i = start; i < end; i++) {
    const at = i * fields;
    let s: Stats | undefined;
    try {
      const fd = descriptors[i]!;
      s = fd >= 0 ? fstat(fd) : lstat(paths[i]!);
    } catch {
      s = undefined;
    }
    let verdict = 2;
    if (s !== undefined && (s.mode & 0o7777) === values[at + 5]) {
      const directory = values[at + 6] === 1;
      const sameTimes = s.ctimeMs === values[at + 4] && s.ino === values[at + 1] && s.mtimeMs === values[at + 3] && s.dev === values[at];
      if (directory && s.isDirectory()) verdict = sameTimes ? 0 : 2;
      else if (!directory && s.isFile()) verdict = sameTimes && s.size === values[at + 2] ? 0 : 1;
    }
    flags[i] = verdict;
  }
}

/**
 * Claims chunks of `table` from `counters[0]` (the next entry) and sweeps
 * them with `range`, marking each in `chunkDone` and counting it in
 * `counters[1]` once; returns whether this call finished the last chunk.
 * Stops claiming after `limit` entries. Self-contained like `sweepRange`.
 */
function sweepClaimed(
  lstat: Lstat,
  fstat: Fstat,
  range: SweepRange,
  table: SweptTable,
  flags: Uint8Array,
  counters: Int32Array,
  chunkDone: Uint8Array,
  chunk: number,
  fields: number,
  limit: number,
): boolean {
  const total = table.paths.length;
  const chunks = Math.ceil(total / chunk);
  let swept = 0;
  for (;;) {
    const start = Atomics.add(counters, 0, chunk);
    if (start >= total) return false;
    const end = Math.min(start + chunk, total);
    range(lstat, fstat, table, flags, start, end, fields);
    // An exchange: a chunk the host's thread swept again (a worker was slow to finish it) counts once.
    if (Atomics.exchange(chunkDone, start / chunk, 1) === 0 && Atomics.add(counters, 1, 1) + 1 === chunks) return true;
    swept += end - start;
    if (swept >= limit) return false;
  }
}

const NO_THROW = { throwIfNoEntry: false } as const;
const lstatNoThrow: Lstat = (path) => lstatSync(path, NO_THROW);

const WORKER_SOURCE = `'use strict';
const { fstatSync, lstatSync } = require('node:fs');
const { parentPort } = require('node:worker_threads');
const sweepRange = ${sweepRange.toString()};
const sweepClaimed = ${sweepClaimed.toString()};
const noThrow = { throwIfNoEntry: false };
const lstat = (path) => lstatSync(path, noThrow);
const tables = new Map();
parentPort.on('message', (m) => {
  if (m.table !== undefined) tables.set(m.table.id, m.table);
  else if (m.forget !== undefined) tables.delete(m.forget);
  else {
    const table = tables.get(m.id);
    if (table !== undefined && sweepClaimed(lstat, fstatSync, sweepRange, table, m.flags, m.counters, m.chunkDone, ${CHUNK}, ${FIELDS}, Infinity)) parentPort.postMessage(m.pass);
  }
});
`;

/** One sweep in flight: resolved when the worker that finished its last entry says so, or when the workers fail. */
interface Pass {
  readonly done: () => void;
}

/** Worker threads that sweep tables beside the host's thread. */
class SweepWorkers {
  readonly #workers: Worker[] = [];
  readonly #sent = new Set<number>();
  readonly #passes = new Map<number, Pass>();
  #online = 0;
  #failed = false;
  #nextPass = 1;
  #settleOnline: (running: boolean) => void = () => undefined;
  /** Settles true once every worker runs, false if one failed first. */
  readonly online = new Promise<boolean>((settle) => (this.#settleOnline = settle));

  constructor(count: number) {
    try {
      for (let i = 0; i < count; i++) {
        // No loaders or flags of the host: the worker needs node:fs and nothing else.
        const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [] });
        worker.on('online', () => {
          if (++this.#online === count) this.#settleOnline(!this.#failed);
          this.#holdWhileBusy();
        });
        worker.on('message', (pass: number) => this.#finish(pass));
        worker.on('error', () => this.#fail());
        worker.on('exit', () => this.#fail());
        this.#workers.push(worker);
      }
    } catch {
      // No threads to be had (a resource limit): every sweep stays on the host's thread.
      this.#fail();
    }
  }

  /** Whether every worker runs: until then (and for good once one failed) sweeps stay on the host's thread. */
  get ready(): boolean {
    return !this.#failed && this.#online === this.#workers.length;
  }

  /** Starts a sweep of `table` on every worker; the returned promise settles when a worker finished the last entry. */
  start(table: IdentityTable, flags: Uint8Array, counters: Int32Array, chunkDone: Uint8Array): { pass: number; finished: Promise<void> } {
    if (!this.#sent.has(table.id)) {
      this.#sent.add(table.id);
      for (const w of this.#workers) w.postMessage({ table });
    }
    const pass = this.#nextPass++;
    const finished = new Promise<void>((done) => this.#passes.set(pass, { done }));
    this.#holdWhileBusy();
    for (const w of this.#workers) w.postMessage({ id: table.id, flags, counters, chunkDone, pass });
    return { pass, finished };
  }

  /** Forgets a pass the host's thread finished itself. */
  drop(pass: number): void {
    this.#passes.delete(pass);
    this.#holdWhileBusy();
  }

  /**
   * The workers keep the host process alive while they start and while a
   * sweep waits for them (an awaited check must not end the process), and
   * never otherwise. Called after the listeners are added: a 'message'
   * listener added later would hold the process again.
   */
  #holdWhileBusy(): void {
    const busy = this.#online < this.#workers.length || this.#passes.size > 0;
    for (const w of this.#workers) {
      if (busy) w.ref();
      else w.unref();
    }
  }

  forget(table: IdentityTable): void {
    if (!this.#sent.delete(table.id)) return;
    for (const w of this.#workers) w.postMessage({ forget: table.id });
  }

  #finish(pass: number): void {
    this.#passes.get(pass)?.done();
    this.#passes.delete(pass);
    this.#holdWhileBusy();
  }

  /**
   * A worker died: pending sweeps finish on the host's thread once every
   * worker stopped (none writes a verdict after that); later sweeps never
   * wait for workers.
   */
  #fail(): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#settleOnline(false);
    const pending = [...this.#passes.values()];
    this.#passes.clear();
    void Promise.allSettled(this.#workers.map((w) => w.terminate())).then(() => pending.forEach((p) => p.done()));
  }
}

let workers: SweepWorkers | undefined;

const workerCount = (): number => Math.min(MAX_WORKERS, availableParallelism() - 1);

/**
 * A verdict for every entry of `table`, in its order:
 * {@link SWEEP_UNCHANGED}, {@link SWEEP_IDENTITY_MOVED} or
 * {@link SWEEP_LOOK_AGAIN}. Each sweep writes its own verdicts, so sweeps
 * of one table may overlap. The host's thread never waits for a worker:
 * once every chunk is claimed it sweeps again any chunk not finished yet,
 * so a descheduled worker costs at most a chunk of duplicated calls. The
 * first large sweep in a process starts the workers and runs without them.
 * `hostThread: false` leaves every entry to running workers (tests that
 * must see a worker's verdicts); without them the host's thread sweeps.
 */
export async function sweepIdentities(table: IdentityTable, hostThread = true): Promise<Uint8Array> {
  const total = table.paths.length;
  const chunks = Math.ceil(total / CHUNK);
  const flags = new Uint8Array(new SharedArrayBuffer(Math.max(total, 1)));
  const counters = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
  const chunkDone = new Uint8Array(new SharedArrayBuffer(Math.max(chunks, 1)));
  if (total === 0) return flags;
  let helpers: { pass: number; finished: Promise<void> } | undefined;
  if ((total >= WORKER_MIN_ENTRIES || !hostThread) && workerCount() > 0) {
    workers ??= new SweepWorkers(workerCount());
    if (workers.ready) helpers = workers.start(table, flags, counters, chunkDone);
  }
  if (hostThread || helpers === undefined) {
    while (!sweepClaimed(lstatNoThrow, fstatSync, sweepRange, table, flags, counters, chunkDone, CHUNK, FIELDS, ENTRIES_PER_TURN)) {
      if (Atomics.load(counters, 0) >= total) break;
      await nextTurn();
    }
  } else {
    await helpers.finished;
  }
  // Chunks claimed but not finished (a slow or failed worker): swept here.
  for (let c = 0; c < chunks; c++) {
    if (Atomics.load(chunkDone, c) === 1) continue;
    sweepRange(lstatNoThrow, fstatSync, table, flags, c * CHUNK, Math.min((c + 1) * CHUNK, total), FIELDS);
    if (Atomics.exchange(chunkDone, c, 1) === 0) Atomics.add(counters, 1, 1);
  }
  if (helpers === undefined) return flags;
  workers?.drop(helpers.pass);
  // A copy: a worker still finishing a chunk swept here must not change the verdicts the caller reads.
  return flags.slice();
}

/**
 * Starts the sweep's worker threads if they are not running yet; settles
 * true once they run, false where there are none (one core, no threads to
 * be had). For benchmarks and tests that measure a warm host.
 */
export function startSweepWorkers(): Promise<boolean> {
  if (workerCount() <= 0) return Promise.resolve(false);
  workers ??= new SweepWorkers(workerCount());
  return workers.online;
}

/** Releases the workers' copy of a table the caller no longer keeps. */
export function releaseIdentityTable(table: IdentityTable): void {
  workers?.forget(table);
}
