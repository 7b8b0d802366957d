/**
 * The package limits while npm writes, not only after: npm unpacks the
 * whole tree before the staging copier counts anything, so a small tarball
 * that unpacks to a gigabyte (or to a million files) would land on the
 * host's disk first. While npm runs, its project tree and its cache are
 * walked again and again; once the project holds more file bytes than
 * `maxExtractedBytes` or more entries than `maxEntries`, or the cache more
 * bytes than `maxArchiveBytes`, npm is killed. A walk takes a bounded time
 * (it stops at the first limit crossed) and the next starts
 * `growthCheckIntervalMs` after it ends, so what npm can write past a limit
 * is what it writes in one interval plus one walk.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { PackageLimits } from './limits.js';
import settings from '../../etc/npm-install.json' with { type: 'json' };

/** Which limit npm crossed, with the amount seen when it was killed. */
export interface GrowthExceeded {
  readonly limit: keyof PackageLimits;
  readonly max: number;
  readonly seen: number;
}

interface Tally {
  bytes: number;
  entries: number;
}

/** Adds `dir`'s entries and file bytes to `tally`; stops as soon as `over` says a limit is crossed. */
async function walk(dir: string, tally: Tally, over: () => boolean): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (over()) return;
    tally.entries++;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await walk(path, tally, over);
    else if (entry.isFile()) tally.bytes += (await lstat(path).catch(() => undefined))?.size ?? 0;
  }
}

/** One walk of npm's project and cache, and the first limit crossed in it. */
async function crossed(project: string, cache: string | undefined, limits: PackageLimits): Promise<GrowthExceeded | undefined> {
  const tree: Tally = { bytes: 0, entries: 0 };
  await walk(project, tree, () => tree.bytes > limits.maxExtractedBytes || tree.entries > limits.maxEntries);
  if (tree.bytes > limits.maxExtractedBytes) return { limit: 'maxExtractedBytes', max: limits.maxExtractedBytes, seen: tree.bytes };
  if (tree.entries > limits.maxEntries) return { limit: 'maxEntries', max: limits.maxEntries, seen: tree.entries };
  if (cache === undefined) return undefined;
  const cached: Tally = { bytes: 0, entries: 0 };
  await walk(cache, cached, () => cached.bytes > limits.maxArchiveBytes);
  return cached.bytes > limits.maxArchiveBytes ? { limit: 'maxArchiveBytes', max: limits.maxArchiveBytes, seen: cached.bytes } : undefined;
}

/**
 * Watches `project` and `cache` while npm runs; `onExceeded` is called once
 * (it kills npm) when a limit is crossed. Returns the function that stops
 * watching, which resolves once no walk is running. Without a cache only the
 * tree is watched (pip writing a package's private environment).
 */
export function watchGrowth(project: string, cache: string | undefined, limits: PackageLimits, onExceeded: (exceeded: GrowthExceeded) => void): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const round = (): void => {
    running = crossed(project, cache, limits).then((exceeded) => {
      if (stopped) return;
      if (exceeded !== undefined) {
        stopped = true;
        onExceeded(exceeded);
        return;
      }
      timer = setTimeout(round, settings.growthCheckIntervalMs);
    });
  };
  timer = setTimeout(round, settings.growthCheckIntervalMs);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
