/**
 * Makes an install root durable before the catalog names it: every file and
 * directory below it is fsynced, then the directories it was moved into.
 * Used when the host asks for durable installs (`durableInstall`); without
 * it a power loss soon after the commit can leave the committed plugin's
 * files empty or missing (the catalog itself is always fsynced).
 */
import { constants } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import settings from '../../etc/durable-install.json' with { type: 'json' };

const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;
const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

async function fsyncPath(path: string, flags: number): Promise<void> {
  const handle = await open(path, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Fsyncs every regular file and directory of the tree at `root` (a pinned
 * tree holds nothing else), then each of `parents`, whose entries name the
 * tree: `settings.fsyncsInFlight` at a time. Rejects with the first failure.
 */
export async function syncTree(root: string, parents: readonly string[]): Promise<void> {
  const directories = [root];
  const files: string[] = [];
  for (let at = 0; at < directories.length; at++) {
    const directory = directories[at]!;
    for (const entry of await readdir(directory, { withFileTypes: true })) {
      if (entry.isDirectory()) directories.push(join(directory, entry.name));
      else if (entry.isFile()) files.push(join(directory, entry.name));
    }
  }
  const work: (readonly [string, number])[] = [...files.map((path) => [path, FILE_FLAGS] as const), ...directories.map((path) => [path, DIRECTORY_FLAGS] as const)];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < work.length) {
      const [path, flags] = work[next++]!;
      await fsyncPath(path, flags);
    }
  };
  await Promise.all(Array.from({ length: Math.min(settings.fsyncsInFlight, work.length) }, worker));
  // The entries that name the tree are made durable once what they name is.
  for (const parent of parents) await fsyncPath(parent, DIRECTORY_FLAGS);
}
