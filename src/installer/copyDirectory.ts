import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { safeEntryName } from './entryName.js';
import { refuse, refuseEntry } from './refusal.js';
import type { StagingTree } from './StagingTree.js';

const CHUNK_BYTES = 1024 * 1024;
const OPEN_SOURCE = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

const linkRefused = (name: string, target?: string): never =>
  refuse(
    'PLUGIN_EXECUTABLE_UNTRUSTED',
    target === undefined
      ? `package entry '${name}' is a symbolic link where a file was seen`
      : `package entry '${name}' is a symbolic link to '${target}', outside the package; only links that stay inside it are accepted (and left out)`,
    { details: { reason: 'symlink', entry: name, ...(target === undefined ? {} : { target }) } },
  );

/** Yields views of `buffer`, each overwritten by the next read: the consumer must be done with one before asking for the next. */
async function* chunksOf(handle: FileHandle, buffer: Buffer): AsyncGenerator<Uint8Array> {
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
    if (bytesRead === 0) return;
    yield buffer.subarray(0, bytesRead);
  }
}

/** The path the kernel has for an open descriptor (Linux), or the real path of `path` elsewhere. */
async function pathOfDescriptor(handle: FileHandle, path: string): Promise<string> {
  return process.platform === 'linux' ? readlink(`/proc/self/fd/${handle.fd}`) : realpath(path);
}

/**
 * Opens a file seen by the walk without following links, and checks that the
 * descriptor is the same regular file the walk saw (same device and inode)
 * and still at its path in the tree. A file swapped for a link after the walk
 * fails with ELOOP; one swapped for another file fails the identity check. A
 * folder above it swapped for a link before the walk reached the file leads
 * the walk's own lstat there too, so only the descriptor's path, read back
 * from the kernel, tells a file outside the tree. Either way only files that
 * were inside the tree are read.
 */
async function openSeen(path: string, name: string, seen: Stats): Promise<FileHandle> {
  const handle = await open(path, OPEN_SOURCE).catch((cause: unknown) => {
    if ((cause as NodeJS.ErrnoException).code === 'ELOOP') linkRefused(name);
    throw cause;
  });
  const stat = await handle.stat();
  if (!stat.isFile() || stat.dev !== seen.dev || stat.ino !== seen.ino) {
    await handle.close();
    refuseEntry('conflict', name, `package entry '${name}' changed while it was being copied`);
  }
  const opened = await pathOfDescriptor(handle, path).catch(() => undefined);
  if (opened !== path) {
    await handle.close();
    linkRefused(name);
  }
  return handle;
}

async function copyFile(path: string, name: string, seen: Stats, tree: StagingTree, buffer: Buffer): Promise<void> {
  const safe = safeEntryName('package', name);
  const handle = await openSeen(path, name, seen);
  try {
    await tree.addFile(name, safe, (seen.mode & 0o111) !== 0, seen.size, chunksOf(handle, buffer));
  } finally {
    await handle.close();
  }
}

async function copyEntries(directory: string, prefix: string, tree: StagingTree, buffer: Buffer): Promise<void> {
  const names = (await readdir(directory)).sort();
  for (const base of names) {
    const path = join(directory, base);
    const name = prefix === '' ? base : `${prefix}/${base}`;
    tree.countEntry(name);
    const stat = await lstat(path);
    if (stat.isSymbolicLink()) {
      const target = await readlink(path);
      if (!tree.dropLink(name, safeEntryName('package', name), target)) linkRefused(name, target);
    } else if (stat.isDirectory()) {
      await tree.addDirectory(name, safeEntryName('package', name, `${name}/`));
      await copyEntries(path, name, tree, buffer);
    } else if (stat.isFile()) {
      await copyFile(path, name, stat, tree, buffer);
    } else {
      refuseEntry('special_file', name, `package entry '${name}' is not a regular file or directory (device, FIFO or socket)`);
    }
  }
}

/**
 * Copies a local package directory into the staging tree. The walk uses
 * `lstat`, so links are seen as links and never followed: one whose target
 * stays inside the package (npm's `node_modules/.bin/*`) is left out, one that
 * leads outside is refused (`PLUGIN_EXECUTABLE_UNTRUSTED`, the code GUM gives
 * a link where an executable should be); devices, FIFOs
 * and sockets are refused as `PLUGIN_ARCHIVE_INVALID`. The same entry and
 * byte limits as for archives apply. Executable bits are kept as 0755, every
 * other file becomes 0644.
 */
export async function copyDirectory(source: string, tree: StagingTree): Promise<void> {
  // One read buffer for the whole walk: files are copied one after another, each fully written before the next is opened.
  // The walk's paths are the real ones, which each opened file's own path is compared with.
  await copyEntries(await realpath(source), '', tree, Buffer.allocUnsafe(CHUNK_BYTES));
}
