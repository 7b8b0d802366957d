import { closeSync, constants as fsConstants, existsSync, openSync, realpathSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import scopeData from '../../etc/sandbox/scope-launcher.json' with { type: 'json' };
import type { PluginCommand } from '../process/VerifiedExecutable.js';
import type { TreeKind } from '../process/ChildPluginProcess.js';
import { bubblewrapArgs } from './bubblewrapArgs.js';
import { landlockArgs, SHOWN_DEVICES, type LauncherLimits } from './landlockArgs.js';
import { SANDBOX_PROXY_PORT } from '../egress/sandboxProxy.js';
import { SYSTEM_PATHS, isWithin, type SandboxLayout } from './SandboxLayout.js';
import { DARWIN_SYSTEM_PATHS, seatbeltProfile } from './seatbeltProfile.js';

/**
 * The OS mechanisms that enforce a sandbox: `landlock` is this library's own
 * launcher (namespaces, a Landlock ruleset and seccomp, applied directly),
 * `bubblewrap` the bwrap program, `seatbelt` macOS's sandbox-exec.
 */
export type SandboxBackendName = 'landlock' | 'bubblewrap' | 'seatbelt';

/** How one backend turns a layout and a command line into an OS launch. */
export interface SandboxBackend {
  readonly name: SandboxBackendName;
  /** The launcher program (bwrap, sandbox-exec). */
  readonly command: string;
  /** System directories visible read-only. */
  readonly systemPaths: readonly string[];
  /** How stop() reaches the plugin's process tree. */
  readonly tree: TreeKind;
  /** Stderr lines of the launcher itself. */
  readonly launcherFailure: RegExp;
  /** Whether the plugin gets its own PID namespace and dies with the host. */
  readonly containsTree: boolean;
  /**
   * Whether the plugin and its descendants are refused every abstract Unix
   * socket and every signal to a process made outside their own Landlock
   * domain (Landlock's scopes, ABI 6): the host's sockets and processes, the
   * sandbox's process 1. The Landlock launcher sets them itself; bubblewrap's
   * plugin gets them from the launcher's scope-only mode (`scopeLauncher`).
   */
  readonly scoped: boolean;
  /**
   * For bubblewrap, where the kernel has the scopes and a trusted launcher
   * is installed: the launcher that starts the plugin in its scope-only
   * mode. Every launch hands its descriptor over ({@link withScopeLauncher})
   * and passes its number as `scopeFd`.
   */
  readonly scopeLauncher?: string;
  /** Whether the launcher joins the plugin's control groups and sets its rlimits itself (`limits` of `launch`). */
  readonly setsLimits: boolean;
  /**
   * Whether the launcher leaves the host's process group and controlling
   * terminal itself, so the host spawns it in its own session
   * (`Launch.inHostSession`); otherwise the host gives it a session of its own.
   */
  readonly detachesItself: boolean;
  /**
   * Launcher arguments followed by the plugin's argv, and bytes for the
   * descriptor after the inherited ones; with `reportFd`, the launcher
   * reports its sandbox's first process on that descriptor (bubblewrap's
   * `--info-fd`, the launcher's `--report`, which also opens the proxy port);
   * `limits` are applied by a launcher that `setsLimits`; `scopeFd` is the
   * inherited descriptor of `scopeLauncher` (below `firstFreeFd`).
   */
  launch(layout: SandboxLayout, argv: readonly string[], firstFreeFd: number, reportFd?: number, limits?: LauncherLimits, scopeFd?: number): { args: string[]; extraInput?: Buffer };
}

/**
 * The plugin's command line behind util-linux setpriv when the layout names
 * a user: inside the sandbox, setpriv takes the user and group ids (real,
 * effective and saved), drops supplementary groups, empties the bounding and
 * inheritable capability sets (which also leaves the permitted and effective
 * sets empty once the ids are not 0) and sets no_new_privs, then executes the
 * plugin.
 */
function asPluginUser(layout: SandboxLayout, argv: readonly string[], setprivPath: string | undefined): readonly string[] {
  const identity = layout.identity;
  if (identity === undefined) return argv;
  // The spawner refuses to spawn for a user without setpriv; an empty program makes a slip fail instead of running as root.
  return [
    setprivPath ?? '',
    '--reuid',
    String(identity.uid),
    '--regid',
    String(identity.gid),
    '--clear-groups',
    '--bounding-set',
    '-all',
    '--inh-caps',
    '-all',
    '--no-new-privs',
    '--',
    ...argv,
  ];
}

/** Where bubblewrap shows the scope launcher, and the Landlock ABI its scopes need (`etc/sandbox/scope-launcher.json`). */
export const SCOPE_LAUNCHER_INSIDE: string = scopeData.pathInside;
/** The Landlock ABI that scopes abstract Unix sockets and signals (Linux 6.12). */
export const SCOPES_ABI: number = scopeData.minimumAbi;

/**
 * The bubblewrap backend; `seccomp` holds the compiled filters of plugins
 * without and with network (`pluginSeccompFilter`), one of which every
 * plugin gets; `setprivPath` the util-linux setpriv that switches to a
 * layout's user (needed only when the host runs as root); `scopeLauncher`
 * the Landlock launcher to start the plugin through in its scope-only mode
 * (only where the kernel's Landlock has the scopes, see `landlockAbi`):
 * without it a plugin with network reaches the host's abstract Unix sockets.
 */
export function bubblewrapBackend(
  bwrapPath: string,
  seccomp: { readonly offline: Buffer; readonly networked: Buffer },
  setprivPath?: string,
  scopeLauncher?: string,
): SandboxBackend {
  return {
    name: 'bubblewrap',
    command: bwrapPath,
    systemPaths: SYSTEM_PATHS,
    tree: 'pid-namespace',
    // The scope launcher's own failures (before the plugin runs) are the sandbox's too.
    launcherFailure: scopeLauncher === undefined ? /^bwrap: / : /^(bwrap|mcp-plugin-launcher): /,
    containsTree: true,
    setsLimits: false,
    detachesItself: false,
    scoped: scopeLauncher !== undefined,
    ...(scopeLauncher === undefined ? {} : { scopeLauncher }),
    launch: (layout, argv, firstFreeFd, reportFd, _limits, scopeFd) => {
      // A launch without the descriptor would run the plugin unscoped while describe() says otherwise.
      if (scopeLauncher !== undefined && scopeFd === undefined) throw new Error('bubblewrap launch without the scope launcher\'s descriptor (withScopeLauncher)');
      const scope = scopeFd === undefined ? undefined : { fd: scopeFd, path: SCOPE_LAUNCHER_INSIDE };
      // Behind setpriv: the launcher runs as the plugin's user with no capability left, the last step before the plugin.
      // It also closes every descriptor from firstFreeFd on (bubblewrap's own, and any the host's parent leaked without
      // close-on-exec), as the launcher backend does; those below are the host's for the plugin, or closed by bubblewrap.
      const scoped = scope === undefined ? argv : [scope.path, '--scope', '--pass-fds', String(firstFreeFd - 3), '--', ...argv];
      return {
        args: [...bubblewrapArgs(layout, firstFreeFd, reportFd, scope), ...asPluginUser(layout, scoped, setprivPath)],
        extraInput: layout.network ? seccomp.networked : seccomp.offline,
      };
    },
  };
}

/**
 * The command with the scope launcher's descriptor inherited after its own
 * (closed with them on `release`), and that descriptor's number in the
 * launcher process (`scopeFd` of `launch`), for a backend with a
 * `scopeLauncher`; any other backend's command unchanged. bubblewrap copies
 * the launcher from the descriptor into its own tmpfs, so the launcher's
 * host path (the host's installation directory) shows nowhere in the
 * sandbox, not even in `/proc/self/mountinfo`. An error (the launcher
 * cannot be opened) has released the command's descriptors.
 */
export function withScopeLauncher<Command extends PluginCommand>(backend: SandboxBackend, executable: Command): Result<{ executable: Command; scopeFd?: number }, string> {
  const path = backend.scopeLauncher;
  if (path === undefined) return ok({ executable });
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (e) {
    executable.release();
    return err(`the Landlock launcher at ${path}, which scopes plugins under bubblewrap, cannot be opened: ${String(e)}`);
  }
  const scopeFd = 3 + executable.inheritFds.length;
  const release = (): void => {
    executable.release();
    closeSync(fd);
  };
  return ok({ executable: { ...executable, inheritFds: [...executable.inheritFds, fd], release }, scopeFd });
}

let devices: readonly string[] | undefined;

/** The device nodes the covered /dev shows that the host has, read once per process. */
function hostDevices(): readonly string[] {
  devices ??= SHOWN_DEVICES.filter((device) => existsSync(device));
  return devices;
}

/**
 * The Landlock backend: `launcherPath` is this library's launcher
 * (`native/launcher.c`, see `findLauncher`), which joins the plugin's control
 * groups, sets its rlimits, enters new namespaces, mounts only the plugin's
 * own trees, applies one Landlock ruleset, switches to the layout's user and
 * loads `seccomp` (as for bubblewrap) right before it executes the plugin.
 * `scoped`: whether the kernel's Landlock has the scopes (see `landlockAbi`),
 * which the launcher then sets.
 */
export function landlockBackend(launcherPath: string, seccomp: { readonly offline: Buffer; readonly networked: Buffer }, scoped = false): SandboxBackend {
  return {
    name: 'landlock',
    command: launcherPath,
    systemPaths: SYSTEM_PATHS,
    tree: 'pid-namespace',
    launcherFailure: /^mcp-plugin-launcher: /,
    containsTree: true,
    setsLimits: true,
    detachesItself: true,
    scoped,
    launch: (layout, argv, firstFreeFd, reportFd, limits) => ({
      // The host's pid: a launcher started after the host died (an orphan, whose death signal never comes) stops.
      args: [
        '--parent',
        String(process.pid),
        ...landlockArgs(layout, firstFreeFd, limits, hostDevices(), reportFd === undefined ? undefined : { reportFd, proxyPort: SANDBOX_PROXY_PORT }),
        ...argv,
      ],
      extraInput: layout.network ? seccomp.networked : seccomp.offline,
    }),
  };
}

/** The macOS Seatbelt backend (`sandbox-exec -p <profile>`). */
export function seatbeltBackend(sandboxExecPath: string): SandboxBackend {
  return {
    name: 'seatbelt',
    command: sandboxExecPath,
    systemPaths: DARWIN_SYSTEM_PATHS,
    tree: 'process-group',
    launcherFailure: /^sandbox-exec: /,
    containsTree: false,
    setsLimits: false,
    detachesItself: false,
    scoped: false,
    launch: (layout, argv) => ({ args: ['-p', seatbeltProfile(layout), ...argv] }),
  };
}

/**
 * The host paths a sandboxed Node needs to read besides system directories,
 * for a Node binary not under /usr or /bin (nvm, volta, a tarball): its
 * installation prefix when the binary is laid out as `<prefix>/bin/node`,
 * otherwise the binary alone. Whatever holds a binary placed elsewhere
 * (`/opt/node`, `~/node`) may be `/` or a home directory, which the sandbox
 * must not expose. Pass them as read-only paths to run `node` inside.
 */
export function nodeRuntimePaths(execPath: string = process.execPath): string[] {
  const real = realpathSync(execPath);
  if (isWithin(real, '/usr') || isWithin(real, '/bin')) return [];
  const binDir = dirname(real);
  return basename(binDir) === 'bin' ? [dirname(binDir)] : [real];
}
