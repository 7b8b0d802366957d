/**
 * Start-up code a plugin planted in its data directory, moved out before the
 * next start. The data directory is the plugin's `HOME`, and shells and
 * interpreters look for code under `HOME` on their own (`~/.bashrc`, the
 * Python user site's `.pth` files, `~/.node_modules`, Bun's
 * `~/.bunfig.toml` preloads). The host's environment settings keep the
 * plugin's own interpreter away from them, but a child the plugin starts
 * with an environment of its own that keeps `HOME` (the MCP SDK's stdio
 * client by default) would run them, at every later start and after a
 * reviewed upgrade too. Neither sandbox can hide one path inside the
 * writable data directory (Landlock grants whole trees), so the host moves
 * what sits at those paths into a folder of its own beside the data
 * directories, which no sandbox shows, before every start, whichever
 * backend runs it.
 *
 * The walk goes through directory descriptors opened without following
 * links (as `openPluginDirectories` does), so a link the plugin placed on
 * the way never sends a move elsewhere: a link found at a listed path, or on
 * the way to one, is itself moved (an interpreter would follow it).
 */
import { closeSync, constants, lstatSync, mkdirSync, opendirSync, openSync, readdirSync, renameSync, rmdirSync, rmSync, unlinkSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import startupCodeData from '../../etc/sandbox/startup-code-paths.json' with { type: 'json' };
import type { HostError } from '../errors/HostError.js';
import { errnoOf, ioError } from '../errors/ioError.js';

/**
 * The paths, relative to a plugin's data directory, where a shell or an
 * interpreter finds code at start-up (`etc/sandbox/startup-code-paths.json`);
 * a `*` in a component matches any run of characters within it.
 */
export const STARTUP_CODE_PATHS: readonly string[] = startupCodeData.paths;

/** The folder under the data root (`<profile>/data`) that holds what was moved, one folder per plugin id. */
export const STARTUP_CODE_QUARANTINE_DIR: string = startupCodeData.quarantineDir;

/** What {@link moveStartupCode} moved out of one data directory. */
export interface MovedStartupCode {
  /** The moved paths, relative to the data directory, in the order they were found. */
  readonly paths: readonly string[];
  /** The folder that now holds them, each under its relative path. */
  readonly movedTo: string;
}

/** What {@link moveStartupCode} needs. */
export interface StartupCodeRequest {
  /** The plugin's data directory: its verified real path. */
  readonly dataPath: string;
  /** The host's descriptor on it (O_DIRECTORY, from `openPluginDirectories`). */
  readonly dataFd: number;
  /** The folder the moved sets go under (`<data root>/.startup-code-quarantine/<plugin id>`); created when needed. */
  readonly quarantine: string;
  /** A name for this start's set, unique among the plugin's (time first, so names sort by age). */
  readonly setName: string;
  /** The paths to look at; default {@link STARTUP_CODE_PATHS}. */
  readonly paths?: readonly string[];
  /** How many sets to keep; default from the data file. */
  readonly keepSets?: number;
}

/** One component of the listed paths, with what is listed below it. */
interface PathNode {
  /** The component is a listed path's last: whatever is there is moved. */
  terminal: boolean;
  readonly children: Map<string, PathNode>;
}

function pathTree(paths: readonly string[]): PathNode {
  const root: PathNode = { terminal: false, children: new Map() };
  for (const path of paths) {
    let node = root;
    for (const component of path.split('/').filter((c) => c !== '')) {
      let child = node.children.get(component);
      if (child === undefined) {
        child = { terminal: false, children: new Map() };
        node.children.set(component, child);
      }
      node = child;
    }
    node.terminal = true;
  }
  return root;
}

const DEFAULT_TREE = pathTree(STARTUP_CODE_PATHS);

// Matched without regard to ASCII case: on a case-insensitive data directory (macOS, ext4 or tmpfs casefold) Python opens
// .local/lib/python3.12 and finds .local/lib/PYTHON3.12, which a case-sensitive match left in place (review R13 F1).
// Without the u flag, i folds no other character onto an ASCII one (KELVIN SIGN stays apart from k), nor does any
// character of the listed patterns have such a folding.
const componentPattern = (component: string): RegExp => new RegExp(`^${component.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 'i');

const OPEN_DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

// Without /proc (macOS) names are reached through the parent's path; the host and the plugin are then the same user, and
// only a running instance of the plugin itself could swap a directory on the way.
const VIA_PROC = process.platform === 'linux';

const entryPath = (dirFd: number, dirPath: string, name: string): string => (VIA_PROC ? `/proc/self/fd/${dirFd}/${name}` : join(dirPath, name));

/** How many entries a folder listed for a pattern (`.local/lib`, `R`) may have before it is moved whole, unread. */
const MAX_LISTED_ENTRIES: number = startupCodeData.maxListedEntries;

/**
 * The names in the directory that `component` stands for: itself, or for a
 * pattern the entries it matches; undefined when the directory has more
 * than {@link MAX_LISTED_ENTRIES} entries. The listing runs on the thread
 * every plugin and the gateway share, before every start: a million entries
 * a plugin made in its `.local/lib` held it 2.2 s at each start (review R10).
 */
function namesFor(dirFd: number, dirPath: string, component: string): string[] | undefined {
  if (!component.includes('*')) return [component];
  const pattern = componentPattern(component);
  const names: string[] = [];
  let dir;
  try {
    dir = opendirSync(VIA_PROC ? `/proc/self/fd/${dirFd}` : dirPath, { bufferSize: 256 });
  } catch {
    return [];
  }
  try {
    for (let count = 0; ; count += 1) {
      const entry = dir.readSync();
      if (entry === null) return names;
      if (count >= MAX_LISTED_ENTRIES) return undefined;
      if (pattern.test(entry.name)) names.push(entry.name);
    }
  } catch {
    return names;
  } finally {
    dir.closeSync();
  }
}

/** From how many listed names below one directory it is listed once instead of looked up name by name. */
const LIST_FROM_COMPONENTS = 3;

const PLAIN_ASCII = /^[\x00-\x7f]*$/;

/**
 * The names in a directory, lowercased, for skipping the listed names that
 * are absent without an `lstat` each: the data directory alone has 27 such
 * names, and one listing of a plugin's usual `HOME` costs a sixth of looking
 * them all up. Undefined (look each name up) past {@link MAX_LISTED_ENTRIES}
 * entries, when the listing fails, or when a name is not plain ASCII: on a
 * case-insensitive file system (macOS, ext4 casefold, FAT) `.BASHRC` is
 * `.bashrc`, which lowercasing covers for ASCII only, while Unicode folding
 * also maps other characters there (KELVIN SIGN to `k`).
 */
function presentNames(dirFd: number, dirPath: string): Set<string> | undefined {
  let dir;
  try {
    dir = opendirSync(VIA_PROC ? `/proc/self/fd/${dirFd}` : dirPath, { bufferSize: 64 });
  } catch {
    return undefined;
  }
  const names = new Set<string>();
  try {
    for (let count = 0; ; count += 1) {
      const entry = dir.readSync();
      if (entry === null) return names;
      if (count >= MAX_LISTED_ENTRIES || !PLAIN_ASCII.test(entry.name)) return undefined;
      names.add(entry.name.toLowerCase());
    }
  } catch {
    return undefined;
  } finally {
    dir.closeSync();
  }
}


/**
 * Moves whatever sits at the listed start-up code paths of a plugin's data
 * directory into a new set under `quarantine`, and drops the oldest sets
 * beyond the kept number. Nothing found: nothing is created, and the cost is
 * one `lstat` per top-level name. A name that vanished meanwhile (another
 * start of the same plugin moved it) is skipped; any other failure fails
 * the start (HOST_IO_ERROR): a start that cannot clear its data directory
 * does not run planted code.
 *
 * @returns What was moved, or undefined when nothing was found.
 */
export function moveStartupCode(request: StartupCodeRequest): Result<MovedStartupCode | undefined, HostError> {
  const tree = request.paths === undefined ? DEFAULT_TREE : pathTree(request.paths);
  const setDir = join(request.quarantine, request.setName);
  const moved: string[] = [];
  let setMade = false;
  const move = (dirFd: number, dirPath: string, name: string, relative: string): void => {
    const target = join(setDir, relative);
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    setMade = true;
    try {
      renameSync(entryPath(dirFd, dirPath, name), target);
      moved.push(relative);
    } catch (cause) {
      if (errnoOf(cause) !== 'ENOENT') throw cause;
    }
  };
  // Returns false when the directory is too large to list for a pattern: its caller moves it whole.
  const walk = (dirFd: number, dirPath: string, relative: string, node: PathNode): boolean => {
    const present = node.children.size >= LIST_FROM_COMPONENTS ? presentNames(dirFd, dirPath) : undefined;
    for (const [component, child] of node.children) {
      if (present !== undefined && !component.includes('*') && !present.has(component.toLowerCase())) continue;
      const names = namesFor(dirFd, dirPath, component);
      if (names === undefined) return false;
      for (const name of names) {
        const here = relative === '' ? name : `${relative}/${name}`;
        // Most names are absent at most starts: no exception built for them (they cost more than the lstat).
        let st: Stats | undefined;
        try {
          st = lstatSync(entryPath(dirFd, dirPath, name), { throwIfNoEntry: false });
        } catch (cause) {
          if (errnoOf(cause) === 'ENOTDIR') continue;
          throw cause;
        }
        if (st === undefined) continue;
        const isLink = st.isSymbolicLink();
        const isDirectory = st.isDirectory();
        // A link on the way is moved itself: the interpreter would follow it to whatever it names.
        if (child.terminal || isLink) move(dirFd, dirPath, name, here);
        else if (isDirectory) {
          let fd: number;
          try {
            fd = openSync(entryPath(dirFd, dirPath, name), OPEN_DIRECTORY);
          } catch (cause) {
            // Replaced since the lstat (a running instance of the plugin): a link now is moved as any link on the way; a
            // file or nothing holds nothing to look into.
            const code = errnoOf(cause);
            if (code === 'ELOOP') move(dirFd, dirPath, name, here);
            else if (code !== 'ENOENT' && code !== 'ENOTDIR') throw cause;
            continue;
          }
          let listed: boolean;
          try {
            listed = walk(fd, join(dirPath, name), here, child);
          } finally {
            closeSync(fd);
          }
          if (!listed) move(dirFd, dirPath, name, here);
        }
        // A file where a directory is listed holds nothing an interpreter would look into.
      }
    }
    return true;
  };
  try {
    // The data directory itself is never listed for a pattern (no listed path starts with a '*' component).
    walk(request.dataFd, request.dataPath, '', tree);
  } catch (cause) {
    return err(ioError('Moving start-up code out of the data directory', request.dataPath, cause));
  }
  if (moved.length === 0) {
    // Everything found vanished before its move (another start of the plugin moved it): no empty set is left behind.
    if (setMade) dropSet(setDir);
    return ok(undefined);
  }
  dropOldSets(request.quarantine, request.keepSets ?? startupCodeData.keepSets);
  return ok({ paths: moved, movedTo: setDir });
}

/** How deep {@link removeBelow} goes in one pass (one descriptor held per level); a folder deeper is lifted to the set's top. */
const MAX_REMOVE_DEPTH: number = startupCodeData.maxRemoveDepth;

/** How many passes {@link dropSet} makes before it leaves a set (a running instance of the plugin may keep adding to it). */
const MAX_REMOVE_PASSES = 1000;

/**
 * Removes everything in the directory open as `dirFd`, through descriptors
 * opened without following links. A set holds the plugin's own files, and a
 * process of the plugin still running (a daemon child, a second host on the
 * profile) keeps its working directory or descriptors inside a directory that
 * was moved, so it can still change the set while the host removes it: a
 * removal by path (`rmSync`) that found a directory, then listed and
 * unlinked `<dir>/<name>` after the plugin had swapped `<dir>` for a link,
 * removed the files of whatever the link named, anywhere the host can write.
 * A folder at the depth bound is renamed to the set's top (`lift`), for the
 * next pass: deep trees cost passes, not descriptors.
 *
 * @returns Whether anything was lifted.
 */
function removeBelow(dirFd: number, depth: number, lift: (path: string) => void): boolean {
  let lifted = false;
  for (const name of readdirSync(`/proc/self/fd/${dirFd}`)) {
    const path = `/proc/self/fd/${dirFd}/${name}`;
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (st === undefined) continue;
    if (!st.isDirectory()) {
      unlinkSync(path);
      continue;
    }
    if (depth >= MAX_REMOVE_DEPTH) {
      // rename never follows the last component either: a link swapped in is lifted as a link, and unlinked next pass.
      lift(path);
      lifted = true;
      continue;
    }
    // A link swapped in since the lstat fails the open (ELOOP) and leaves the set for a later prune.
    const fd = openSync(path, OPEN_DIRECTORY);
    let below: boolean;
    try {
      below = removeBelow(fd, depth + 1, lift);
    } finally {
      closeSync(fd);
    }
    if (below) lifted = true;
    // Empty now (what was deeper was lifted out). rmdir never follows the last component: a link swapped in fails it (ENOTDIR).
    rmdirSync(path);
  }
  return lifted;
}

/** Removes one set; a failure leaves it for {@link dropOldSets} (the sets are only evidence). */
function dropSet(setDir: string): void {
  try {
    if (!VIA_PROC) {
      // Without /proc the host and the plugin are the same user (see VIA_PROC): nothing to gain by a swap.
      rmSync(setDir, { recursive: true, force: true });
      return;
    }
    // The set's own folder is the host's (under the quarantine no sandbox shows); what is inside came from the plugin.
    const fd = openSync(setDir, OPEN_DIRECTORY);
    // Names only the host makes at the set's top (the plugin reaches no further up than a moved folder), unique per removal.
    const prefix = `.lifted-${process.hrtime.bigint()}-`;
    let count = 0;
    const lift = (path: string): void => {
      count += 1;
      renameSync(path, join(setDir, `${prefix}${count}`));
    };
    try {
      for (let pass = 0; removeBelow(fd, 1, lift); pass += 1) {
        if (pass >= MAX_REMOVE_PASSES) return;
      }
    } finally {
      closeSync(fd);
    }
    rmdirSync(setDir);
  } catch {
    // Left for a later move's pruning.
  }
}

/** Removes all but the newest `keep` sets (names sort by age); a failure leaves them for the next move. */
function dropOldSets(quarantine: string, keep: number): void {
  let sets: string[];
  try {
    sets = readdirSync(quarantine).sort();
  } catch {
    return;
  }
  for (const name of sets.slice(0, Math.max(0, sets.length - keep))) dropSet(join(quarantine, name));
}
