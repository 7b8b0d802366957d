/**
 * The built-in audit sink: an append-only JSON Lines file, mode 0600.
 *
 * `write` only queues the record's line, so a call never waits for the disk.
 * One writer drains the queue: every line queued meanwhile goes out in one
 * `write(2)` on a descriptor opened with O_APPEND, so lines never interleave
 * with another writer's and a crash can lose the tail, never half a line in
 * the middle. With `fsync: 'batch'` (the default) each such write is followed
 * by `fdatasync`, so a record is on disk one batch after it was queued; with
 * `'none'` the kernel decides, and only `flush()` and `close()` sync. A full
 * queue drops records and writes a `gap` record saying how many once it can.
 */
import { constants, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { replaceableFolder } from '../sandbox/replaceableFolders.js';
import { hostError, type HostError } from '../errors/HostError.js';
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
}

// O_NONBLOCK: opening a FIFO planted at the path for writing would otherwise wait for a reader forever (and hold a
// thread-pool thread); with it the open fails (ENXIO) or returns at once and the fstat check refuses it. No effect on a regular file.
const OPEN_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function unsafe(path: string, reason: string): HostError {
  return hostError('AUDIT_FILE_UNSAFE', `the audit file ${path} ${reason}`, { details: { path, reason } });
}

/** Refuses a file others could read or that is not ours alone: a link, a device, another user's file. */
function checkFile(handle: FileHandle, path: string): ResultAsync<FileHandle, HostError> {
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
    return reason === undefined ? okAsync(handle) : errAsync(unsafe(path, reason));
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

/** An append-only JSONL audit file. */
export class JsonlAuditSink implements AuditSink {
  readonly #handle: FileHandle;
  readonly #path: string;
  readonly #fsync: AuditFsyncPolicy;
  readonly #maxLineBytes: number;
  readonly #maxQueued: number;
  #queue: string[] = [];
  #dropped = 0;
  #draining: Promise<void> | undefined;
  #failure: HostError | undefined;
  #closed = false;

  private constructor(handle: FileHandle, path: string, fsync: AuditFsyncPolicy, maxLineBytes: number, maxQueued: number) {
    this.#handle = handle;
    this.#path = path;
    this.#fsync = fsync;
    this.#maxLineBytes = maxLineBytes;
    this.#maxQueued = maxQueued;
  }

  /**
   * Opens (creating it 0600 when missing) the audit file at `path` for
   * appending. An existing file must be a regular file of this user, with no
   * access for others and no other hard link (AUDIT_FILE_UNSAFE); a symbolic
   * link is refused, and so is a file in or below a folder another user owns
   * or may write without the sticky bit (nothing is created there).
   */
  static open(path: string, options: JsonlAuditSinkOptions = {}): ResultAsync<JsonlAuditSink, HostError> {
    const maxLineBytes = options.maxLineBytes ?? AUDIT_DEFAULTS.maxLineBytes;
    if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < AUDIT_DEFAULTS.minLineBytes) {
      return errAsync(hostError('HOST_INVALID_OPTIONS', `option maxLineBytes must be a whole number of at least ${AUDIT_DEFAULTS.minLineBytes}`, { details: { option: 'maxLineBytes' } }));
    }
    const maxQueued = options.maxQueuedRecords ?? AUDIT_DEFAULTS.maxQueuedRecords;
    if (!Number.isSafeInteger(maxQueued) || maxQueued < 1) {
      return errAsync(hostError('HOST_INVALID_OPTIONS', 'option maxQueuedRecords must be a positive whole number', { details: { option: 'maxQueuedRecords' } }));
    }
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
        .map((checked) => new JsonlAuditSink(checked, path, fsync, maxLineBytes, maxQueued))
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
    return ResultAsync.fromSafePromise(this.#settled()).andThen(() =>
      ResultAsync.fromPromise(this.#handle.datasync(), (cause) => ioError('Syncing the audit file', this.#path, cause)),
    ).andThen(() => {
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
      const batch = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
      try {
        let written = 0;
        while (written < batch.length) written += (await this.#handle.write(batch, written)).bytesWritten;
        if (this.#fsync === 'batch') await this.#handle.datasync();
        this.#dropped -= gap;
      } catch (cause) {
        this.#failure = ioError('Writing the audit file', this.#path, cause);
        this.#dropped += lines.length - (gap > 0 ? 1 : 0);
        break;
      }
    }
    this.#draining = undefined;
  }
}
