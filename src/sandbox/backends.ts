import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname } from 'node:path';
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
   * `limits` are applied by a launcher that `setsLimits`.
   */
  launch(layout: SandboxLayout, argv: readonly string[], firstFreeFd: number, reportFd?: number, limits?: LauncherLimits): { args: string[]; extraInput?: Buffer };
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

/**
 * The bubblewrap backend; `seccomp` holds the compiled filters of plugins
 * without and with network (`pluginSeccompFilter`), one of which every
 * plugin gets; `setprivPath` the util-linux setpriv that switches to a
 * layout's user (needed only when the host runs as root).
 */
export function bubblewrapBackend(bwrapPath: string, seccomp: { readonly offline: Buffer; readonly networked: Buffer }, setprivPath?: string): SandboxBackend {
  return {
    name: 'bubblewrap',
    command: bwrapPath,
    systemPaths: SYSTEM_PATHS,
    tree: 'pid-namespace',
    launcherFailure: /^bwrap: /,
    containsTree: true,
    setsLimits: false,
    detachesItself: false,
    launch: (layout, argv, firstFreeFd, reportFd) => ({
      args: [...bubblewrapArgs(layout, firstFreeFd, reportFd), ...asPluginUser(layout, argv, setprivPath)],
      extraInput: layout.network ? seccomp.networked : seccomp.offline,
    }),
  };
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
 */
export function landlockBackend(launcherPath: string, seccomp: { readonly offline: Buffer; readonly networked: Buffer }): SandboxBackend {
  return {
    name: 'landlock',
    command: launcherPath,
    systemPaths: SYSTEM_PATHS,
    tree: 'pid-namespace',
    launcherFailure: /^mcp-plugin-launcher: /,
    containsTree: true,
    setsLimits: true,
    detachesItself: true,
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
