import { dirname, sep } from 'node:path';
import { isWithin, shownBoundDirectories, writeDirByPath, type MaskedPath, type SandboxLayout } from './SandboxLayout.js';

function maskArgs(masks: readonly MaskedPath[]): string[] {
  // An empty tmpfs hides a directory; /dev/null, bound without device access, makes a file unreadable.
  return masks.flatMap((m) => (m.kind === 'dir' ? ['--tmpfs', m.path] : ['--ro-bind', '/dev/null', m.path]));
}

/**
 * Directories bubblewrap creates for mount points are mode 0700 when it runs
 * as root, which the plugin's own user could not cross to reach its install
 * root or data directory; created beforehand with 0755 they only let it
 * pass (they are empty but for the mount points).
 */
function traversableParents(layout: SandboxLayout): string[] {
  const systemDirs = layout.system.filter((m) => m.kind === 'dir').map((m) => m.path);
  const targets = [layout.installRoot, layout.writeDir, ...layout.readOnly, ...(layout.boundDirectories ?? []).map((d) => d.path)];
  const parents = new Set<string>();
  for (const target of targets) {
    for (let dir = dirname(target); dir !== dirname(dir); dir = dirname(dir)) {
      if (!systemDirs.some((s) => isWithin(dir, s))) parents.add(dir);
    }
  }
  return [...parents].sort((a, b) => a.split(sep).length - b.split(sep).length || a.localeCompare(b)).flatMap((dir) => ['--perms', '0755', '--dir', dir]);
}

/**
 * The bubblewrap command line (options only, up to and including `--`) for a
 * layout. An allowlist: only system directories, the given read-only paths,
 * the install root and the write directory exist inside; the home directory,
 * /run, /var, the host's /tmp and the profile directory do not (/tmp is the
 * sandbox's own tmpfs, writable when the layout sizes it). Order
 * matters: bubblewrap applies mounts in sequence, so masks of secret paths
 * come after the trees that contain them, and the plugin's own directories
 * come after masks that would otherwise cover them.
 *
 * @param seccompFd - The descriptor number bubblewrap reads the seccomp program from (every plugin has one; see `pluginSeccompFilter`).
 * @param infoFd - A descriptor bubblewrap reports its sandbox's first process on (`--info-fd`), for a plugin with a destination list (see `sandboxProxyListener`).
 * @param scope - The Landlock launcher's descriptor and where the sandbox shows it, read-only, for its scope-only mode (see `bubblewrapBackend`).
 */
export function bubblewrapArgs(layout: SandboxLayout, seccompFd: number | undefined, infoFd?: number, scope?: { readonly fd: number; readonly path: string }): string[] {
  const args: string[] = [];
  if (layout.identity === undefined) {
    args.push('--unshare-all');
    if (layout.network) args.push('--share-net');
    args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL');
  } else {
    // Run by root, a user namespace would map uid 0 alone and no other user could exist inside. Without one, the
    // sandbox keeps just what setpriv needs to become the plugin's user; setpriv then drops all of it before the plugin runs.
    args.push('--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try');
    if (!layout.network) args.push('--unshare-net');
    args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_SETPCAP');
  }
  for (const mount of layout.system) {
    if (mount.kind === 'dir') args.push('--ro-bind', mount.path, mount.path);
    else args.push('--symlink', mount.target, mount.path);
  }
  // Read-only as under the Landlock launcher: user 0 without a capability may still write a sysctl (kernel.core_pattern
  // names a program the kernel runs as root) or the sysrq trigger by mode alone, and bwrap covers them only when it
  // could write them itself, which it cannot once it dropped its capabilities.
  args.push('--proc', '/proc', '--remount-ro', '/proc', '--dev', '/dev');
  // Shared memory is a tmpfs: sized, it cannot hold more than the plugin's memory cap even where no control group
  // charges it. Sticky and world-writable like the /dev/shm it replaces, so a plugin running as its own user can use it.
  if (layout.shmBytes !== undefined) args.push('--perms', '1777', '--size', String(layout.shmBytes), '--tmpfs', '/dev/shm');
  // The sandbox's own /tmp, sized and sticky like /dev/shm: servers that write to /tmp by name rather than TMPDIR work,
  // and nothing of the host's /tmp or another sandbox's shows. Without a size it only holds mount points, read-only.
  if (layout.tmpBytes !== undefined) args.push('--perms', '1777', '--size', String(layout.tmpBytes));
  args.push('--tmpfs', '/tmp');
  // A copy in bubblewrap's own tmpfs, read from the host's descriptor (which bubblewrap then closes), at a file of the
  // sandbox's root: read-only and executable, no host inode a plugin of a host that owns the launcher could reach, and
  // no host path of it anywhere inside. A bind of the host's file (--ro-bind-fd) named that path, where the host is
  // installed, as its mount's root in /proc/self/mountinfo.
  if (scope !== undefined) args.push('--perms', '0555', '--ro-bind-data', String(scope.fd), scope.path);
  if (layout.identity !== undefined) args.push(...traversableParents(layout));
  for (const path of layout.readOnly) args.push('--ro-bind', path, path);
  args.push(...maskArgs(layout.masksOutside));
  const own: { args: string[]; path: string }[] = [
    { args: ['--ro-bind', layout.installRoot], path: layout.installRoot },
    ...shownBoundDirectories(layout).map((d) => ({ args: [d.writable ? '--bind-fd' : '--ro-bind-fd', String(d.fd)], path: d.path })),
  ];
  if (writeDirByPath(layout)) own.push({ args: ['--bind', layout.writeDir], path: layout.writeDir });
  own.sort((a, b) => a.path.split(sep).length - b.path.split(sep).length);
  for (const mount of own) args.push(...mount.args, mount.path);
  // Copied by bubblewrap into its own tmpfs and mounted over the installed file: a copy's descriptor cannot be bound
  // (--ro-bind-fd resolves it to a name, and verified copies have none). A missing file or a directory at the path
  // cannot take the mount, and the sandbox then fails to start. Readable by the plugin's own user, writable by nobody.
  for (const file of layout.mountedFiles ?? []) args.push('--perms', '0444', '--ro-bind-data', String(file.fd), file.path);
  args.push(...maskArgs(layout.masksInside));
  for (const m of [...layout.masksOutside, ...layout.masksInside]) if (m.kind === 'dir') args.push('--remount-ro', m.path);
  // The sandbox's root (and /tmp without a size) are tmpfs that only hold mount points; left writable they would be
  // unsized scratch space outside writeDir. So is bubblewrap's /dev (its device nodes, /dev/shm and /dev/pts are mounts
  // of their own and keep their access): sized at half the host's memory, it held what a plugin owning it wrote there,
  // uncharged where no control group counts tmpfs pages (the rlimit fallback), past the memory cap that /dev/shm's size keeps.
  args.push('--remount-ro', '/dev');
  if (layout.tmpBytes === undefined) args.push('--remount-ro', '/tmp');
  args.push('--remount-ro', '/');
  args.push('--chdir', layout.cwd);
  if (seccompFd !== undefined) args.push('--seccomp', String(seccompFd));
  if (infoFd !== undefined) args.push('--info-fd', String(infoFd));
  args.push('--');
  return args;
}
