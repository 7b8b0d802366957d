import { dirname, sep } from 'node:path';
import grantData from '../../etc/sandbox/landlock-grants.json' with { type: 'json' };
import { isWithin, shownBoundDirectories, writeDirByPath, type MaskedPath, type SandboxLayout } from './SandboxLayout.js';

/** What the launcher sets itself before any fork, where bubblewrap needs a shell and `prlimit` around it. */
export interface LauncherLimits {
  /** The join files of the plugin's control groups (`PluginGroup.joinFiles`): the launcher writes `0`, itself, into each. */
  readonly joinFiles?: readonly string[];
  /** A v2 group the launcher forks the sandbox's process 1 into (`PluginGroup.forkInto`), instead of joining `joinFiles`. */
  readonly forkInto?: string;
  /** RLIMIT_DATA of every process, in bytes. */
  readonly dataBytes?: number;
  /** RLIMIT_NPROC of the plugin's user. */
  readonly maxProcesses?: number;
}

/** How the launcher opens a sandbox to the host's egress proxy: a plugin with a destination list, without network. */
export interface LauncherEgress {
  /** The descriptor the launcher reports its sandbox's process 1 on (`{"child-pid": N}`), read by `sandboxProxyListener`. */
  readonly reportFd: number;
  /** The proxy's port on the sandbox's loopback: the only TCP port the plugin may connect to (Landlock ABI 4 and later). */
  readonly proxyPort: number;
}

/** Landlock grants every plugin gets besides its own trees and the system directories (`etc/sandbox/landlock-grants.json`). */
const COMMON_GRANTS: readonly { readonly path: string; readonly rights: string }[] = grantData.grants;
const ALWAYS_COVERED: readonly string[] = grantData.alwaysCovered;
/** The device nodes shown in the covered /dev (those the host has), and the links beside them. */
export const SHOWN_DEVICES: readonly string[] = grantData.devices;
const DEVICE_LINKS: readonly { readonly path: string; readonly target: string }[] = grantData.deviceLinks;

/** Where the sandbox's own writable /tmp is mounted (a cover in `alwaysCovered`). */
const PRIVATE_TMP = '/tmp';

const depth = (path: string): number => path.split(sep).length;
const byDepth = (a: string, b: string): number => depth(a) - depth(b) || a.localeCompare(b);

/** One tree the plugin sees at its own path: bound by path or from a descriptor. */
interface OwnTree {
  readonly path: string;
  readonly source: { readonly fd: number } | 'path';
  readonly writable: boolean;
}

function ownTrees(layout: SandboxLayout): OwnTree[] {
  const trees: OwnTree[] = [
    ...layout.readOnly.map((path): OwnTree => ({ path, source: 'path', writable: false })),
    { path: layout.installRoot, source: 'path', writable: false },
    ...shownBoundDirectories(layout).map((d): OwnTree => ({ path: d.path, source: { fd: d.fd }, writable: d.writable })),
  ];
  if (writeDirByPath(layout)) trees.push({ path: layout.writeDir, source: 'path', writable: true });
  return trees.sort((a, b) => byDepth(a.path, b.path));
}

/** The top-level directory a path lies in (`/home` for `/home/u/x`). */
function topLevel(path: string): string {
  return `${sep}${path.split(sep)[1] ?? ''}`;
}

function maskArgs(masks: readonly MaskedPath[]): string[] {
  return masks.flatMap((m) => [m.kind === 'dir' ? '--mask-dir' : '--mask-file', m.path]);
}

/**
 * The command line of the Landlock launcher (`native/launcher.c`, options up
 * to and including `--`) for a layout. System directories are not mounted:
 * one Landlock ruleset grants reading and executing them. The plugin's own
 * trees (install root, read-only paths, data and writable directories) are
 * granted too, and shown at their paths: the top-level directory each lies
 * in (and always /tmp) is covered by an empty tmpfs holding only their mount
 * points (when the layout sizes /tmp, that cover is the sandbox's own writable
 * /tmp), which hides the rest of it (a home directory, the host's /tmp) and
 * lets a plugin user cross parents it could not on the host (a 0700 home or
 * temporary directory). A tree inside a system directory needs no mount, but
 * one bound from a descriptor is still bound, so its path shows what was
 * verified. Masks, then the verified main module, come after the trees that
 * contain them, as in bubblewrap's order.
 *
 * Landlock does not stop a `stat` of a path outside every grant (whether a
 * file exists, its size and times), nor a plugin with network from a
 * connect() to a socket file it can reach: the launcher's fresh root holds
 * no other top-level directory of the host than those the spec reaches into
 * (the system ones), so nothing outside the plugin's own trees is there;
 * /dev is covered and shows only `hostDevices` (read-only binds of the
 * host's nodes), the plugin's own /dev/shm and the standard links.
 *
 * @param hostDevices - Those of `SHOWN_DEVICES` the host has.
 * @param egress - For a plugin with a destination list (and no network): its report descriptor and the proxy's port.
 * @param seccompFd - The descriptor the launcher reads the seccomp program from, right before it runs the plugin: the
 *   first after those the host hands over (from 3 on), which the plugin keeps unless the launcher mounts them.
 */
export function landlockArgs(
  layout: SandboxLayout,
  seccompFd: number,
  limits: LauncherLimits = {},
  hostDevices: readonly string[] = [],
  egress?: LauncherEgress,
): string[] {
  const args: string[] = [];
  if (limits.forkInto !== undefined) args.push('--cgroup-into', limits.forkInto);
  else for (const file of limits.joinFiles ?? []) args.push('--cgroup', file);
  if (limits.dataBytes !== undefined) args.push('--rlimit-data', String(limits.dataBytes));
  if (limits.maxProcesses !== undefined) args.push('--rlimit-nproc', String(limits.maxProcesses));
  if (!layout.network) args.push('--unshare-net');
  if (egress !== undefined && !layout.network) args.push('--egress-port', String(egress.proxyPort), '--report', String(egress.reportFd));
  if (layout.identity !== undefined) args.push('--user', String(layout.identity.uid), String(layout.identity.gid));
  // The host's descriptors come first, the seccomp program's right after them: the plugin keeps the host's, but those the launcher mounts.
  args.push('--seccomp', String(seccompFd), '--pass-fds', String(seccompFd - 3), '--chdir', layout.cwd);
  if (layout.shmBytes !== undefined) args.push('--shm', String(layout.shmBytes));
  // The cover of /tmp (always there) becomes the sandbox's own writable, sized /tmp, never sealed.
  if (layout.tmpBytes !== undefined) args.push('--tmp', String(layout.tmpBytes));

  const systemDirs = layout.system.filter((m) => m.kind === 'dir').map((m) => m.path);
  const inSystem = (path: string): boolean => systemDirs.some((s) => isWithin(path, s));
  const trees = ownTrees(layout);
  const covers = [...new Set([...ALWAYS_COVERED, ...trees.filter((t) => !inSystem(t.path)).map((t) => topLevel(t.path))])].sort(byDepth);
  for (const cover of covers) args.push('--cover', cover);
  for (const device of hostDevices) args.push('--bind', device, 'ro');
  args.push('--dir', '/dev/shm');
  for (const link of DEVICE_LINKS) args.push('--symlink', link.target, link.path);
  const made = new Set<string>(covers);
  const placed: OwnTree[] = [];
  // The directories above a tree inside a cover; the launcher makes the tree's own mount point like the tree (a file or a directory).
  const parentsOf = (path: string): void => {
    const cover = covers.find((c) => isWithin(path, c));
    // Inside a tree already shown, or a system directory, the path exists as it does on the host.
    if (cover === undefined || path === cover || placed.some((t) => isWithin(path, t.path))) return;
    const missing: string[] = [];
    for (let dir = dirname(path); !made.has(dir) && isWithin(dir, cover); dir = dirname(dir)) missing.unshift(dir);
    for (const dir of missing) {
      args.push('--dir', dir);
      made.add(dir);
    }
  };
  const place = (tree: OwnTree): void => {
    // A read-only tree inside one already shown read-only from the host shows nothing new.
    const redundant = tree.source === 'path' && placed.some((t) => t.source === 'path' && !t.writable && !tree.writable && isWithin(tree.path, t.path));
    // Inside a system directory a read-only tree shows as it is; a writable one is bound, the host's tree being read-only.
    if (!redundant && (tree.source !== 'path' || tree.writable || !inSystem(tree.path))) {
      parentsOf(tree.path);
      const access = tree.writable ? 'rw' : 'ro';
      if (tree.source === 'path') args.push('--bind', tree.path, access);
      else args.push('--bind-fd', String(tree.source.fd), tree.path, access);
    }
    placed.push(tree);
  };
  const isOwnRoot = (t: OwnTree): boolean => t.path === layout.installRoot || t.source !== 'path' || t.writable;
  for (const tree of trees.filter((t) => !isOwnRoot(t))) place(tree);
  args.push(...maskArgs(layout.masksOutside));
  for (const tree of trees.filter(isOwnRoot)) place(tree);
  for (const file of layout.mountedFiles ?? []) args.push('--file', String(file.fd), file.path);
  args.push(...maskArgs(layout.masksInside));
  // A cover a tree is bound on (a writeDir that is a top-level directory) lies hidden under it: sealing it would seal the tree.
  for (const cover of covers) if (!placed.some((t) => t.path === cover) && !(cover === PRIVATE_TMP && layout.tmpBytes !== undefined)) args.push('--seal', cover);

  for (const dir of systemDirs) args.push('--allow', dir, 'rx');
  for (const tree of trees) {
    const rights = tree.writable ? 'rwx' : 'rx';
    if (tree.source === 'path') args.push('--allow', tree.path, rights);
    else args.push('--allow-fd', String(tree.source.fd), rights);
  }
  for (const grant of COMMON_GRANTS) args.push('--allow', grant.path, grant.rights);
  // As its TMPDIR (writeDir): a script a server writes to /tmp may be run from there. The plugin's trees that lie
  // below /tmp (an install root in the host's temporary directory) stay read-only by their read-only mounts.
  if (layout.tmpBytes !== undefined) args.push('--allow', PRIVATE_TMP, 'rwx');
  args.push('--');
  return args;
}
