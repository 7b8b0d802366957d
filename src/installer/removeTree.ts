/**
 * Deleting a directory tree however deep it goes. Node's recursive `rm`
 * names every entry by its full path, so a tree deeper than the system's
 * path limit (which a plugin or an introspected server can build in its
 * writable directory with relative `mkdir` and `chdir`, or which an old
 * install left) fails it with ENAMETOOLONG, and whatever collects leftovers
 * would then fail on it at every run. Here a directory found more than half
 * the limit below the root is moved up to the root under a short name, which
 * makes its subtree that much shallower, and `rm` is tried again.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MAX_PATH_BYTES } from './installPath.js';

// Deeper than this below the root, a directory is moved up: readdir and rename still take its path (under the limit).
const LIFT_BYTES = Math.floor(MAX_PATH_BYTES / 2);

/**
 * Removes `root` and everything below it, as `rm -rf` does; a missing root is no error.
 * Directories its writer made unreadable or unwritable (a server's introspection start, a `.pth` line run while pip
 * installs, on a host that is not root: mode 000 on a directory of its own) are given their owner's access back
 * first, once: without it rm failed with EACCES, the install with HOST_IO_ERROR, and the tree, as large as its
 * writer made it, stayed for good, failing every later collection of leftovers.
 */
export async function removeTree(root: string): Promise<void> {
  let unlocked = false;
  for (let lifted = 0; ; lifted++) {
    try {
      await rm(root, { recursive: true, force: true });
      return;
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if ((code === 'EACCES' || code === 'EPERM') && !unlocked) {
        unlocked = true;
        await unlockDirectories(root);
        continue;
      }
      if (code !== 'ENAMETOOLONG' || !(await liftOne(root, lifted))) throw cause;
    }
  }
}

/**
 * Gives every directory below `root` (itself included) mode 0700, never
 * following a link: what the caller removes is a tree nothing runs in any
 * more (its writer's sandbox is gone), so no directory is swapped for a link
 * between the check and the change. A directory it cannot change (another
 * user's, on a host that is not root) is left as it is.
 */
async function unlockDirectories(root: string): Promise<void> {
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    const entry = await lstat(dir).catch(() => undefined);
    if (entry?.isDirectory() !== true) continue;
    await chmod(dir, 0o700).catch(() => undefined);
    for (const child of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (child.isDirectory()) pending.push(join(dir, child.name));
    }
  }
}

/** Moves one directory lying more than {@link LIFT_BYTES} below `root` up to `root`; false when there is none. */
async function liftOne(root: string, count: number): Promise<boolean> {
  const rootBytes = Buffer.byteLength(root);
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const child = join(dir, entry.name);
      if (Buffer.byteLength(child) - rootBytes > LIFT_BYTES) {
        await rename(child, join(root, `.lifted-${count}-${randomBytes(4).toString('hex')}`));
        return true;
      }
      pending.push(child);
    }
  }
  return false;
}
