import { sep } from 'node:path';
import type { MaskedPath, SandboxLayout } from './SandboxLayout.js';

function maskArgs(masks: readonly MaskedPath[]): string[] {
  // An empty tmpfs hides a directory; /dev/null, bound without device access, makes a file unreadable.
  return masks.flatMap((m) => (m.kind === 'dir' ? ['--tmpfs', m.path] : ['--ro-bind', '/dev/null', m.path]));
}

/**
 * The bubblewrap command line (options only, up to and including `--`) for a
 * layout. An allowlist: only system directories, the given read-only paths,
 * the install root and the write directory exist inside; the home directory,
 * /run, /var, the host's /tmp and the profile directory do not. Order
 * matters: bubblewrap applies mounts in sequence, so masks of secret paths
 * come after the trees that contain them, and the plugin's own directories
 * come after masks that would otherwise cover them.
 *
 * @param seccompFd - The descriptor number bubblewrap reads the seccomp program from (`network: false`).
 */
export function bubblewrapArgs(layout: SandboxLayout, seccompFd: number | undefined): string[] {
  const args = ['--unshare-all'];
  if (layout.network) args.push('--share-net');
  args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL');
  for (const mount of layout.system) {
    if (mount.kind === 'dir') args.push('--ro-bind', mount.path, mount.path);
    else args.push('--symlink', mount.target, mount.path);
  }
  args.push('--proc', '/proc', '--dev', '/dev');
  // Shared memory is a tmpfs: sized, it cannot hold more than the plugin's memory cap even where no control group charges it.
  if (layout.shmBytes !== undefined) args.push('--size', String(layout.shmBytes), '--tmpfs', '/dev/shm');
  args.push('--tmpfs', '/tmp');
  for (const path of layout.readOnly) args.push('--ro-bind', path, path);
  args.push(...maskArgs(layout.masksOutside));
  const own: [string, string][] = [
    ['--ro-bind', layout.installRoot],
    ['--bind', layout.writeDir],
  ];
  own.sort((a, b) => a[1].split(sep).length - b[1].split(sep).length);
  for (const [flag, path] of own) args.push(flag, path, path);
  args.push(...maskArgs(layout.masksInside));
  for (const m of [...layout.masksOutside, ...layout.masksInside]) if (m.kind === 'dir') args.push('--remount-ro', m.path);
  // The sandbox's root and /tmp are tmpfs that only hold mount points; left writable they would be scratch space outside writeDir.
  args.push('--remount-ro', '/tmp', '--remount-ro', '/');
  args.push('--chdir', layout.cwd);
  if (seccompFd !== undefined) args.push('--seccomp', String(seccompFd));
  args.push('--');
  return args;
}
