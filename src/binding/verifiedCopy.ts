/**
 * The private copy a spawn executes. While the installed file is hashed,
 * every hashed chunk is written to a new file in a host-private directory;
 * once the digest matches, the copy is reopened read-only and its name
 * removed, so the only way to reach those bytes is the descriptor handed to
 * the child. Neither a rename nor an in-place write of the installed file
 * after hashing can change what runs.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { chmod, lstat, mkdir, open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import copySettings from '../../etc/verified-copy.json' with { type: 'json' };
import type { HostError } from '../errors/HostError.js';
import type { Random } from '../ports/ports.js';
import { sha256OfHandle } from './sha256.js';
import { ioError } from '../errors/ioError.js';

/** The hashed bytes as an unnamed read-only file, and their digest. */
export interface VerifiedCopy {
  /** SHA-256 (hex) of the bytes copied. */
  readonly sha256: string;
  /** Read-only handle on the unnamed copy (its name is already removed once `seal` ran). */
  readonly handle: FileHandle;
}

/** Creates `dir` (mode 0700) if needed and checks it is a real directory of ours that nobody else can enter. */
export async function preparePrivateDir(dir: string): Promise<Result<void, HostError>> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const s = await lstat(dir);
    if (!s.isDirectory()) return err(ioError('Using copy directory', dir, Object.assign(new Error('not a directory'), { code: 'ENOTDIR' })));
    if ((s.mode & 0o077) !== 0) await chmod(dir, 0o700);
    return ok(undefined);
  } catch (e) {
    return err(ioError('Preparing copy directory', dir, e));
  }
}

/**
 * Streams `source` into a fresh file under `dir` while hashing it, then
 * returns the digest with a read-only handle on the copy. `accept(digest)`
 * decides whether the copy is kept; a refused copy is deleted.
 */
export async function copyWhileHashing(
  source: FileHandle,
  dir: string,
  random: Random,
  accept: (sha256: string) => boolean,
): Promise<Result<VerifiedCopy | { readonly refused: string }, HostError>> {
  const name = join(dir, `.verified-${Buffer.from(random.bytes(12)).toString('hex')}`);
  const small = smallCopy(source, name, accept);
  if (small !== undefined) return small;
  let writer: FileHandle | undefined;
  try {
    // Readable and executable by everyone: a plugin running as its own user (root host) execs it through the inherited
    // descriptor, which checks the mode; nobody else can reach it, as it lives in a 0700 directory until unlinked.
    writer = await open(name, 'wx', 0o555);
    const out = writer;
    const sha256 = await sha256OfHandle(source, async (chunk) => {
      let written = 0;
      while (written < chunk.length) written += (await out.write(chunk, written, chunk.length - written)).bytesWritten;
    });
    if (!accept(sha256)) {
      await writer.close();
      writer = undefined;
      await unlink(name);
      return ok({ refused: sha256 });
    }
    const reader = await open(name, 'r');
    // Close the writer before anyone execs the copy: an open writer makes exec fail with ETXTBSY.
    const closing = writer.close();
    writer = undefined;
    await Promise.all([unlink(name), closing]);
    return ok({ sha256, handle: reader });
  } catch (e) {
    await writer?.close().catch(() => undefined);
    await unlink(name).catch(() => undefined);
    return err(ioError('Copying verified bytes to', name, e));
  }
}

let smallCopyBuffer: Buffer | undefined;

/**
 * {@link copyWhileHashing} of a file of at most `synchronousMaxBytes`
 * (`etc/verified-copy.json`) with synchronous calls but for the reopening:
 * the same bytes hashed and written, one turn of the event loop instead of
 * one per read, write, open, close and unlink (a spawn waits for each, and
 * on a loop busy with the launch every one costs a turn). Undefined for a
 * larger file, which streams.
 */
function smallCopy(source: FileHandle, name: string, accept: (sha256: string) => boolean): Promise<Result<VerifiedCopy | { readonly refused: string }, HostError>> | undefined {
  let writer: number | undefined;
  try {
    if (fstatSync(source.fd).size > copySettings.synchronousMaxBytes) return undefined;
    smallCopyBuffer ??= Buffer.allocUnsafe(copySettings.synchronousChunkBytes);
    const buffer = smallCopyBuffer;
    writer = openSync(name, 'wx', 0o555);
    const hash = createHash('sha256');
    // Read to the end, however long the file grew since its size was taken: the copy holds exactly the hashed bytes.
    for (let position = 0, read: number; (read = readSync(source.fd, buffer, 0, buffer.length, position)) > 0; position += read) {
      hash.update(buffer.subarray(0, read));
      for (let written = 0; written < read; ) written += writeSync(writer, buffer, written, read - written);
    }
    const sha256 = hash.digest('hex');
    if (!accept(sha256)) {
      closeSync(writer);
      writer = undefined;
      unlinkSync(name);
      return Promise.resolve(ok({ refused: sha256 }));
    }
    const kept = writer;
    writer = undefined;
    return open(name, 'r').then(
      (reader): Result<VerifiedCopy, HostError> => {
        try {
          // Closed before anyone execs the copy: an open writer makes exec fail with ETXTBSY.
          closeSync(kept);
          unlinkSync(name);
          return ok({ sha256, handle: reader });
        } catch (e) {
          void reader.close().catch(() => undefined);
          unlinkNoThrow(name);
          return err(ioError('Copying verified bytes to', name, e));
        }
      },
      (e: unknown) => {
        closeNoThrow(kept);
        unlinkNoThrow(name);
        return err(ioError('Copying verified bytes to', name, e));
      },
    );
  } catch (e) {
    if (writer !== undefined) closeNoThrow(writer);
    unlinkNoThrow(name);
    return Promise.resolve(err(ioError('Copying verified bytes to', name, e)));
  }
}

function closeNoThrow(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Closed already.
  }
}

function unlinkNoThrow(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Never created, or already gone.
  }
}

/**
 * Writes `contents` to a fresh file under `dir` and returns a read-only
 * handle on it with its name already removed: a file only the holder of the
 * descriptor (and the child it is handed to) can read, and nobody can change.
 */
export async function writeUnnamedFile(dir: string, random: Random, contents: string): Promise<Result<FileHandle, HostError>> {
  const name = join(dir, `.unnamed-${Buffer.from(random.bytes(12)).toString('hex')}`);
  let reader: FileHandle | undefined;
  try {
    // Readable by everyone for the same reason as the verified copies: reopened by a plugin's user through /proc/self/fd.
    const writer = await open(name, 'wx', 0o444);
    try {
      await writer.writeFile(contents);
    } finally {
      await writer.close();
    }
    reader = await open(name, 'r');
    await unlink(name);
    return ok(reader);
  } catch (e) {
    await reader?.close().catch(() => undefined);
    await unlink(name).catch(() => undefined);
    return err(ioError('Writing', name, e));
  }
}
