/**
 * Hints for a start that failed on a host path its sandbox does not show. A
 * server says only what its system call said: `connect ENOENT
 * /var/run/docker.sock`, `ENOENT: no such file or directory, open
 * '/home/me/app.json'`, which read as a missing socket or file, and with no
 * network a Unix socket connect reads like a network failure, whose hint
 * offers `--grant-egress`, which never carries a Unix socket. The host knows
 * what the sandbox shows and can look at the host's side of the path.
 */
import { lstatSync } from 'node:fs';
import { isAbsolute, normalize } from 'node:path';
import data from '../../etc/sandbox-path-hints.json' with { type: 'json' };
import { isWithin } from '../sandbox/SandboxLayout.js';
import type { EnforcedPolicy } from '../sandbox/SandboxSpawner.js';

/** What a plugin's sandbox shows of the host's file system. */
export interface SandboxView {
  /** The plugin's own trees: its install root, its data and writable directories, pinned runtimes. */
  readonly own: readonly string[];
  /** The host's system directories shown read-only. */
  readonly system: readonly string[];
  /** Paths masked even inside a system directory: the host's secret locations and its profile (which holds the plugin's own trees, shown still). */
  readonly hidden: readonly string[];
}

/** What `policy` (SandboxSpawner.describe) shows; `undefined` for the unsandboxed mode, which shows everything. */
export function sandboxViewOf(policy: EnforcedPolicy): SandboxView | undefined {
  if (!policy.enforced) return undefined;
  const absolute = (paths: readonly string[]): string[] => paths.filter((path) => isAbsolute(path));
  return {
    own: absolute([...policy.readablePaths, ...policy.writablePaths]),
    system: absolute(policy.systemPaths),
    hidden: absolute(policy.hiddenPaths),
  };
}

/** What a failure said of one path, and what the hints make of it. */
export interface PathHints {
  /** The hints, in the order of the paths they name, each ending in a space. */
  readonly hint: string;
  /** Whether one is about a Unix socket: a hint offering a network grant for the same failure does not fit it. */
  readonly socket: boolean;
}

/** The host codes of a failed call or start whose words {@link sandboxPathHints} reads (`etc/sandbox-path-hints.json`). */
export const PATH_HINT_CODES: ReadonlySet<string> = new Set(data.failureCodes);

const SOCKET_PATTERNS = data.socketPatterns.map((pattern) => new RegExp(pattern, 'g'));
const FILE_PATTERNS = data.filePatterns.map((pattern) => new RegExp(pattern, 'g'));

// A path ends where the sentence does: redis-py's "unix socket: /run/redis.sock." would name "/run/redis.sock." otherwise.
function pathsIn(text: string, patterns: readonly RegExp[]): string[] {
  const paths = new Set<string>();
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      const path = match[1]?.replace(/[.:]+$/, '');
      if (path !== undefined && isAbsolute(path)) paths.add(normalize(path));
    }
  }
  return [...paths];
}

/** Whether `text` names any path the hints read (a Unix socket connect, a failed open): only then is the sandbox worth asking about. */
export function namesFailedPath(text: string): boolean {
  return pathsIn(text, SOCKET_PATTERNS).length > 0 || pathsIn(text, FILE_PATTERNS).length > 0;
}

type Seen = 'shown' | 'hidden' | 'outside';

// As the sandbox mounts them: system directories, then the masks, then the plugin's own trees over both (its data
// directory lies in the host's profile, which is masked). Its /proc and /dev are the sandbox's own: a path there that
// fails is not one of the host's it hides.
function seenAs(path: string, view: SandboxView): Seen {
  const within = (trees: readonly string[]): boolean => trees.some((tree) => isWithin(path, tree));
  if (within(view.own) || within(data.ownTrees)) return 'shown';
  if (within(view.hidden)) return 'hidden';
  return within(view.system) ? 'shown' : 'outside';
}

function onHost(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function filled(template: string, path: string, view: SandboxView): string {
  const shown = data.shownWords.replace('{system}', view.system.join(', '));
  return `${template.replaceAll('{path}', path).replace('{shown}', shown)} `;
}

/**
 * The hints for the host paths `text` (a failure's message and stderr) names
 * with a Unix socket connect or a failed open, as `view` shows them: a
 * socket outside the sandbox or hidden in it (no grant shows it; egress
 * grants carry TCP only), a socket shown but used without network (it takes
 * the network grant, not an egress one), a file that exists on the host but
 * not in the sandbox. `undefined` when it names none of these.
 *
 * @param networked - Whether the start had the whole network (`network: true`), which Unix sockets need.
 */
export function sandboxPathHints(text: string, view: SandboxView | undefined, networked: boolean): PathHints | undefined {
  if (view === undefined) return undefined;
  const hints: string[] = [];
  const sockets = pathsIn(text, SOCKET_PATTERNS);
  for (const path of sockets) {
    const seen = seenAs(path, view);
    if (seen === 'outside') hints.push(filled(data.socketOutsideHint, path, view));
    else if (seen === 'hidden') hints.push(filled(data.socketHiddenHint, path, view));
    else if (!networked) hints.push(filled(data.socketOfflineHint, path, view));
  }
  const socketHints = hints.length;
  for (const path of pathsIn(text, FILE_PATTERNS)) {
    if (sockets.includes(path) || !onHost(path)) continue;
    const seen = seenAs(path, view);
    if (seen === 'outside') hints.push(filled(data.fileOutsideHint, path, view));
    else if (seen === 'hidden') hints.push(filled(data.fileHiddenHint, path, view));
  }
  return hints.length === 0 ? undefined : { hint: hints.join(''), socket: socketHints > 0 };
}
