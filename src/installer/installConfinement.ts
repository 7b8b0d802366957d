/**
 * The confinement of the commands an install runs on a package's behalf
 * (pip, and the private environment's interpreter, which reads the `.pth`
 * files the package's wheels installed): under bubblewrap, with the system
 * directories and the interpreter's program and library folders read-only,
 * the install root the only writable tree, a private /tmp, no home directory,
 * the well-known secret files masked, no capabilities, and a network
 * namespace of its own: no route to the host's network, its loopback
 * services, the LAN or a cloud metadata address. Where the caller allowed a
 * package index, the one way out is the host's origin-only proxy
 * (originProxy.ts): a short program started first in the confinement opens
 * a listener on the namespace's loopback, hands it to the host over the
 * spawn's IPC channel and then becomes the command, so every connection to
 * that address is accepted by the host itself, which forwards only to the
 * index's origins. Whatever such a command ends up running (a build
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
  /**
   * Where the command reaches a caller-allowed package index: the port, on
   * the loopback of the confinement's own network namespace, of a listener
   * handed to the host ({@link ConfinedCommand.handsOverListener}). Without
   * it the command has no network at all.
   */
  readonly proxyPort?: number;
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
  /**
   * Whether the command starts by handing the host a listening socket over
   * a Node IPC channel (spawn it with an `'ipc'` stdio entry, after the
   * seccomp pipe): the `net.Server` arrives as the handle of a `message`,
   * and must be served by the proxy before the command can reach anything.
   */
  readonly handsOverListener: boolean;
}

/**
 * Run first in the confinement, with the interpreter (`-I -S`: the standard
 * library only), when the command may reach an index: it opens a listener on
 * 127.0.0.1:<port> of the confinement's own network namespace, sends it to
 * the host as a `net.Server` handle over the IPC channel Node gave the spawn
 * (NODE_CHANNEL_FD), keeps no copy, waits for the host's acknowledgement
 * (so the proxy serves the listener before anything dials it), closes the
 * channel and executes the command in its place. A socket belongs to the
 * namespace it was made in for its whole life, so the host accepts every
 * connection made to that address, and what the command runs can neither
 * reach the channel (closed before it starts) nor a route out.
 */
const LISTENER_HANDOVER = `
import array, json, os, socket, sys
port, argv = int(sys.argv[1]), sys.argv[3:]
channel = socket.socket(fileno=int(os.environ.pop('NODE_CHANNEL_FD')))
os.environ.pop('NODE_CHANNEL_SERIALIZATION_MODE', None)
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(('127.0.0.1', port))
listener.listen(128)
data = (json.dumps({'cmd': 'NODE_HANDLE', 'type': 'net.Server', 'msg': {'indexProxyListener': port}}) + '\\n').encode()
sent = channel.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [listener.fileno()]))])
if sent < len(data):
    channel.sendall(data[sent:])
listener.close()
pending = b''
while True:
    chunk = channel.recv(65536)
    if not chunk:
        sys.exit('mcp-plugin-host: the host closed the channel before it took the proxy listener')
    pending += chunk
    *lines, pending = pending.split(b'\\n')
    commands = [json.loads(line).get('cmd') for line in lines if line.strip()]
    if 'NODE_HANDLE_NACK' in commands:
        sys.exit('mcp-plugin-host: the host could not take the proxy listener')
    if 'NODE_HANDLE_ACK' in commands:
        break
channel.close()
os.execv(argv[0], argv)
`;

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
  const proxied = confinement.proxyPort !== undefined;
  const command = confinement.proxyPort === undefined ? [...argv] : [confinement.interpreter, '-I', '-S', '-c', LISTENER_HANDOVER, String(confinement.proxyPort), '--', ...argv];
  if (process.platform !== 'linux') return ok({ argv: command, seccomp: undefined, handsOverListener: proxied });
  const bwrap = settings.bubblewrap.find((path) => existsSync(path));
  if (bwrap === undefined) return err(noConfinement(`no bubblewrap (${settings.bubblewrap.join(', ')}) to confine pip with; a package's install never runs unconfined`));
  // The offline program: no Unix socket (one could reach a socket file of the host's the mounts show), TCP on the namespace's loopback only.
  const seccomp = pluginSeccompFilter(false);
  if (seccomp === undefined) return err(noConfinement(`no seccomp syscall table for ${process.arch} to confine pip with; a package's install never runs unconfined`));
  const identity = confinement.identity;
  const setpriv = settings.setpriv.find((path) => existsSync(path));
  if (identity !== undefined && setpriv === undefined) {
    return err(noConfinement(`no setpriv (${settings.setpriv.join(', ')}) to run pip as the plugin's user; a package's install never runs as root`));
  }
  const args =
    identity === undefined
      ? // Never --share-net: with it pip, a build backend or setup.py reached the host's whole network (review R9 N1).
        ['--die-with-parent', '--new-session', '--unshare-all', '--cap-drop', 'ALL']
      : // Run by root, a user namespace would map uid 0 alone; without one, bubblewrap keeps just what setpriv needs.
        [
          ...['--die-with-parent', '--new-session', '--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try', '--unshare-net'],
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
  for (const secret of DEFAULT_SECRET_PATHS.map((path) => expandHome(path))) {
    const entry = lstatSync(secret, { throwIfNoEntry: false });
    if (entry === undefined || !mounted.some((tree) => isWithin(secret, tree))) continue;
    if (entry.isDirectory()) args.push('--tmpfs', secret);
    else args.push('--ro-bind', '/dev/null', secret);
  }
  args.push('--dev', '/dev', '--proc', '/proc', ...(identity === undefined ? [] : ['--perms', '1777']), '--size', String(confinement.tmpBytes), '--tmpfs', '/tmp');
  if (identity !== undefined) args.push(...traversableParents(confinement.writable, mounted));
  args.push('--bind', confinement.writable, confinement.writable, '--chdir', confinement.writable, '--seccomp', String(CONFINEMENT_SECCOMP_FD), '--');
  return ok({ argv: [bwrap, ...args, ...(identity === undefined || setpriv === undefined ? [] : asUser(setpriv, identity)), ...command], seccomp, handsOverListener: proxied });
}

/** `--dir` options (mode 0755) for the folders above `target` that no mount provides, outermost first. */
function traversableParents(target: string, mounted: readonly string[]): string[] {
  const parents: string[] = [];
  for (let dir = dirname(target); dir !== dirname(dir); dir = dirname(dir)) {
    if (!mounted.some((tree) => isWithin(dir, tree))) parents.unshift(dir);
  }
  return parents.flatMap((dir) => ['--perms', '0755', '--dir', dir]);
}
