/**
 * Opening a file so that what was checked is what was opened: every path
 * component is refused if it is a link, the final open does not follow links,
 * and the descriptor's own path (read back from /proc) must be the expected
 * one, which catches a directory swapped for a link between the checks.
 */
import type { BigIntStats } from 'node:fs';
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { errnoOf, ioError } from '../errors/ioError.js';
import { TREE_OPEN_FLAGS } from './identitySweep.js';
import { untrusted } from './untrusted.js';

/** A regular file opened read-only, with the status taken from its descriptor. */
export interface OpenedFile {
  /** The open handle; the caller closes it. */
  readonly handle: FileHandle;
  /** `fstat` of the handle. */
  readonly stat: BigIntStats;
  /** The absolute path that was opened. */
  readonly path: string;
}

/** The path the kernel has for an open descriptor (Linux), or the real path of `path` elsewhere. */
async function pathOfDescriptor(handle: FileHandle, path: string): Promise<string> {
  if (process.platform === 'linux') return readlink(`/proc/self/fd/${handle.fd}`);
  return realpath(path);
}

/** Opens `path` without following a final link and checks it is a regular file nobody else may write. */
export async function openRegularFile(path: string): Promise<Result<OpenedFile, HostError>> {
  let handle: FileHandle;
  try {
    handle = await open(path, TREE_OPEN_FLAGS);
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ELOOP') return err(untrusted('link', `${path} is a symbolic link.`, { path }));
    if (code === 'ENOENT' || code === 'ENOTDIR') return err(untrusted('missing', `${path} does not exist.`, { path }));
    return err(ioError('Opening', path, e));
  }
  const checked = await checkOpened(handle, path);
  if (checked.isErr()) await handle.close().catch(() => undefined);
  return checked;
}

async function checkOpened(handle: FileHandle, path: string): Promise<Result<OpenedFile, HostError>> {
  try {
    const [actual, stat] = await Promise.all([pathOfDescriptor(handle, path), handle.stat({ bigint: true })]);
    if (actual === `${path} (deleted)`) {
      return err(untrusted('changed_during_verification', `${path} was replaced while it was being opened.`, { path }));
    }
    if (actual !== path) {
      return err(untrusted('outside_install_root', `${path} resolved to ${actual} while it was opened.`, { path, resolved: actual }));
    }
    if (!stat.isFile()) return err(untrusted('not_regular_file', `${path} is not a regular file.`, { path }));
    const uid = process.getuid?.();
    if ((stat.mode & 0o022n) !== 0n || (uid !== undefined && stat.uid !== BigInt(uid) && stat.uid !== 0n)) {
      return err(
        untrusted('unsafe_permissions', `${path} may be written by another user (mode ${(stat.mode & 0o7777n).toString(8)}, uid ${stat.uid}).`, {
          path,
          mode: Number(stat.mode & 0o7777n),
          uid: Number(stat.uid),
        }),
      );
    }
    return ok({ handle, stat, path });
  } catch (e) {
    return err(ioError('Checking', path, e));
  }
}

/**
 * Opens `<root>/<relative>` (relative already normalized) after checking that
 * no component below the root is a link. `root` must be a real path.
 */
export async function openInsideRoot(root: string, relative: string): Promise<Result<OpenedFile, HostError>> {
  const segments = relative.split('/');
  const paths = segments.map((_, index) => join(root, ...segments.slice(0, index + 1)));
  // Every component is looked at at once, and judged in order: the first refused one is reported, as one by one.
  const looked = await Promise.allSettled(paths.map((path) => lstat(path)));
  for (const [index, current] of paths.entries()) {
    try {
      const outcome = looked[index]!;
      if (outcome.status === 'rejected') throw outcome.reason;
      const stat = outcome.value;
      if (stat.isSymbolicLink()) {
        return err(untrusted('link', `${current} is a symbolic link; links inside an install root are refused.`, { path: current }));
      }
      if (index < segments.length - 1 && !stat.isDirectory()) {
        return err(untrusted('missing', `${current} is not a directory.`, { path: current }));
      }
    } catch (e) {
      const code = errnoOf(e);
      if (code === 'ENOENT' || code === 'ENOTDIR') return err(untrusted('missing', `${current} does not exist.`, { path: current }));
      return err(ioError('Inspecting', current, e));
    }
  }
  return openRegularFile(paths[paths.length - 1]!);
}

/** The first bytes of an open file (at most `n`). */
export async function readHead(handle: FileHandle, n: number): Promise<Buffer> {
  const buffer = Buffer.alloc(n);
  const { bytesRead } = await handle.read(buffer, 0, n, 0);
  return buffer.subarray(0, bytesRead);
}
