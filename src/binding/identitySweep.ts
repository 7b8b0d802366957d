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
 *
 * The same threads also re-hash, by path, the files whose identity moved
 * when no held descriptor can serve them ({@link hashByPath}), on the same
 * terms: a worker only clears a file, and whatever it does not clear is
 * checked again on the host's thread.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
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
/** Bytes of a SHA-256 digest. */
const DIGEST_BYTES = 32;
/** Files a thread claims at a time in a hash pass (a file costs several status calls). */
const HASH_CHUNK = 16;
/** Below this many files a hash pass stays on the host's thread. */
const HASH_WORKER_MIN_FILES = 128;
/** Files the host's thread hashes between two turns of the event loop (about 10 ms of 4 KiB files). */
const FILES_PER_TURN = 1024;
/** Numbers per file in a hash pass's identities: dev, ino, size, mtimeMs, ctimeMs. */
const SEEN_FIELDS = 5;
/** Read size of a hash pass. */
const HASH_READ_BYTES = 1 << 20;

/** How a tree's files (and every file the host checks, src/binding/safeOpen.ts) are opened for reading: read-only, never through a final link. */
export const TREE_OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
/**
 * The same, leaving the file's access time alone: after a ctime moved, the
 * first read of a file would otherwise write its inode back (relatime). The
 * kernel grants it to the file's owner and to root only (else `EPERM`).
 */
export const TREE_OPEN_FLAGS_NO_ATIME = TREE_OPEN_FLAGS | (fs.constants.O_NOATIME ?? 0);

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
  /** {@link DIGEST_BYTES} per entry: a file's pinned SHA-256 (set with {@link recordDigest}), for {@link hashByPath}. */
  readonly digests: Uint8Array;
}

let nextTableId = 1;

/** A table for `paths` with every identity unset (set each with {@link recordIdentity}). */
export function createIdentityTable(paths: readonly string[]): IdentityTable {
  return {
    id: nextTableId++,
    paths,
    values: new Float64Array(new SharedArrayBuffer(paths.length * FIELDS * Float64Array.BYTES_PER_ELEMENT)),
    descriptors: new Int32Array(new SharedArrayBuffer(Math.max(paths.length, 1) * Int32Array.BYTES_PER_ELEMENT)).fill(-1),
    digests: new Uint8Array(new SharedArrayBuffer(Math.max(paths.length, 1) * DIGEST_BYTES)),
  };
}

/** Records the SHA-256 file entry `index` must hold. */
export function recordDigest(table: IdentityTable, index: number, digest: Uint8Array): void {
  table.digests.set(digest, index * DIGEST_BYTES);
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

type HashFs = Pick<typeof fs, 'openSync' | 'fstatSync' | 'readSync' | 'closeSync'>;
type Digester = typeof createHash;

/** One hash pass, in memory the workers share. */
interface HashJob {
  /** The table entries to hash, in the order given. */
  readonly indices: Int32Array;
  /** Per file of the pass, two verdicts (0: the pinned bytes; 2: anything else): the workers' first, then the host thread's. */
  readonly verdicts: Uint8Array;
  /** Per file of the pass, two identities of {@link SEEN_FIELDS} numbers, laid out as the verdicts. */
  readonly seen: Float64Array;
  /** The next position in `indices` to claim. */
  readonly counters: Int32Array;
  /** Per chunk, 0 until a thread finished it, then 1 + the side (0 workers, 1 host) whose results count. */
  readonly chunkDone: Uint8Array;
}

/**
 * Hashes the files at positions [start, end) of `job`, each opened by its
 * path (`O_NOFOLLOW`, `O_NOATIME` where allowed) and read from offset 0, and
 * writes into `side`'s half of the job: verdict 0 with the status of the
 * descriptor read (taken before the reads) when it is a regular file with
 * its recorded mode and size holding its pinned digest, else 2. Never
 * throws. Self-contained, names from outside only through its parameters:
 * worker threads run its source text.
 */
function hashRange(
  fsApi: HashFs,
  digester: Digester,
  openFlags: readonly [number, number],
  table: Pick<IdentityTable, 'paths' | 'values' | 'digests'>,
  job: HashJob,
  start: number,
  end: number,
  side: number,
  fields: number,
  seenFields: number,
  digestBytes: number,
  buffer: Buffer,
): void {
  const { paths, values, digests } = table;
  const { indices, verdicts, seen } = job;
  const count = indices.length;
  for (let k = start; k < end; k++) {
    const i = indices[k]!;
    const at = i * fields;
    let verdict = 2;
    let fd = -1;
    try {
      try {
        fd = fsApi.openSync(paths[i]!, openFlags[0]);
      } catch (e) {
        if ((e as NodeJS.ErrnoException | undefined)?.code !== 'EPERM') throw e;
        fd = fsApi.openSync(paths[i]!, openFlags[1]);
      }
      const s = fsApi.fstatSync(fd);
      if (s.isFile() && (s.mode & 0o7777) === values[at + 5] && s.size === values[at + 2]) {
        const hash = digester('sha256');
        for (let position = 0; ; ) {
          const read = fsApi.readSync(fd, buffer, 0, buffer.length, position);
          hash.update(buffer.subarray(0, read));
          if (read < buffer.length) break;
          position += read;
        }
        const digest = hash.digest();
        let same = true;
        for (let b = 0; b < digestBytes; b++) if (digest[b] !== digests[i * digestBytes + b]) same = false;
        if (same) {
          const o = (side * count + k) * seenFields;
          seen[o] = s.dev;
          seen[o + 1] = s.ino;
          seen[o + 2] = s.size;
          seen[o + 3] = s.mtimeMs;
          seen[o + 4] = s.ctimeMs;
          verdict = 0;
        }
      }
    } catch {
      verdict = 2;
    } finally {
      if (fd >= 0) {
        try {
          fsApi.closeSync(fd);
        } catch {
          // A read-only descriptor whose close fails has nothing to flush.
        }
      }
    }
    verdicts[side * count + k] = verdict;
  }
}

/**
 * Claims chunks of `job` and hashes them with `range` into `side`'s half,
 * then marks each chunk finished by that side unless another side finished
 * it first; returns true once nothing is left to claim, false after `limit`
 * files. Self-contained like `hashRange`.
 */
function hashClaimed(
  fsApi: HashFs,
  digester: Digester,
  openFlags: readonly [number, number],
  range: typeof hashRange,
  table: Pick<IdentityTable, 'paths' | 'values' | 'digests'>,
  job: HashJob,
  side: number,
  chunk: number,
  fields: number,
  seenFields: number,
  digestBytes: number,
  buffer: Buffer,
  limit: number,
): boolean {
  const total = job.indices.length;
  let hashed = 0;
  for (;;) {
    const start = Atomics.add(job.counters, 0, chunk);
    if (start >= total) return true;
    const end = Math.min(start + chunk, total);
    range(fsApi, digester, openFlags, table, job, start, end, side, fields, seenFields, digestBytes, buffer);
    // Written after the results: whoever reads this chunk as finished reads that side's complete results.
    Atomics.compareExchange(job.chunkDone, start / chunk, 0, side + 1);
    hashed += end - start;
    if (hashed >= limit) return false;
  }
}

const NO_THROW = { throwIfNoEntry: false } as const;
const lstatNoThrow: Lstat = (path) => lstatSync(path, NO_THROW);

const HASH_OPEN_FLAGS = [TREE_OPEN_FLAGS_NO_ATIME, TREE_OPEN_FLAGS] as const;

const WORKER_SOURCE = `'use strict';
const fs = require('node:fs');
const { fstatSync, lstatSync } = fs;
const { createHash } = require('node:crypto');
const { parentPort } = require('node:worker_threads');
const sweepRange = ${sweepRange.toString()};
const sweepClaimed = ${sweepClaimed.toString()};
const hashRange = ${hashRange.toString()};
const hashClaimed = ${hashClaimed.toString()};
const noThrow = { throwIfNoEntry: false };
const lstat = (path) => lstatSync(path, noThrow);
const openFlags = [${HASH_OPEN_FLAGS.join(', ')}];
let buffer;
const tables = new Map();
parentPort.on('message', (m) => {
  if (m.table !== undefined) tables.set(m.table.id, m.table);
  else if (m.forget !== undefined) tables.delete(m.forget);
  else if (m.hash !== undefined) {
    const table = tables.get(m.id);
    buffer ??= Buffer.allocUnsafe(${HASH_READ_BYTES});
    if (table !== undefined) hashClaimed(fs, createHash, openFlags, hashRange, table, m.hash, 0, ${HASH_CHUNK}, ${FIELDS}, ${SEEN_FIELDS}, ${DIGEST_BYTES}, buffer, Infinity);
  } else {
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
    this.#send(table);
    const pass = this.#nextPass++;
    const finished = new Promise<void>((done) => this.#passes.set(pass, { done }));
    this.#holdWhileBusy();
    for (const w of this.#workers) w.postMessage({ id: table.id, flags, counters, chunkDone, pass });
    return { pass, finished };
  }

  /** Starts a hash pass of `job` on every worker; nothing waits for them (see {@link hashByPath}). */
  hash(table: IdentityTable, job: HashJob): void {
    this.#send(table);
    for (const w of this.#workers) w.postMessage({ id: table.id, hash: job });
  }

  #send(table: IdentityTable): void {
    if (this.#sent.has(table.id)) return;
    this.#sent.add(table.id);
    for (const w of this.#workers) w.postMessage({ table });
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
    // The workers have their message: what the caller does next in its own call (a gated spawn's layout and fork) runs
    // beside them before this thread sweeps; a microtask, so a check awaited alone waits no turn of the event loop.
    if (helpers !== undefined) await Promise.resolve();
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

/** The outcome of {@link hashByPath}, per file in the order given. */
export interface HashPass {
  /** Whether the file was a regular file with its recorded mode and size holding its pinned digest. */
  pinned(k: number): boolean;
  /** For a pinned file: the status of the descriptor its bytes were read from, taken before the reads. */
  identity(k: number): RecordedIdentity;
}

let hostBuffer: Buffer | undefined;

/**
 * Hashes the files at `indices` of `table` by their paths, on the host's
 * thread and the sweep's worker threads together (from
 * {@link HASH_WORKER_MIN_FILES} files on, once the workers run): each thread
 * claims chunks of {@link HASH_CHUNK} files, opens each itself, and closes
 * it before the next; no thread touches a descriptor the host holds. A
 * worker only ever clears a file, by the same comparison from the same
 * source text; the caller checks every file not cleared again on its own
 * thread (and refuses from there, naming the path). The host's thread never
 * waits for a worker: once every chunk is claimed it hashes again any chunk
 * not finished yet, and each chunk's results are those of the thread that
 * finished it first, each thread writing its own half. `hostThread: false`
 * leaves every chunk to running workers (tests that must see a worker's
 * results); without them the host's thread hashes.
 */
export async function hashByPath(table: IdentityTable, indices: readonly number[], hostThread = true): Promise<HashPass> {
  const total = indices.length;
  const chunks = Math.ceil(total / HASH_CHUNK);
  const shared = <T>(make: (buffer: SharedArrayBuffer) => T, bytes: number): T => make(new SharedArrayBuffer(Math.max(bytes, 1)));
  const job: HashJob = {
    indices: shared((b) => new Int32Array(b), total * Int32Array.BYTES_PER_ELEMENT),
    verdicts: shared((b) => new Uint8Array(b), 2 * total),
    seen: shared((b) => new Float64Array(b), 2 * total * SEEN_FIELDS * Float64Array.BYTES_PER_ELEMENT),
    counters: shared((b) => new Int32Array(b), Int32Array.BYTES_PER_ELEMENT),
    chunkDone: shared((b) => new Uint8Array(b), chunks),
  };
  job.indices.set(indices);
  hostBuffer ??= Buffer.allocUnsafe(HASH_READ_BYTES);
  const buffer = hostBuffer;
  let helped = false;
  if (total > 0 && (total >= HASH_WORKER_MIN_FILES || !hostThread) && workerCount() > 0) {
    workers ??= new SweepWorkers(workerCount());
    if (workers.ready) {
      workers.hash(table, job);
      helped = true;
    }
  }
  const HOST = 1;
  if (hostThread || !helped) {
    while (!hashClaimed(fs, createHash, HASH_OPEN_FLAGS, hashRange, table, job, HOST, HASH_CHUNK, FIELDS, SEEN_FIELDS, DIGEST_BYTES, buffer, FILES_PER_TURN)) await nextTurn();
  } else {
    while (workers?.ready === true && job.chunkDone.some((_, c) => Atomics.load(job.chunkDone, c) === 0)) await nextTurn();
  }
  // Chunks claimed but not finished (a slow or failed worker): hashed here, into the host's own half.
  for (let c = 0; c < chunks; c++) {
    if (Atomics.load(job.chunkDone, c) !== 0) continue;
    hashRange(fs, createHash, HASH_OPEN_FLAGS, table, job, c * HASH_CHUNK, Math.min((c + 1) * HASH_CHUNK, total), HOST, FIELDS, SEEN_FIELDS, DIGEST_BYTES, buffer);
    Atomics.compareExchange(job.chunkDone, c, 0, HOST + 1);
  }
  const sideOf = (k: number): number => Atomics.load(job.chunkDone, Math.floor(k / HASH_CHUNK)) - 1;
  return {
    pinned: (k) => job.verdicts[sideOf(k) * total + k] === 0,
    identity: (k) => {
      const o = (sideOf(k) * total + k) * SEEN_FIELDS;
      const v = job.seen;
      return { dev: v[o]!, ino: v[o + 1]!, size: v[o + 2]!, mtimeMs: v[o + 3]!, ctimeMs: v[o + 4]! };
    },
  };
}
