/**
 * What an install killed mid-way leaves behind, and how it is collected.
 *
 * Every staging directory (`staging/stage-*`, before 2026-11 `staging/.stage-*`) holds an owner record
 * ({@link STAGE_OWNER_FILE}: pid, host, start time), written right after the
 * directory is created and written again, naming the install root, before
 * the staged package is renamed into `plugins/<id>/<version>-<nonce>`. A
 * collection deletes a staging directory only when its owner is dead by the
 * schema pins' rule ({@link isStale}), and an install root only when the lock
 * does not name it and no live staging owner does.
 *
 * The order of the reads is what makes it safe against an install running
 * in another process: install roots are listed first, then the live owners
 * are read, then the catalog. A root seen by the listing was named by its
 * owner before it was renamed into place; if that owner is gone by the time
 * the owners are read, its install already committed (the catalog read
 * after names the root) or undid itself (it removed the root).
 */
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rename, rmdir, writeFile } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { dirname, join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import type { CatalogStore } from '../catalog/CatalogStore.js';
import type { HostError } from '../errors/HostError.js';
import type { Clock } from '../ports/ports.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';
import { toHostError } from './refusal.js';
import { PIN_STALE_MS, isStale } from './schemaPins.js';
import { removeTree } from './removeTree.js';

/** The owner record inside a staging directory. */
export const STAGE_OWNER_FILE = 'owner.json';
/**
 * How staging directories are named: `mkdtemp(join(stagingDir, STAGE_PREFIX))`.
 * Not a hidden name: a server's introspection start runs, with its data
 * directory, below its install's staging directory, and a server that
 * refuses a path with a hidden component (obsidian-mcp@2.0.1 refuses such a
 * vault) refused the introspection's data directory, though not the
 * plugin's own (`data/<id>`).
 */
export const STAGE_PREFIX = 'stage-';
// Installs of earlier versions named their staging directories so: a dead one is still collected.
const LEGACY_STAGE_PREFIX = '.stage-';

/** Makes a fresh, empty staging directory under `stagingRoot` (created if missing); HOST_IO_ERROR when it cannot. */
export async function makeStage(stagingRoot: string): Promise<Result<string, HostError>> {
  try {
    await mkdir(stagingRoot, { recursive: true });
    return ok(await mkdtemp(join(stagingRoot, STAGE_PREFIX)));
  } catch (cause) {
    return err(toHostError(cause, 'Creating a staging directory in', stagingRoot));
  }
}

interface StageOwner {
  readonly pid: number;
  readonly hostname: string;
  readonly started_at_ms: number;
  /** The install root this install renames its package into, once it is about to. */
  readonly install_root?: string;
}

/** What one collection deleted. */
export interface CollectedLeftovers {
  /** Staging directories of dead installs (names under `staging/`). */
  readonly staging: string[];
  /** Install roots no lock row and no live install names (`<id>/<dir>` under `plugins/`). */
  readonly installRoots: string[];
}

async function writeOwner(stage: string, owner: StageOwner): Promise<void> {
  // Written aside and renamed: a reader never sees half a record.
  const next = join(stage, `${STAGE_OWNER_FILE}.next`);
  await writeFile(next, JSON.stringify(owner), { mode: 0o600 });
  await rename(next, join(stage, STAGE_OWNER_FILE));
}

/** Records the current process as the owner of a fresh staging directory. */
export function claimStage(stage: string, clock: Clock): Promise<void> {
  return writeOwner(stage, { pid: process.pid, hostname: osHostname(), started_at_ms: clock.now() });
}

/** Adds the install root to the owner record of the staging directory holding `packageRoot`; call before the rename. */
export async function claimInstallRoot(packageRoot: string, installRoot: string): Promise<void> {
  const stage = dirname(packageRoot);
  const owner = await readOwner(stage);
  if (owner === undefined) throw new Error(`staging directory ${stage} has no owner record`);
  await writeOwner(stage, { ...owner, install_root: installRoot });
}

async function readOwner(stage: string): Promise<StageOwner | undefined> {
  try {
    const v = JSON.parse(await readFile(join(stage, STAGE_OWNER_FILE), 'utf8')) as Partial<StageOwner>;
    if (typeof v.pid !== 'number' || typeof v.hostname !== 'string' || typeof v.started_at_ms !== 'number') return undefined;
    if (v.install_root !== undefined && typeof v.install_root !== 'string') return undefined;
    return v as StageOwner;
  } catch {
    return undefined;
  }
}

const listDir = (dir: string): Promise<string[]> =>
  readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return [];
    throw e;
  });

const isDirectory = (path: string): Promise<boolean> => lstat(path).then((s) => s.isDirectory(), () => false);

/** Every `plugins/<id>/<dir>` that is a real directory (not a link). */
async function listInstallRoots(pluginsDir: string): Promise<string[]> {
  const roots: string[] = [];
  for (const id of await listDir(pluginsDir)) {
    if (!(await isDirectory(join(pluginsDir, id)))) continue;
    for (const dir of await listDir(join(pluginsDir, id))) {
      if (await isDirectory(join(pluginsDir, id, dir))) roots.push(join(pluginsDir, id, dir));
    }
  }
  return roots;
}

/**
 * The staging directories, split into those of live installs (with the
 * install roots they name) and those left by dead ones. A directory without
 * a readable owner record is taken as live unless it is older than
 * {@link PIN_STALE_MS}: its owner may be between creating it and writing
 * the record.
 */
async function readStages(stagingDir: string, now: number): Promise<{ live: Set<string>; dead: string[] }> {
  const host = osHostname();
  const live = new Set<string>();
  const dead: string[] = [];
  for (const name of (await listDir(stagingDir)).filter((n) => n.startsWith(STAGE_PREFIX) || n.startsWith(LEGACY_STAGE_PREFIX))) {
    const stage = join(stagingDir, name);
    const owner = await readOwner(stage);
    if (owner === undefined) {
      const info = await lstat(stage).catch(() => undefined);
      if (info !== undefined && info.isDirectory() && now - info.mtimeMs > PIN_STALE_MS) dead.push(name);
      continue;
    }
    if (isStale(owner, host, now)) dead.push(name);
    else if (owner.install_root !== undefined) live.add(owner.install_root);
  }
  return { live, dead };
}

/**
 * Deletes the staging directories of dead installs and the install roots
 * that neither the lock nor a live install names (see the module comment
 * for why the reads come in this order). Safe to run at any time, from any
 * number of processes.
 */
export async function collectInstallLeftovers(layout: ProfileLayout, store: CatalogStore, clock: Clock): Promise<CollectedLeftovers> {
  const roots = await listInstallRoots(layout.pluginsDir);
  const stages = await readStages(layout.stagingDir, clock.now());
  const snapshot = await store.snapshot();
  if (snapshot.isErr()) throw snapshot.error;
  const referenced = new Set(Object.values(snapshot.value.contents.plugins).map((p) => p.binding.install_root));
  // A lock may record the root through the real path of the plugins directory.
  const realPlugins = await realpath(layout.pluginsDir).catch(() => layout.pluginsDir);
  const named = (root: string): boolean => {
    const real = join(realPlugins, root.slice(layout.pluginsDir.length + 1));
    return referenced.has(root) || referenced.has(real) || stages.live.has(root) || stages.live.has(real);
  };
  const installRoots: string[] = [];
  for (const root of roots) {
    if (named(root)) continue;
    // However deep it goes: a tree past the path limit failed rm, and with it every later collection.
    await removeTree(root);
    await rmdir(dirname(root)).catch(() => undefined);
    installRoots.push(root.slice(layout.pluginsDir.length + 1));
  }
  for (const name of stages.dead) await removeTree(join(layout.stagingDir, name));
  return { staging: stages.dead, installRoots };
}
