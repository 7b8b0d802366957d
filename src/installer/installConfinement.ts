/**
 * The confinement of the commands an install runs on a package's behalf
 * (pip, and the private environment's interpreter, which reads the `.pth`
 * files the package's wheels installed): under bubblewrap, with the system
 * directories and the interpreter's program and library folders read-only,
 * the install root the only writable tree, a private /tmp, no home directory,
 * the well-known secret files masked, no capabilities, and no network unless
 * the caller allowed a package index. Whatever such a command ends up running (a build
 * backend pip fetched, a `.pth` line) can then change nothing but the
 * package's own tree, which is pinned afterwards like any other file. On a
 * root host it also runs as the plugin's own user, as the plugin later does:
 * without capabilities, root's uid still opens every root-owned file the
 * mask list does not name, and what it copied into the install root the
 * plugin could read. The plugins' seccomp program applies too: without it a
 * `.pth` line read the host's session keyring (a process keeps it across
 * bubblewrap and a change of user) and wrote the keys into the install root,
 * where the plugin reads them, and it could make user namespaces of its own.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import type { PluginIdentity } from '../sandbox/pluginIdentity.js';
import { SYSTEM_PATHS, isWithin } from '../sandbox/SandboxLayout.js';
import { DEFAULT_SECRET_PATHS, expandHome } from '../sandbox/secretLocations.js';
import { pluginSeccompFilter } from '../sandbox/seccompFilter.js';
import settings from '../../etc/python-install.json' with { type: 'json' };

/** What one confined install command may touch. */
export interface InstallConfinement {
  /** The only writable tree (the install root). */
  readonly writable: string;
  /** The interpreter the command runs (its prefix is mounted read-only when outside the system directories). */
  readonly interpreter: string;
  /** Whether the command may use the network (a caller-allowed package index). */
  readonly network: boolean;
  /** On a root host, the plugin's own user, which the command runs as; it can write only what it owns. */
  readonly identity?: PluginIdentity;
  /** The size of the private /tmp (memory the host lends while the command runs): pip keeps the wheels it downloads there. */
  readonly tmpBytes: number;
}

const noConfinement = (message: string): HostError => hostError('PLUGIN_PYTHON_INSTALL_FAILED', message, { details: { reason: 'no_confinement' } });

/** The descriptor the confined command's seccomp program is read from (bubblewrap's `--seccomp`). */
export const CONFINEMENT_SECCOMP_FD = 3;

/** A confined command: its argv, and the seccomp program to hand it on descriptor {@link CONFINEMENT_SECCOMP_FD} (Linux). */
export interface ConfinedCommand {
  /** The command line to run. */
  readonly argv: readonly string[];
  /** The compiled filter bubblewrap reads from {@link CONFINEMENT_SECCOMP_FD}; undefined where the command runs as it is. */
  readonly seccomp: Buffer | undefined;
}

/** The options that leave bubblewrap's setup to root and run the command through setpriv as `identity`, with nothing kept. */
function asUser(setpriv: string, identity: PluginIdentity): string[] {
  const [uid, gid] = [String(identity.uid), String(identity.gid)];
  return [setpriv, '--reuid', uid, '--regid', gid, '--clear-groups', '--bounding-set', '-all', '--inh-caps', '-all', '--no-new-privs', '--'];
}

/**
 * The bubblewrap command line that runs `argv` confined as `confinement`
 * says, or `PLUGIN_PYTHON_INSTALL_FAILED` (`details.reason`
 * `no_confinement`) on Linux when no bubblewrap of
 * `etc/python-install.json` `bubblewrap` exists. Elsewhere the command runs
 * as it is (see docs/published-servers.md#python).
 */
export function confinedCommand(argv: readonly string[], confinement: InstallConfinement): Result<ConfinedCommand, HostError> {
  if (process.platform !== 'linux') return ok({ argv: [...argv], seccomp: undefined });
  const bwrap = settings.bubblewrap.find((path) => existsSync(path));
  if (bwrap === undefined) return err(noConfinement(`no bubblewrap (${settings.bubblewrap.join(', ')}) to confine pip with; a package's install never runs unconfined`));
  const seccomp = pluginSeccompFilter(confinement.network);
  if (seccomp === undefined) return err(noConfinement(`no seccomp syscall table for ${process.arch} to confine pip with; a package's install never runs unconfined`));
  const identity = confinement.identity;
  const setpriv = settings.setpriv.find((path) => existsSync(path));
  if (identity !== undefined && setpriv === undefined) {
    return err(noConfinement(`no setpriv (${settings.setpriv.join(', ')}) to run pip as the plugin's user; a package's install never runs as root`));
  }
  const args =
    identity === undefined
      ? ['--die-with-parent', '--new-session', '--unshare-all', '--cap-drop', 'ALL', ...(confinement.network ? ['--share-net'] : [])]
      : // Run by root, a user namespace would map uid 0 alone; without one, bubblewrap keeps just what setpriv needs.
        [
          ...['--die-with-parent', '--new-session', '--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try', ...(confinement.network ? [] : ['--unshare-net'])],
          ...['--cap-drop', 'ALL', '--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_SETPCAP'],
        ];
  const mounted: string[] = [];
  for (const path of SYSTEM_PATHS) {
    const entry = lstatSync(path, { throwIfNoEntry: false });
    if (entry === undefined) continue;
    if (entry.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
    else {
      args.push('--ro-bind', path, path);
      mounted.push(path);
    }
  }
  const prefix = dirname(dirname(realpathSync(confinement.interpreter)));
  if (!mounted.some((tree) => isWithin(prefix, tree))) {
    // Only the prefix's program and library folders: a Python built with `--prefix=$HOME/.local` (or `$HOME`) has the
    // profile (`~/.local/share/<app>`, the file secret store of every plugin) and the rest of the home directory in its
    // prefix, and mounted whole they were readable to what the package's wheels run here (review R9 F8).
    const folders = settings.interpreterPrefixFolders.map((folder) => join(prefix, folder));
    const entries = folders.map((tree) => [tree, lstatSync(tree, { throwIfNoEntry: false })] as const);
    for (const [tree, entry] of entries) {
      if (entry?.isDirectory() !== true) continue;
      // Folders bubblewrap makes for mount points are 0700 when root runs it; the plugin's user must cross them.
      if (identity !== undefined) args.push(...traversableParents(tree, mounted));
      args.push('--ro-bind', tree, tree);
      mounted.push(tree);
    }
    // A folder that is a link to another of them (`lib` → `lib64`) is made as the same link; what it names is mounted only if listed.
    for (const [tree, entry] of entries) if (entry?.isSymbolicLink() === true) args.push('--symlink', readlinkSync(tree), tree);
  }
  if (confinement.network && existsSync('/etc/resolv.conf')) {
    const resolver = realpathSync('/etc/resolv.conf');
    if (!mounted.some((tree) => isWithin(resolver, tree))) args.push('--ro-bind', resolver, resolver);
  }
  for (const secret of DEFAULT_SECRET_PATHS.map((path) => expandHome(path))) {
    const entry = lstatSync(secret, { throwIfNoEntry: false });
    if (entry === undefined || !mounted.some((tree) => isWithin(secret, tree))) continue;
    if (entry.isDirectory()) args.push('--tmpfs', secret);
    else args.push('--ro-bind', '/dev/null', secret);
  }
  args.push('--dev', '/dev', '--proc', '/proc', ...(identity === undefined ? [] : ['--perms', '1777']), '--size', String(confinement.tmpBytes), '--tmpfs', '/tmp');
  if (identity !== undefined) args.push(...traversableParents(confinement.writable, mounted));
  args.push('--bind', confinement.writable, confinement.writable, '--chdir', confinement.writable, '--seccomp', String(CONFINEMENT_SECCOMP_FD), '--');
  return ok({ argv: [bwrap, ...args, ...(identity === undefined || setpriv === undefined ? [] : asUser(setpriv, identity)), ...argv], seccomp });
}

/** `--dir` options (mode 0755) for the folders above `target` that no mount provides, outermost first. */
function traversableParents(target: string, mounted: readonly string[]): string[] {
  const parents: string[] = [];
  for (let dir = dirname(target); dir !== dirname(dir); dir = dirname(dir)) {
    if (!mounted.some((tree) => isWithin(dir, tree))) parents.unshift(dir);
  }
  return parents.flatMap((dir) => ['--perms', '0755', '--dir', dir]);
}
