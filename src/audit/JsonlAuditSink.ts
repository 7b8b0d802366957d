/**
 * The built-in audit sink: an append-only JSON Lines file, mode 0600.
 *
 * `write` only queues the record's line, so a call never waits for the disk.
 * One writer drains the queue: every line queued meanwhile goes out in one
 * `write(2)` on a descriptor opened with O_APPEND, so lines never interleave
 * with another writer's and a crash can lose the tail, never half a line in
 * the middle. A write that fails part way (a full disk) leaves half a line,
 * which the next write ends with a newline before its records. With `fsync: 'batch'` (the default) each such write is followed
 * by `fdatasync`, so a record is on disk one batch after it was queued; with
 * `'none'` the kernel decides, and only `flush()` and `close()` sync. A full
 * queue drops records and writes a `gap` record saying how many once it can.
 *
 * The file is bounded: a batch that would take it past `maxFileBytes` is cut
 * between two lines, the file is renamed `<path>.1` (older ones shifted to
 * `.2` … `.<keepFiles>`, the oldest replaced), a new file is created at the
 * path, and the rest of the batch goes there. A line is written to one file
 * only, whole, so a rotation neither splits nor loses a record. Two sinks may
 * share a file (two gateways of one configuration): before each batch a sink
 * follows the path to the file the other one's rotation made.
 */
import { constants, statSync } from 'node:fs';
import { lstat, open, rename, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { replaceableFolder } from '../sandbox/replaceableFolders.js';
import { hostError, isHostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { AUDIT_DEFAULTS, auditLine } from './auditLines.js';
import type { AuditRecord, AuditSink } from './auditRecord.js';

/** When the file sink asks the kernel to put written records on disk. */
export type AuditFsyncPolicy = 'batch' | 'none';

/** Options of {@link JsonlAuditSink.open}. */
export interface JsonlAuditSinkOptions {
  /** `batch` (default): fdatasync after every batch of lines; `none`: only on `flush()` and `close()`. */
  readonly fsync?: AuditFsyncPolicy;
  /** The longest line, in UTF-8 bytes, newline excluded; at least 1024. Default 16384. */
  readonly maxLineBytes?: number;
  /** Records waiting for the disk before new ones are dropped (and counted in a `gap` record). Default 10000. */
  readonly maxQueuedRecords?: number;
  /**
   * The bound on the live file, in bytes: a record that would take it past
   * the bound goes whole to a new file, the old one rotated to `<path>.1`.
   * At least 4096 and more than `maxLineBytes`. Default 64 MiB. A file larger
   * already at open is rotated at the first write.
   */
  readonly maxFileBytes?: number;
  /**
   * Rotated files kept beside the live one: `<path>.1` (the newest) to
   * `<path>.<keepFiles>` (the oldest), which the next rotation deletes. At
   * least 1. Default 4, so the audit takes at most
   * `(keepFiles + 1) * maxFileBytes` of disk.
   */
  readonly keepFiles?: number;
}

// O_NONBLOCK: opening a FIFO planted at the path for writing would otherwise wait for a reader forever (and hold a
// thread-pool thread); with it the open fails (ENXIO) or returns at once and the fstat check refuses it. No effect on a regular file.
const OPEN_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
// A rotation's new file is ours only if this open made it: anything already at the path (nobody else may write the folder) is an error.
const NEW_FILE_FLAGS = OPEN_FLAGS | constants.O_EXCL;

/** The size limits of a sink, checked; or the option that is out of range. */
function checkedBounds(options: JsonlAuditSinkOptions): { maxLineBytes: number; maxQueued: number; maxFileBytes: number; keepFiles: number } | HostError {
  const invalid = (option: string, rule: string): HostError => hostError('HOST_INVALID_OPTIONS', `option ${option} must be ${rule}`, { details: { option } });
  const maxLineBytes = options.maxLineBytes ?? AUDIT_DEFAULTS.maxLineBytes;
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < AUDIT_DEFAULTS.minLineBytes) return invalid('maxLineBytes', `a whole number of at least ${AUDIT_DEFAULTS.minLineBytes}`);
  const maxQueued = options.maxQueuedRecords ?? AUDIT_DEFAULTS.maxQueuedRecords;
  if (!Number.isSafeInteger(maxQueued) || maxQueued < 1) return invalid('maxQueuedRecords', 'a positive whole number');
  // Every line (newline included) must fit an empty file, or a rotation would make no room for it.
  const minFileBytes = Math.max(AUDIT_DEFAULTS.minFileBytes, maxLineBytes + 1);
  const maxFileBytes = options.maxFileBytes ?? Math.max(AUDIT_DEFAULTS.maxFileBytes, minFileBytes);
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < minFileBytes) return invalid('maxFileBytes', `a whole number of at least ${minFileBytes} (4096, and more than maxLineBytes)`);
  const keepFiles = options.keepFiles ?? AUDIT_DEFAULTS.keepFiles;
  if (!Number.isSafeInteger(keepFiles) || keepFiles < 1) return invalid('keepFiles', 'a positive whole number');
  return { maxLineBytes, maxQueued, maxFileBytes, keepFiles };
}

/** Renames `from` to `to`; a `from` that is not there (never rotated that far, or moved away) is no error. */
async function renameIfThere(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
  }
}

/** Puts a folder's entries (a rotation's renames and the new file) on disk. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function unsafe(path: string, reason: string): HostError {
  return hostError('AUDIT_FILE_UNSAFE', `the audit file ${path} ${reason}`, { details: { path, reason } });
}

/** Refuses a file others could read or that is not ours alone: a link, a device, another user's file; else its size. */
function checkFile(handle: FileHandle, path: string): ResultAsync<number, HostError> {
  return ResultAsync.fromPromise(handle.stat(), (cause) => ioError('Inspecting the audit file', path, cause)).andThen((stat) => {
    const uid = process.getuid?.();
    const reason = !stat.isFile()
      ? 'is not a regular file'
      : uid !== undefined && stat.uid !== uid
        ? 'belongs to another user'
        : (stat.mode & 0o077) !== 0
          ? `is readable or writable by others (mode ${(stat.mode & 0o777).toString(8)}); it must be 600`
          : stat.nlink !== 1
            ? 'has other hard links'
            : undefined;
    return reason === undefined ? okAsync(stat.size) : errAsync(unsafe(path, reason));
  });
}

/**
 * Why another user could take the audit file from the host, if one could: a
 * user who owns the folder it is in or one above it, or may write there
 * without the sticky bit, can unlink or rename the live file (every record
 * from then on lost in an inode nobody reads) or put a link on the way to the
 * next open (O_NOFOLLOW covers only the file's own name). The rule ssh's
 * StrictModes applies, as for the profile directory.
 */
function folderProblem(path: string): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const folder = dirname(resolve(path));
  const own = statSync(folder, { throwIfNoEntry: false });
  // A folder that is not there fails the open itself, with its own error.
  if (own === undefined) return undefined;
  const mode = (own.mode & 0o7777).toString(8);
  const found =
    own.uid !== 0 && own.uid !== uid
      ? { folder, why: `owned by uid ${own.uid}` }
      : (own.mode & 0o022) !== 0 && (own.mode & 0o1000) === 0
        ? { folder, why: `writable by others without the sticky bit (mode ${mode})` }
        : undefined;
  const above = found === undefined ? replaceableFolder(folder, uid) : undefined;
  const problem =
    found ??
    (above === undefined || above.reason === 'missing' || above.reason === 'unresolved'
      ? undefined
      : { folder: above.folder, why: above.reason === 'foreign_owner' ? `owned by uid ${above.ownerUid}` : `writable by others without the sticky bit (mode ${above.mode})` });
  return problem === undefined ? undefined : `is in or below the folder ${problem.folder}, ${problem.why}: another user could remove or replace it; move it, or chown/chmod go-w that folder`;
}

interface SinkSettings {
  readonly fsync: AuditFsyncPolicy;
  readonly maxLineBytes: number;
  readonly maxQueued: number;
  readonly maxFileBytes: number;
  readonly keepFiles: number;
}

/** An append-only JSONL audit file, rotated at a size bound. */
export class JsonlAuditSink implements AuditSink {
  /** The live file; replaced by each rotation. */
  #handle: FileHandle;
  readonly #path: string;
  readonly #fsync: AuditFsyncPolicy;
  readonly #maxLineBytes: number;
  readonly #maxQueued: number;
  readonly #maxFileBytes: number;
  readonly #keepFiles: number;
  /** Bytes in the live file: its size at open, then what this sink appended. */
  #size: number;
  /** The live file was renamed to `<path>.1` already, but making the new one failed: the next rotation only makes it. */
  #retired = false;
  /** A rotation's renames are not synced yet (`fsync: 'none'`): the next flush syncs the folder. */
  #folderUnsynced = false;
  #queue: string[] = [];
  #dropped = 0;
  #draining: Promise<void> | undefined;
  #failure: HostError | undefined;
  /** The descriptor a write that failed part way (a full disk) left half a line in, until a newline ends it. */
  #brokenLine: FileHandle | undefined;
  #closed = false;

  private constructor(handle: FileHandle, path: string, size: number, settings: SinkSettings) {
    this.#handle = handle;
    this.#path = path;
    this.#size = size;
    this.#fsync = settings.fsync;
    this.#maxLineBytes = settings.maxLineBytes;
    this.#maxQueued = settings.maxQueued;
    this.#maxFileBytes = settings.maxFileBytes;
    this.#keepFiles = settings.keepFiles;
  }

  /**
   * Opens (creating it 0600 when missing) the audit file at `path` for
   * appending. An existing file must be a regular file of this user, with no
   * access for others and no other hard link (AUDIT_FILE_UNSAFE); a symbolic
   * link is refused, and so is a file in or below a folder another user owns
   * or may write without the sticky bit (nothing is created there). Options
   * out of range fail with HOST_INVALID_OPTIONS.
   */
  static open(path: string, options: JsonlAuditSinkOptions = {}): ResultAsync<JsonlAuditSink, HostError> {
    const bounds = checkedBounds(options);
    if ('code' in bounds) return errAsync(bounds);
    const fsync = options.fsync ?? (AUDIT_DEFAULTS.fsync as AuditFsyncPolicy);
    const folder = folderProblem(path);
    if (folder !== undefined) return errAsync(unsafe(path, folder));
    return ResultAsync.fromPromise(open(path, OPEN_FLAGS, AUDIT_DEFAULTS.fileMode), (cause) =>
      (cause as NodeJS.ErrnoException).code === 'ELOOP'
        ? unsafe(path, 'is a symbolic link')
        : (cause as NodeJS.ErrnoException).code === 'ENXIO'
          ? unsafe(path, 'is not a regular file')
          : ioError('Opening the audit file', path, cause),
    ).andThen((handle) =>
      checkFile(handle, path)
        .map((size) => new JsonlAuditSink(handle, path, size, { ...bounds, fsync }))
        .orElse((error) => ResultAsync.fromSafePromise(handle.close().catch(() => undefined)).andThen(() => errAsync(error))),
    );
  }

  /** The file's path. */
  get path(): string {
    return this.#path;
  }

  /** Records dropped so far because the queue was full, the sink closed, or a write failed. */
  get dropped(): number {
    return this.#dropped;
  }

  /** The last write failure, if any (the sink keeps trying with later records). */
  get failure(): HostError | undefined {
    return this.#failure;
  }

  /** Queues one record; never throws, never waits. */
  write(record: AuditRecord): void {
    if (this.#closed || this.#queue.length >= this.#maxQueued) {
      this.#dropped += 1;
      return;
    }
    this.#queue.push(auditLine(record, this.#maxLineBytes));
    this.#draining ??= this.#drain();
  }

  /** Resolves once every record queued so far is written and on disk; fails with the last write failure since the previous flush. */
  flush(): ResultAsync<void, HostError> {
    return ResultAsync.fromSafePromise(this.#settled())
      .andThen(() => ResultAsync.fromPromise(this.#syncLive(), (cause) => ioError('Syncing the audit file', this.#path, cause)))
      .andThen(() => {
      const failure = this.#failure;
      this.#failure = undefined;
      return failure === undefined ? okAsync(undefined) : errAsync(failure);
    });
  }

  /** Flushes, then closes the file; later records are dropped. */
  close(): ResultAsync<void, HostError> {
    if (this.#closed) return okAsync(undefined);
    const flushed = this.flush();
    this.#closed = true;
    return new ResultAsync(
      (async () => {
        const result = await flushed;
        await this.#handle.close().catch(() => undefined);
        return result;
      })(),
    );
  }

  /** Waits for the writer, starting it once more for records a failed batch left queued or for a gap to report. */
  async #settled(): Promise<void> {
    if (this.#queue.length > 0 || this.#dropped > 0) this.#draining ??= this.#drain();
    while (this.#draining !== undefined) await this.#draining;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#dropped > 0) {
      const lines = this.#queue;
      this.#queue = [];
      const gap = this.#dropped;
      if (gap > 0) lines.unshift(auditLine({ kind: 'gap', at: new Date().toISOString(), dropped: gap }, this.#maxLineBytes));
      let done = 0;
      let action = 'Writing the audit file';
      try {
        while (done < lines.length) {
          await this.#followLive();
          // Half a line a failed write left (review R15): ended first, or the next record (the gap record saying what
          // was lost, first of all) would be glued to it, one line no reader can parse.
          if (this.#brokenLine !== undefined) {
            if (this.#brokenLine === this.#handle) {
              await this.#handle.write('\n');
              this.#size += 1;
            }
            this.#brokenLine = undefined;
          }
          const { batch, count } = this.#fitting(lines, done);
          if (count === 0) {
            action = 'Rotating the audit file';
            await this.#rotate();
            action = 'Writing the audit file';
            continue;
          }
          let written = 0;
          try {
            while (written < batch.length) written += (await this.#handle.write(batch, written)).bytesWritten;
          } catch (cause) {
            if (written > 0) this.#brokenLine = this.#handle;
            throw cause;
          }
          this.#size += batch.length;
          if (this.#fsync === 'batch') await this.#handle.datasync();
          done += count;
        }
        this.#dropped -= gap;
      } catch (cause) {
        this.#failure = ioError(action, this.#path, cause);
        // The lines not written are counted for the next gap record; the gap line itself, once written, is settled.
        if (gap > 0 && done > 0) this.#dropped -= gap;
        this.#dropped += lines.length - done - (gap > 0 && done === 0 ? 1 : 0);
        break;
      }
    }
    this.#draining = undefined;
  }

  /**
   * The bytes of `lines` from `from` on that fit the live file under its
   * bound, and how many lines that is: all of them in one buffer (the usual
   * case, encoded once), else the longest run of whole lines, none when the
   * next line does not fit (the file must be rotated first).
   */
  #fitting(lines: readonly string[], from: number): { batch: Buffer; count: number } {
    const rest = from === 0 ? lines : lines.slice(from);
    const all = Buffer.from(`${rest.join('\n')}\n`, 'utf8');
    const room = this.#maxFileBytes - this.#size;
    if (all.length <= room) return { batch: all, count: rest.length };
    let bytes = 0;
    let count = 0;
    for (const line of rest) {
      const size = Buffer.byteLength(line, 'utf8') + 1;
      if (bytes + size > room) break;
      bytes += size;
      count += 1;
    }
    return { batch: all.subarray(0, bytes), count };
  }

  /**
   * Moves the live file to `<path>.1` (older ones one place up, the oldest
   * replaced) and makes a new, empty one at the path. The renames come before
   * the new file exists, so a crash in between leaves every record in one of
   * the files and the next open creates the live one. The retiring file is
   * synced first under either policy: `flush()` syncs only the live file.
   */
  async #rotate(): Promise<void> {
    if (!this.#retired) {
      if (this.#fsync === 'none') await this.#handle.datasync();
      for (let n = this.#keepFiles - 1; n >= 1; n -= 1) await renameIfThere(`${this.#path}.${n}`, `${this.#path}.${n + 1}`);
      await renameIfThere(this.#path, `${this.#path}.1`);
      // From here the descriptor writes to `<path>.1`: should the new file fail, the next try must not shift the files again.
      this.#retired = true;
    }
    // EEXIST: another sink on this file (see #followLive) made the new one between the renames and here; both write it.
    const next = await open(this.#path, NEW_FILE_FLAGS, AUDIT_DEFAULTS.fileMode).catch((cause: NodeJS.ErrnoException) =>
      cause.code === 'EEXIST' ? this.#openLive() : Promise.reject(cause),
    );
    const retiring = this.#handle;
    this.#handle = next;
    this.#size = (await next.stat()).size;
    this.#retired = false;
    await retiring.close().catch(() => undefined);
    if (this.#fsync === 'batch') await syncFolder(dirname(resolve(this.#path)));
    else this.#folderUnsynced = true;
  }

  /**
   * Points the sink at the file now at its path, and takes the live file's
   * size from the file itself. Another sink may write the same file: a second
   * gateway started with the same configuration (each stdio client starts
   * its own `serve`). Its rotation moves the file this descriptor writes to
   * `<path>.1`, and later rotations shift that file out and delete it while
   * this sink still appends to it: every record of this sink from then on
   * was lost, and the file grew past the bound this sink's own count did not
   * see. Checked before every batch (two stats), so at most one batch goes to
   * a file just rotated, where it is kept like any rotated record.
   */
  async #followLive(): Promise<void> {
    // Renamed away by this sink's own failed rotation: #rotate makes the new file.
    if (this.#retired) return;
    const [held, named] = await Promise.all([this.#handle.stat(), lstat(this.#path).catch(() => undefined)]);
    // Nothing at the path: another sink is between its renames and its new file; this descriptor's file is kept as `.1`.
    if (named === undefined || (named.ino === held.ino && named.dev === held.dev)) {
      this.#size = held.size;
      return;
    }
    let next: FileHandle;
    try {
      next = await this.#openLive();
    } catch (cause) {
      // A file there this sink may not use (a tool's rotation made it 0640, another user's): the records stay in the
      // file the descriptor holds, not dropped, and the next flush() says why.
      this.#failure = isHostError(cause) ? cause : ioError('Opening the audit file', this.#path, cause);
      this.#size = held.size;
      return;
    }
    const retiring = this.#handle;
    this.#handle = next;
    this.#size = (await next.stat()).size;
    await retiring.close().catch(() => undefined);
  }

  /** Opens the file at the path as `open` does (no link, this user's alone), for a file another sink made. */
  async #openLive(): Promise<FileHandle> {
    const next = await open(this.#path, OPEN_FLAGS, AUDIT_DEFAULTS.fileMode);
    const checked = await checkFile(next, this.#path);
    if (checked.isOk()) return next;
    await next.close().catch(() => undefined);
    throw checked.error;
  }

  /** Syncs the live file, and the folder when a rotation since the last sync left its renames unsynced. */
  async #syncLive(): Promise<void> {
    await this.#handle.datasync();
    if (this.#folderUnsynced) {
      this.#folderUnsynced = false;
      await syncFolder(dirname(resolve(this.#path)));
    }
  }
}
