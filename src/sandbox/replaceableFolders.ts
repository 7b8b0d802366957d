/**
 * Who else could put another file or folder at a path: a user who can
 * rename entries in a folder above it. The rule ssh's StrictModes applies to
 * the path of `authorized_keys`, used for the Landlock launcher the host runs
 * (sandbox/launcherBinary.ts) and for the profile directory
 * (profile/profileAncestors.ts).
 */
import { lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** A folder above a path that another user could change, and why. */
export type ReplaceableFolder =
  /** The path (or a link on the way) cannot be resolved. */
  | { readonly reason: 'unresolved'; readonly folder: string; readonly cause: unknown }
  /** A folder on the way is gone (it was removed while being checked). */
  | { readonly reason: 'missing'; readonly folder: string }
  /** Owned by a user other than root and `uid`, who can rename anything in it. */
  | { readonly reason: 'foreign_owner'; readonly folder: string; readonly ownerUid: number; readonly mode: string }
  /** Writable by its group or others without the sticky bit, which would let only an entry's owner rename it. */
  | { readonly reason: 'writable_by_others'; readonly folder: string; readonly mode: string };

/** Every folder from `path`'s parent up to `/`, innermost first. */
export function foldersAbove(path: string): string[] {
  const folders: string[] = [];
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    folders.push(dir);
    if (dir === dirname(dir)) return folders;
  }
}

/**
 * Every folder the resolution of `path` looks a name up in, the folders
 * holding the links on the way included, as the kernel walks it: a link's
 * target is walked from the folder holding the link (or `/`). The folders of
 * the path as named and of its real path miss a link in the middle of a
 * chain (`a -> /open/b -> /safe`): `/open`, where another user could put
 * another `b`, is neither (review R12 F7). At most 40 links, as Linux.
 */
function resolutionFolders(path: string): string[] {
  const folders = new Set<string>();
  let pending = path.split('/').filter((name) => name !== '');
  let current = '/';
  let links = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      current = dirname(current);
      continue;
    }
    folders.add(current);
    const next = join(current, name);
    if (lstatSync(next, { throwIfNoEntry: false })?.isSymbolicLink() !== true) {
      current = next;
      continue;
    }
    if (++links > 40) throw Object.assign(new Error(`too many levels of symbolic links: ${path}`), { code: 'ELOOP' });
    const target = readlinkSync(next);
    if (target.startsWith('/')) current = '/';
    pending = [...target.split('/').filter((part) => part !== ''), ...pending];
  }
  return [...folders];
}

/**
 * The first folder above `path` that a user other than root and `uid`
 * could change, or `undefined` when there is none. A folder owned by root or
 * `uid` and writable by others only with the sticky bit (`/tmp`) is safe.
 * The folders of the path as named, those of its real path and those
 * holding each link on the way (see resolutionFolders) are checked: a link
 * is read from the folder holding it.
 */
export function replaceableFolder(path: string, uid: number | undefined): ReplaceableFolder | undefined {
  const named = resolve(path);
  let folders: Set<string>;
  try {
    folders = new Set([...foldersAbove(named), ...foldersAbove(realpathSync(named)), ...resolutionFolders(named)]);
  } catch (cause) {
    return { reason: 'unresolved', folder: named, cause };
  }
  for (const folder of folders) {
    const info = statSync(folder, { throwIfNoEntry: false });
    if (info === undefined) return { reason: 'missing', folder };
    const replaceable = folderReplaceable(folder, info, uid);
    if (replaceable !== undefined) return replaceable;
  }
  return undefined;
}

/**
 * Whether a user other than root and `uid` could change what `folder` holds,
 * judged by its owner and mode as `info` (its stat) gives them: the rule
 * {@link replaceableFolder} applies to each folder, for a caller that walks a
 * path itself (gateway/tokenFile.ts judges each link and the file on the
 * same walk).
 */
export function folderReplaceable(
  folder: string,
  info: { readonly mode: number; readonly uid: number },
  uid: number | undefined,
): Extract<ReplaceableFolder, { reason: 'foreign_owner' | 'writable_by_others' }> | undefined {
  const mode = (info.mode & 0o7777).toString(8);
  if (info.uid !== 0 && info.uid !== uid) return { reason: 'foreign_owner', folder, ownerUid: info.uid, mode };
  // The sticky bit (S_ISVTX) lets only an entry's owner (or the folder's) rename or remove it.
  if ((info.mode & 0o022) !== 0 && (info.mode & 0o1000) === 0) return { reason: 'writable_by_others', folder, mode };
  return undefined;
}
