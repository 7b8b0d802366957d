/**
 * Bearer token files: read as one small regular file that no other user can
 * choose the content of, and read again while the gateway serves, so that a
 * token is rotated by rewriting its file (docs/gateway.md, "HTTP security").
 */
import { constants, type BigIntStats, type Stats } from 'node:fs';
import { lstat, open, readlink } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { folderReplaceable } from '../sandbox/replaceableFolders.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';

// O_NONBLOCK: opening a FIFO planted at the path would otherwise wait for a writer forever. O_NOFOLLOW: the walk resolved
// every link already, and a link found at the file's name now was put there after the walk judged it. O_NOCTTY: a
// terminal is refused anyway, and must not become the gateway's.
const TOKEN_FILE_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY;

const WRITABLE_BY_GROUP_OR_OTHERS = 0o022;
const READABLE_BY_OTHERS = 0o004;
// Linux gives up on a path after 40 links (ELOOP); so does this.
const MAX_LINKS_FOLLOWED = 40;

/** Whether `uid` may decide what a path holds: this process's user or root. */
function trustedOwner(uid: number): boolean {
  const self = process.geteuid?.();
  return self === undefined || uid === self || uid === 0;
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/**
 * Why a token file's owner or mode lets another user choose the token: one
 * who can write it, or who owns it (and can chmod it), could. Only this
 * process's user and root may own it; a file others may only read (a
 * Kubernetes secret mount is root's, mode 0644) is taken with a warning.
 */
function tokenFileTrust(info: Owned): { readonly refused?: string; readonly warning?: string } {
  const mode = octal(info.mode & 0o777);
  if ((info.mode & WRITABLE_BY_GROUP_OR_OTHERS) !== 0) return { refused: `is writable by its group or by others (mode ${mode}): whoever can write it chooses the token; chmod go-w it` };
  if (!trustedOwner(info.uid)) return { refused: `is owned by uid ${info.uid}, neither this process's user (${process.geteuid?.()}) nor root: its owner can rewrite it` };
  if ((info.mode & READABLE_BY_OTHERS) !== 0) return { warning: `is readable by every user (mode ${mode}): chmod o-r it unless the whole machine may read the token` };
  return {};
}

/**
 * Why a directory on the way to a token file lets another user swap the file
 * for one of theirs, if it does: whoever owns a directory, or may write it,
 * can rename the file away and put another in its place. A sticky directory
 * (`/tmp`, a Kubernetes secret volume) may be writable by all: there only an
 * entry's owner (or the directory's) may rename or remove it, and the next
 * component's owner is judged in its turn. The rule is the project's one for
 * folders (sandbox/replaceableFolders.ts); the walk that applies it is this
 * file's own, as it judges the links and the file on the same walk.
 */
function directoryTrust(at: string, info: Owned): string | undefined {
  const self = process.geteuid?.();
  // Without a user id to compare (not POSIX), any owner is taken, as trustedOwner takes it.
  const replaceable = folderReplaceable(at, info, self ?? info.uid);
  if (replaceable?.reason === 'foreign_owner') {
    return `is reached through the directory ${at}, owned by uid ${replaceable.ownerUid}, neither this process's user (${self}) nor root: its owner can replace the file; move the file or chown the directory`;
  }
  if (replaceable?.reason === 'writable_by_others') {
    return `is reached through the directory ${at}, writable by its group or by others without the sticky bit (mode ${replaceable.mode.padStart(4, '0')}): whoever can write it can replace the file; chmod go-w it (or +t)`;
  }
  return undefined;
}

/** An entry's mode and owner, as numbers whichever way it was stat'ed. */
type Owned = Pick<Stats, 'mode' | 'uid'>;
const owned = (info: BigIntStats): Owned => ({ mode: Number(info.mode), uid: Number(info.uid) });

const components = (path: string): string[] => path.split('/').filter((c) => c !== '' && c !== '.');

/** Where the walk to a token file ended: the file's path with every link resolved, and what it was when judged. */
interface WayEnd {
  readonly path: string;
  readonly entry: BigIntStats;
}

/**
 * Where the way to a token file leads, or why it is not trusted: every
 * directory from `/` to the file, and every symbolic link followed on the way
 * (in a directory's name as in the file's), must be this process's user's or
 * root's, the directories not writable by others (but sticky ones), since
 * the owner of a link can point it at any file this process may read, and
 * the owner of a directory can replace the file. The path is walked here
 * component by component, as the kernel resolves it, so that a link in the
 * middle of it is judged as one at its end is (a Kubernetes secret mount's
 * `token -> ..data/token` and `..data -> ..<date>` links are root's). The
 * file itself is judged here too, before anything opens it: in a sticky
 * directory others may write, only an entry of this user or root cannot be
 * replaced by another user between this walk and the open (attack review R1).
 */
async function wayToTokenFile(path: string): Promise<Result<WayEnd, string>> {
  const atRoot = directoryTrust('/', owned(await lstat('/', { bigint: true })));
  if (atRoot !== undefined) return err(atRoot);
  let at = '/';
  // Not path.resolve: it would fold `link/..` away, where the kernel climbs from wherever the link led.
  const pending = components(isAbsolute(path) ? path : `${process.cwd()}/${path}`);
  let followed = 0;
  while (pending.length > 0) {
    const name = pending.shift() as string;
    if (name === '..') {
      // `at` holds no link, so its parent is the lexical one.
      at = dirname(at);
      continue;
    }
    const next = join(at, name);
    // One lstat of each entry, judged and (the file's) remembered as it was then: BigInt, as inode numbers may pass 2^53.
    const entry = await lstat(next, { bigint: true });
    const info = owned(entry);
    if (entry.isSymbolicLink()) {
      if (!trustedOwner(info.uid)) {
        return err(`is reached through the symbolic link ${next}, owned by uid ${info.uid}, neither this process's user (${process.geteuid?.()}) nor root: its owner can point it at any file; name the file itself or chown the link`);
      }
      followed += 1;
      // The kernel refuses a path past this many links (ELOOP).
      if (followed > MAX_LINKS_FOLLOWED) return err(`cannot be read (more than ${MAX_LINKS_FOLLOWED} symbolic links on the way)`);
      const target = await readlink(next);
      if (isAbsolute(target)) at = '/';
      pending.unshift(...components(target));
      continue;
    }
    if (pending.length === 0) {
      if (!entry.isFile()) return err('is not a regular file');
      const refused = tokenFileTrust(info).refused;
      if (refused !== undefined) return err(refused);
      // In a sticky directory others may write, a name with more than one link may be theirs: where
      // fs.protected_hardlinks is off, anyone may link a file of root's they can read (/etc/machine-id) under the
      // token file's name while it is absent, and its owner would be judged, not who named it there.
      if (entry.nlink > 1n && (owned(await lstat(at, { bigint: true })).mode & WRITABLE_BY_GROUP_OR_OTHERS) !== 0) {
        return err(`has ${entry.nlink} names (hard links) and is in the directory ${at}, which others may write: another user may have linked it there; give the token a file of its own`);
      }
      return ok({ path: next, entry });
    }
    // The kernel fails the open of a path that goes on past a file with ENOTDIR.
    if (!entry.isDirectory()) return err(`cannot be read (${next} is not a directory)`);
    const refused = directoryTrust(next, info);
    if (refused !== undefined) return err(refused);
    at = next;
  }
  // The path named a directory ('/', or one ending in '..').
  return err('is not a regular file');
}

/**
 * The text of a token file, or why it is refused: reached through a link or a
 * directory another user controls, not a regular file (a FIFO, a device),
 * larger than a token needs, or writable by someone else. A warning (a file
 * every user may read) is added to `warnings`. What is read is the file the
 * walk judged: opened by its resolved path without following a link, and
 * refused unless it is still the same file (device and inode).
 */
export async function readTokenFile(path: string, warnings: string[]): Promise<Result<string, string>> {
  const limit = GATEWAY_DEFAULTS.maxTokenFileBytes;
  const way = await wayToTokenFile(path);
  if (way.isErr()) return err(way.error);
  const handle = await open(way.value.path, TOKEN_FILE_FLAGS);
  try {
    const info = await handle.stat({ bigint: true });
    const judged = way.value.entry;
    if (info.dev !== judged.dev || info.ino !== judged.ino) return err('was replaced while it was read');
    if (!info.isFile()) return err('is not a regular file');
    const trust = tokenFileTrust(owned(info));
    if (trust.refused !== undefined) return err(trust.refused);
    if (trust.warning !== undefined) warnings.push(`token file ${path} ${trust.warning}`);
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(limit + 1), 0, limit + 1, 0);
    return bytesRead > limit ? err(`is larger than ${limit} bytes`) : ok(buffer.subarray(0, bytesRead).toString('utf8'));
  } finally {
    await handle.close();
  }
}

/** Why `token` is no bearer token the gateway accepts, if it is not: too short, or holding spaces. */
export function weakToken(token: string | undefined): string | undefined {
  return token !== undefined && token.length >= GATEWAY_DEFAULTS.minTokenLength && !/\s/.test(token)
    ? undefined
    : `needs a bearer token of at least ${GATEWAY_DEFAULTS.minTokenLength} characters without spaces`;
}

/** A token file's token: its first line, trimmed, or why the file gives none. */
export async function tokenFromFile(path: string, warnings: string[]): Promise<Result<string, string>> {
  let text: Result<string, string>;
  try {
    text = await readTokenFile(path, warnings);
  } catch (cause) {
    return err(`cannot be read (${cause instanceof Error ? cause.message : String(cause)})`);
  }
  if (text.isErr()) return err(text.error);
  const token = text.value.split('\n')[0]?.trim();
  const weak = weakToken(token);
  return weak === undefined && token !== undefined ? ok(token) : err(weak ?? 'is empty');
}
