/**
 * Whether two package trees hold the same files with the same bytes: how a
 * reinstall of a directory source (which has no package digest) is told
 * from a change. Modes are not compared: the install sets the pinned
 * executable's mode itself.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Every entry below `root`, as `d <path>` or `f <path> <size>`, sorted;
 * links and other types as `o <path>`. Names holding a `:` are left out: no
 * package entry can have one (see `validateEntryName`), so such a file in
 * an install root is one the host wrote there (its file list).
 */
async function listing(root: string, below = ''): Promise<string[]> {
  const out: string[] = [];
  const names = (await readdir(join(root, below))).filter((name) => !name.includes(':')).sort();
  for (const name of names) {
    const path = below === '' ? name : `${below}/${name}`;
    const info = await lstat(join(root, path));
    if (info.isDirectory()) {
      out.push(`d ${path}`);
      out.push(...(await listing(root, path)));
    } else if (info.isFile()) out.push(`f ${path} ${info.size}`);
    else out.push(`o ${path}`);
  }
  return out;
}

async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** True when both trees list the same entries and every file has the same bytes; false when either cannot be read. */
export async function sameTree(a: string, b: string): Promise<boolean> {
  try {
    const [left, right] = await Promise.all([listing(a), listing(b)]);
    if (left.length !== right.length || left.some((entry, i) => entry !== right[i])) return false;
    for (const entry of left) {
      if (!entry.startsWith('f ')) continue;
      const path = entry.slice(2, entry.lastIndexOf(' '));
      const [x, y] = await Promise.all([fileDigest(join(a, path)), fileDigest(join(b, path))]);
      if (x !== y) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * True when `root` holds exactly the entries a tree pin lists (see
 * `pinnedEntries`: `d <path>`, `f <path> <size> <sha256>`), every file with
 * the pinned bytes; false when it cannot be read.
 */
export async function sameAsPinned(root: string, pinned: ReadonlySet<string>): Promise<boolean> {
  // What the host wrote into the install root (a Python environment) has a `:` in its name, and `listing` leaves it out.
  const pathOf = (entry: string): string => (entry.startsWith('d ') ? entry.slice(2) : entry.slice(2, entry.lastIndexOf(' ', entry.lastIndexOf(' ') - 1)));
  const packageEntries = new Set([...pinned].filter((entry) => !pathOf(entry).split('/').some((name) => name.includes(':'))));
  try {
    const entries = await listing(root);
    if (entries.length !== packageEntries.size) return false;
    for (const entry of entries) {
      if (entry.startsWith('d ')) {
        if (!packageEntries.has(entry)) return false;
      } else if (!entry.startsWith('f ') || !packageEntries.has(`${entry} ${await fileDigest(join(root, entry.slice(2, entry.lastIndexOf(' '))))}`)) {
        return false;
      }
    }
    return true;
  } catch {
    return false;
  }
}
