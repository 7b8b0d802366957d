import { accessSync, existsSync, constants as fsConstants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { silentLogger, type Logger } from '../ports/ports.js';
import { commandNameOf, type LifecycleOptions } from '../process/ChildPluginProcess.js';
import type { PluginProcess } from '../process/PluginProcess.js';
import { inheritableDescriptors } from '../process/processTree.js';
import { spawnChild, type Launch } from '../process/spawnChild.js';
import { mountRequired, spawnPluginProcess } from '../process/spawnPluginProcess.js';
import type { PluginCommand, UnverifiedCommand, VerifiedExecutable } from '../process/VerifiedExecutable.js';
import { bubblewrapBackend, landlockBackend, SCOPES_ABI, seatbeltBackend, withScopeLauncher, type SandboxBackend, type SandboxBackendName } from './backends.js';
import type { LauncherLimits } from './landlockArgs.js';
import { findLauncher, landlockAbi, untrustedProgram } from './launcherBinary.js';
import type { PluginDirectories } from './pluginDirectories.js';
import { checkUidRange, DEFAULT_PLUGIN_UID_RANGE, introspectionIdentity, pluginIdentity, type PluginIdentity, type PluginUidRange } from './pluginIdentity.js';
import { privateTmpBytes } from './privateTmp.js';
import { probeSandbox, probeTreeLimits, sandboxUnsupported, type TreeLimitSupport } from './probe.js';
import { isWithin, resolveLayout, type BoundDirectory } from './SandboxLayout.js';
import { pluginSeccompFilter } from './seccompFilter.js';
import { DEFAULT_SECRET_PATHS, expandHome } from './secretLocations.js';
import { sameTreeLimits, usesCpu, type GroupTree, type PluginGroup, type TreeLimits } from './controlGroups.js';
import { numberProblem, type NumberKind } from '../options/optionRules.js';
import {
  cpuQuotaProblem,
  cpuWeightProblem,
  DEFAULT_TREE_LIMITS,
  joinGroupLaunch,
  removeGroup,
  resolveTreeLimits,
  RlimitedProcess,
  TreeLimitedProcess,
  type CpuQuota,
  type EnforcedTreeLimits,
  type RlimitCaps,
  type TreeLimitOverride,
} from './treeLimits.js';
import type { Server, Socket } from 'node:net';
import { proxyEnvironment } from '../egress/sandboxProxy.js';
import { helperEntersLauncherSandboxes, sandboxProxyListener } from '../egress/sandboxListener.js';
import { egressPolicy } from '../egress/destinations.js';
import { EgressProxy, type EgressEvent, type EgressResolver } from '../egress/EgressProxy.js';
import { listenerUnavailable, probeEgress } from './egressProbe.js';
import { DEFAULT_SANDBOX_BACKEND, type SandboxBackendChoice } from './backendChoice.js';

export type { SandboxBackendChoice } from './backendChoice.js';

/** Default cap on each plugin's memory: 2 GiB (`etc/sandbox/tree-limits.json`). */
export const DEFAULT_PLUGIN_MEMORY_LIMIT_BYTES: number = DEFAULT_TREE_LIMITS.memoryBytes;

/** Options of {@link SandboxSpawner.create}. */
export interface SandboxSpawnerOptions extends LifecycleOptions {
  /**
   * Runs plugins with no OS confinement at all. Accepted only together with
   * `profileKind: 'dev'`; every spawn is logged as a warning.
   */
  readonly dangerouslyRunUnsandboxed?: boolean;
  /** The kind of profile the host serves; only `dev` accepts `dangerouslyRunUnsandboxed`. */
  readonly profileKind?: 'dev' | 'standard';
  /** The bubblewrap binary. Default: `bwrap` looked up on `PATH`. */
  readonly bwrapPath?: string;
  /**
   * Which Linux backend confines plugins. `landlock`: this library's own
   * launcher (namespaces, a Landlock ruleset and seccomp applied directly,
   * without bubblewrap's mounts); `bubblewrap`: bwrap; `auto`: the launcher
   * when it is present, trustworthy and proved by the probe, else bubblewrap,
   * with the reason in `describe`'s `backendFallback`. A forced backend that
   * cannot be proved fails as any unproved sandbox does. Plugins with an
   * egress destination list run under the launcher too when the host is
   * root with CAP_SYS_PTRACE in its bounding set; any other host runs them
   * under bubblewrap. Default
   * `etc/host-options.json` `sandboxBackend`.
   */
  readonly backend?: SandboxBackendChoice;
  /** The Landlock launcher. Default: the one built beside this library (see `findLauncher`). */
  readonly launcherPath?: string;
  /** The Seatbelt launcher on macOS. Default `/usr/bin/sandbox-exec`. */
  readonly sandboxExecPath?: string;
  /** The platform to sandbox for. Default `process.platform`. */
  readonly platform?: NodeJS.Platform;
  /**
   * When the sandbox is proved. `create` (default): `create` itself fails
   * with PLUGIN_SANDBOX_UNSUPPORTED where no backend exists or its probe
   * cannot prove enforcement, so a host learns at open that it cannot run
   * plugins. `first_spawn`: `create` checks only the options; the backend is
   * looked for and probed at the first spawn (once), and every spawn fails
   * with the same error and hint while it cannot be proved. For read-only
   * uses that may never start a plugin (listing or inspecting a profile),
   * which then pay nothing for the probe and work where no sandbox exists.
   * Until the first spawn, `describe` cannot know what caps a plugin's tree
   * (it reports the per-process fallback with cause `not probed yet`).
   */
  readonly proveAt?: 'create' | 'first_spawn';
  /** The secret locations hidden from plugins (`~/` = home). Default `DEFAULT_SECRET_PATHS` (`etc/sandbox/secret-locations.json`). */
  readonly secretPaths?: readonly string[];
  /** The home directory that `~/` means. Default `os.homedir()`. */
  readonly homeDir?: string;
  /** The `PATH` searched for `bwrap`. Default `process.env.PATH`. */
  readonly searchPath?: string;
  /** Where sandbox decisions are logged. Default silent. */
  readonly logger?: Logger;
  /**
   * Cap on the memory of each plugin's whole process tree, tmpfs such as
   * /dev/shm included, enforced by a control group around the tree (see
   * `controlGroups`); also each process's data segment (RLIMIT_DATA, set by
   * the shell that joins the group, or by util-linux `prlimit` where no group
   * is used) and the size of the sandbox's /dev/shm, which are all that
   * remains where no control group can be used. Default
   * `DEFAULT_PLUGIN_MEMORY_LIMIT_BYTES` (`etc/sandbox/tree-limits.json`); `false` lifts the cap.
   */
  readonly memoryLimitBytes?: number | false;
  /**
   * Cap on the tasks (processes and threads: an idle Node process has about
   * ten) of each plugin's whole tree, enforced by a control group; where none
   * can be used, RLIMIT_NPROC of the plugin's own user when the host runs as
   * root (plugins then run as users of their own), and no cap otherwise.
   * Default 512 (`etc/sandbox/tree-limits.json`); `false` lifts the cap.
   */
  readonly maxProcesses?: number | false;
  /**
   * The CPU weight of each plugin's whole tree against the host's own (100,
   * the cgroup v2 scale; v1 `cpu.shares` get the same ratio to a host
   * thread's 1024), a whole number from 1 to 10000. Under contention a
   * plugin that would fill every core leaves a host thread 100 / (100 +
   * weight) of its core; an idle host leaves it all (the weight only orders
   * contenders). Set by the control group's cpu controller; where there is
   * none, plugins run unweighed and `describe` says why (`limits.cpuCause`).
   * Default 25 (`etc/sandbox/tree-limits.json`); `false` sets none (each of
   * the tree's threads then weighs as much as one of the host's).
   */
  readonly cpuWeight?: number | false;
  /**
   * A hard cap on the CPU time of each plugin's whole tree, e.g.
   * `{ cores: 0.5 }` for half a core (v1 `cpu.cfs_quota_us` per
   * `cpu.cfs_period_us`, v2 `cpu.max`; period 100 ms): a tree past it waits
   * for the next period even on an idle host. A spawn is refused
   * (PLUGIN_SPAWN_FAILED) where no cpu controller can enforce it. Default none.
   */
  readonly cpuQuota?: CpuQuota;
  /** Per-plugin caps by plugin id, overriding `memoryLimitBytes`, `maxProcesses`, `cpuWeight` and `cpuQuota` for that plugin. */
  readonly pluginLimits?: Readonly<Record<string, TreeLimitOverride>>;
  /**
   * `auto` (default) caps each plugin's tree with a control group (cgroup v2,
   * else the v1 `memory` and `pids` hierarchies) when a probe proves it works;
   * `off` uses the per-process rlimit fallback only.
   */
  readonly controlGroups?: 'auto' | 'off';
  /**
   * Refuse to run plugins (PLUGIN_SANDBOX_UNSUPPORTED, cause
   * `tree_limits_unavailable`) when no control group can cap their trees,
   * instead of falling back to per-process rlimits. Default false.
   */
  readonly requireTreeLimits?: boolean;
  /** The util-linux `prlimit` binary that sets the rlimits where no control group holds a plugin's tree. Default `/usr/bin/prlimit` or `/bin/prlimit` when present. */
  readonly prlimitPath?: string;
  /**
   * The host user ids plugins run as when the host runs as root (bubblewrap),
   * one per plugin, group id equal to user id. Default
   * `DEFAULT_PLUGIN_UID_RANGE` (`etc/sandbox/plugin-uids.json`).
   */
  readonly pluginUidRange?: PluginUidRange;
  /** The util-linux `setpriv` binary that switches to a plugin's user. Default `/usr/bin/setpriv` or `/bin/setpriv` when present. */
  readonly setprivPath?: string;
  /** How the egress proxy resolves destination names. Default the system resolver. */
  readonly egressResolver?: EgressResolver;
  /** Receives every connection and request a plugin makes through the egress proxy, allowed or refused. */
  readonly onEgress?: (event: EgressEvent) => void;
}

/** What a plugin may do, before anything is spawned. */
export interface SandboxPolicyRequest {
  /** The manifest's `declared_capabilities.network`. */
  readonly network: boolean;
  /** The only writable host directory (absolute, created by the caller); see `resolveWriteDir`. */
  readonly writeDir: string;
  /** Host paths that must not be readable even where a parent is mounted (the profile directory). */
  readonly hiddenPaths: readonly string[];
  /** Further host paths readable inside (e.g. the plugin's data directory). */
  readonly readOnlyPaths?: readonly string[];
  /** The plugin, whose entry in `pluginLimits` applies. */
  readonly pluginId?: string;
  /**
   * Destinations the plugin may reach through the host's egress proxy
   * (`declared_capabilities.egress`, narrowed by the install grant), with
   * `network: false`. Empty or absent: no network at all.
   */
  readonly egress?: readonly string[];
}

/** A request to spawn one plugin in its sandbox. */
export interface SandboxSpawnRequest extends SandboxPolicyRequest {
  /**
   * What to run: an executable the binding module verified just before this
   * spawn, or a dev command nothing checked (`unverifiedCommand`).
   */
  readonly executable: VerifiedExecutable | UnverifiedCommand;
  /** The complete environment of the plugin (from EnvDenylist); nothing else of the host's is passed. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory inside the sandbox. Default the install root. */
  readonly cwd?: string;
  /**
   * The plugin's data and writable directories, opened without following
   * links (`openPluginDirectories`): bound from their descriptors instead of
   * by path, `writeDir` must be `directories.write.path`. Closed whatever the
   * outcome, like the executable's descriptors.
   */
  readonly directories?: PluginDirectories;
  /** The user the plugin runs as (see {@link SandboxSpawner.pluginIdentity}); without it, the host's user. */
  readonly identity?: PluginIdentity;
  /**
   * A check that must pass before any code of the plugin runs (the package
   * tree check). Under a Linux backend it starts before the launcher is
   * spawned and the sandbox is set up while it runs: the seccomp program,
   * which the launcher reads after its mounts and right before it runs the
   * plugin, is written only once the check passed. Other launchers run it
   * first. A failed check fails the spawn with its error, the plugin never
   * having run.
   */
  readonly gate?: () => ResultAsync<void, HostError>;
}

/** The enforced policy of a plugin, as a plain object for `info` and logs. */
export interface EnforcedPolicy {
  /** The OS mechanism, or `none` in the dev-only unsandboxed mode. */
  readonly backend: SandboxBackendName | 'none';
  /** Whether any confinement applies. */
  readonly enforced: boolean;
  /** Whether the plugin can use the network (and, on Linux, Unix sockets). */
  readonly network: boolean;
  /** Whether connecting to host Unix socket files is blocked. */
  readonly unixSocketsBlocked: boolean;
  /**
   * Whether the plugin is refused the host's abstract Unix sockets and
   * signals to processes outside its sandbox (Landlock's scopes, kernel ABI
   * 6 and a usable launcher; under bubblewrap too). `false`: a plugin with
   * network connects to the host's abstract sockets.
   */
  readonly abstractSocketsScoped: boolean;
  /** The only writable host directories. */
  readonly writablePaths: readonly string[];
  /** Host paths readable inside, besides system directories. */
  readonly readablePaths: readonly string[];
  /** System directories readable inside. */
  readonly systemPaths: readonly string[];
  /** Paths masked even where a parent is readable (profile directory, secret locations). */
  readonly hiddenPaths: readonly string[];
  /** Whether the plugin has its own PID namespace (cannot see or signal host processes). */
  readonly ownPidNamespace: boolean;
  /** Whether every plugin process dies with the host, even on SIGKILL of the host. */
  readonly diesWithHost: boolean;
  /** Whether the plugin runs with all capabilities dropped. */
  readonly capabilitiesDropped: boolean;
  /** The data-memory cap of each plugin process, in bytes, or `null` when none applies. */
  readonly memoryLimitBytes: number | null;
  /** The caps of the plugin's whole process tree and what enforces them. */
  readonly limits: EnforcedTreeLimits;
  /** The host user and group the plugin runs as, when the host switches users (it runs as root); `null`: the host's own user. */
  readonly runsAs?: PluginIdentity | null;
  /** Names of the environment variables passed, when known. */
  readonly envNames?: readonly string[];
  /** The destinations reachable through the host's egress proxy, when the plugin has a list (its only way out). */
  readonly egress?: readonly string[];
  /** Why `backend: 'auto'` runs plugins under bubblewrap rather than the Landlock launcher (absent, untrusted or not proved). */
  readonly backendFallback?: string;
}

function findOnPath(name: string, searchPath: string | undefined): string | undefined {
  for (const dir of (searchPath ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/** The executable with the directories' descriptors inherited after its own, released together. */
function withDirectories<Command extends PluginCommand>(executable: Command, directories: PluginDirectories | undefined): Command {
  if (directories === undefined) return executable;
  return {
    ...executable,
    inheritFds: [...executable.inheritFds, ...boundFds(directories)],
    release: () => {
      executable.release();
      directories.close();
    },
  };
}

/** The host descriptors of the directories to bind: the writable one, and the data directory when it is another. */
function boundFds(directories: PluginDirectories): number[] {
  return directories.data.fd === directories.write.fd ? [directories.write.fd] : [directories.write.fd, directories.data.fd];
}

/** The directories as the launcher sees them, inherited from `firstFd` on in the order of {@link boundFds}. */
function boundDirectories(directories: PluginDirectories, firstFd: number): BoundDirectory[] {
  const bound: BoundDirectory[] = [{ path: directories.write.path, fd: firstFd, writable: true }];
  if (directories.data.fd !== directories.write.fd) bound.push({ path: directories.data.path, fd: firstFd + 1, writable: false });
  return bound;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** No per-process rlimit: a control group caps the tree, or nothing can set them. */
const NO_RLIMITS: RlimitCaps = { memoryBytes: null, maxProcesses: null };

/**
 * What the Landlock launcher sets before any fork: the group's join files
 * (`PluginGroup.joinFiles`) and, with a group, its data cap (as the joining shell does for
 * bubblewrap); without one, the rlimits `prlimit` would set.
 */
function launcherLimitsOf(group: PluginGroup | undefined, grouped: TreeLimits | undefined, rlimits: RlimitCaps): LauncherLimits {
  const dataBytes = (grouped === undefined ? rlimits.memoryBytes : grouped.memoryBytes) ?? undefined;
  const maxProcesses = rlimits.maxProcesses ?? undefined;
  return {
    ...(group === undefined ? {} : { joinFiles: group.joinFiles }),
    ...(group?.forkInto === undefined ? {} : { forkInto: group.forkInto }),
    ...(dataBytes === undefined ? {} : { dataBytes }),
    ...(maxProcesses === undefined ? {} : { maxProcesses }),
  };
}

/** Both checks, run side by side, before the plugin runs; either alone when the other is absent. */
function bothGates(first: Launch['gate'], second: Launch['gate']): Launch['gate'] {
  if (first === undefined || second === undefined) return first ?? second;
  return (launched) => ResultAsync.combine([first(launched), second(launched)]).map(() => undefined);
}

/** HOST_INVALID_OPTIONS for the first tree limit option that is neither a positive integer nor `false`. */
function invalidTreeLimit(options: SandboxSpawnerOptions): HostError | undefined {
  const given: [string, unknown, NumberKind][] = [
    ['memoryLimitBytes', options.memoryLimitBytes, 'bytes'],
    ['maxProcesses', options.maxProcesses, 'count'],
    ...Object.entries(options.pluginLimits ?? {}).flatMap(([id, limits]): [string, unknown, NumberKind][] => [
      [`pluginLimits.${id}.memoryBytes`, limits.memoryBytes, 'bytes'],
      [`pluginLimits.${id}.maxProcesses`, limits.maxProcesses, 'count'],
    ]),
  ];
  const bad = given.find(([, value, kind]) => value !== undefined && value !== false && numberProblem(kind, value) !== undefined);
  if (bad === undefined) return invalidCpuLimit(options);
  return hostError('HOST_INVALID_OPTIONS', `${bad[0]} ${numberProblem(bad[2], bad[1])!.replace(', got', ' or false, got')}`, {
    details: { option: bad[0], value: String(bad[1]) },
    hint: 'Give the cap in bytes (memory) or tasks (processes), or false to lift it.',
  });
}

/** HOST_INVALID_OPTIONS for the first CPU weight or quota, host-wide or per plugin, that is out of range. */
function invalidCpuLimit(options: SandboxSpawnerOptions): HostError | undefined {
  const levels: [string, TreeLimitOverride][] = [
    ['', { ...(options.cpuWeight === undefined ? {} : { cpuWeight: options.cpuWeight }), ...(options.cpuQuota === undefined ? {} : { cpuQuota: options.cpuQuota }) }],
    ...Object.entries(options.pluginLimits ?? {}).map(([id, limits]): [string, TreeLimitOverride] => [`pluginLimits.${id}.`, limits]),
  ];
  for (const [prefix, limits] of levels) {
    const weight = cpuWeightProblem(limits.cpuWeight);
    if (weight !== undefined) {
      return hostError('HOST_INVALID_OPTIONS', `${prefix}cpuWeight ${weight}`, {
        details: { option: `${prefix}cpuWeight`, value: String(limits.cpuWeight) },
        hint: "Give the tree's CPU weight against the host's 100 (default 25: the host keeps 80% of a contended core), or false for none.",
      });
    }
    const quota = cpuQuotaProblem(limits.cpuQuota);
    if (quota !== undefined) {
      return hostError('HOST_INVALID_OPTIONS', `${prefix}cpuQuota${quota.at} ${quota.problem}`, {
        details: { option: `${prefix}cpuQuota${quota.at}` },
        hint: 'Give cpuQuota as { cores: n }, the CPU time of n cores the whole tree may use (0.5 is half a core), or leave it out for no hard cap.',
      });
    }
  }
  return undefined;
}

const TREE_LIMITS_HINT =
  "Run the host where it can create control groups: as root with the cgroup v1 memory and pids hierarchies, or in a delegated cgroup v2 subtree (systemd-run --user --scope -p Delegate=yes …); or drop requireTreeLimits to accept per-process rlimits.";

/**
 * The backends a host may use, before any probe: `primary` is proved first;
 * under `backend: 'auto'`, `fallback` (bubblewrap) is proved when the
 * primary is not, and `fallbackReason` says why the launcher was not usable
 * when it was never a candidate; `bubblewrap`, when installed, also runs
 * plugins with an egress destination list under the launcher on a host
 * that is not root.
 */
interface BackendCandidates {
  readonly primary: SandboxBackend;
  readonly fallback?: SandboxBackend;
  readonly fallbackReason?: string;
  readonly bubblewrap?: SandboxBackend;
}

/** What a proof settled: the backend in use, how trees are capped, and why `auto` fell back, if it did. */
interface ProvedBackend {
  readonly backend: SandboxBackend;
  readonly limits: TreeLimitSupport;
  readonly fallbackReason?: string;
}

function bubblewrapCandidate(options: SandboxSpawnerOptions, seccomp: { offline: Buffer; networked: Buffer }, scopeLauncher: string | undefined): Result<SandboxBackend, HostError> {
  const bwrap = options.bwrapPath ?? findOnPath('bwrap', options.searchPath ?? process.env.PATH);
  if (bwrap === undefined || !isExecutableFile(bwrap)) {
    return err(
      sandboxUnsupported(
        'bubblewrap_missing',
        bwrap === undefined ? 'bubblewrap (bwrap) is not installed: it was not found on PATH.' : `bubblewrap is not executable at ${bwrap}.`,
        'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) or pass bwrapPath.',
        { bwrap_path: bwrap ?? null },
      ),
    );
  }
  // Run by the host as itself, root often: a bwrap others could have put there (a PATH directory they may write) is refused.
  const untrusted = untrustedProgram(bwrap);
  if (untrusted !== undefined) {
    return err(
      sandboxUnsupported(
        'bubblewrap_missing',
        `bubblewrap at ${bwrap} cannot be trusted: ${untrusted}.`,
        'Use the distribution\'s bwrap (owned by root, in a directory only root can write) or pass bwrapPath.',
        { bwrap_path: bwrap },
      ),
    );
  }
  return ok(bubblewrapBackend(bwrap, seccomp, options.setprivPath ?? ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p)), scopeLauncher));
}

/**
 * Whether a plugin's own user could run the launcher at `path` inside bubblewrap's sandbox, where it starts the plugin
 * behind setpriv: on a root host only a launcher others may read and execute (the root host's probe, which runs no
 * plugin user, would not see a launcher of mode 0750 fail every spawn). Any other host runs plugins as itself.
 */
function runsAsPluginUser(path: string): boolean {
  if (process.getuid?.() !== 0) return true;
  const mode = statSync(path, { throwIfNoEntry: false })?.mode ?? 0;
  return (mode & 0o005) === 0o005;
}

/** The backends of the platform, or why none can be used (before any probe). */
function platformBackend(options: SandboxSpawnerOptions): Result<BackendCandidates, HostError> {
  const platform = options.platform ?? process.platform;
  if (platform === 'linux') {
    const offline = pluginSeccompFilter(false);
    const networked = pluginSeccompFilter(true);
    if (offline === undefined || networked === undefined) {
      return err(
        sandboxUnsupported('architecture_unsupported', `Cannot enforce the sandbox on ${process.arch}: no seccomp syscall table for it.`, 'Run the host on x86-64 or arm64 Linux.', { arch: process.arch }),
      );
    }
    const seccomp = { offline, networked };
    const choice = options.backend ?? DEFAULT_SANDBOX_BACKEND;
    const found = options.launcherPath === undefined ? findLauncher() : findLauncher([options.launcherPath]);
    const abi = found.isOk() ? landlockAbi(found.value) : ok(0);
    if (abi.isErr()) {
      return err(sandboxUnsupported('launcher_unusable', `The launcher could not be asked which Landlock scopes the kernel has: ${abi.error}.`, LAUNCHER_UNANSWERED_HINT, { launcher_problem: abi.error }));
    }
    // Landlock's scopes (abstract Unix sockets, signals) come from the launcher under either backend, where the kernel has them.
    const scopeLauncher = found.isOk() && abi.value >= SCOPES_ABI && runsAsPluginUser(found.value) ? found.value : undefined;
    const bubblewrap = bubblewrapCandidate(options, seccomp, scopeLauncher);
    if (choice === 'bubblewrap') return bubblewrap.map((primary) => ({ primary, bubblewrap: primary }));
    const launcher = found.map((path) => landlockBackend(path, seccomp, scopeLauncher !== undefined));
    const withBubblewrap = bubblewrap.isOk() ? { bubblewrap: bubblewrap.value } : {};
    if (choice === 'landlock') {
      if (launcher.isErr()) {
        return err(sandboxUnsupported('launcher_unusable', `The Landlock launcher cannot be used: ${launcher.error}.`, LAUNCHER_HINT, { launcher_problem: launcher.error }));
      }
      return ok({ primary: launcher.value, ...withBubblewrap });
    }
    if (launcher.isErr()) return bubblewrap.map((primary) => ({ primary, bubblewrap: primary, fallbackReason: launcher.error }));
    return ok({ primary: launcher.value, ...withBubblewrap, ...(bubblewrap.isOk() ? { fallback: bubblewrap.value } : {}) });
  }
  if (platform === 'darwin') {
    const sandboxExec = options.sandboxExecPath ?? '/usr/bin/sandbox-exec';
    if (!isExecutableFile(sandboxExec)) {
      return err(sandboxUnsupported('sandbox_exec_missing', `sandbox-exec is not available at ${sandboxExec}.`, 'Run on macOS, where /usr/bin/sandbox-exec ships with the system.', { sandbox_exec_path: sandboxExec }));
    }
    return ok({ primary: seatbeltBackend(sandboxExec) });
  }
  return err(
    sandboxUnsupported('platform_unsupported', `No OS sandbox backend exists for platform ${platform}; plugins are not run unconfined.`, 'Run the host on Linux (bubblewrap) or macOS (Seatbelt).', { platform }),
  );
}

const LAUNCHER_UNANSWERED_HINT =
  'The launcher was started and did not run to its answer (the machine refused a process, or was too loaded for 10 s): plugins are not started without the scopes it would give. Open the host again when the machine has room; if it keeps failing, run the launcher with --landlock-abi by hand.';

const LAUNCHER_HINT =
  'Build it with `npm run build` (it needs a C compiler: apt-get install gcc libc6-dev), keep it owned by root or the host user and writable by nobody else, pass launcherPath, or choose backend "bubblewrap" or "auto".';

/** Whether `backend` runs on Linux with namespaces (bubblewrap or the Landlock launcher). */
function isLinuxBackend(backend: SandboxBackend | undefined): boolean {
  return backend?.name === 'bubblewrap' || backend?.name === 'landlock';
}

/**
 * Proves the candidates' primary backend, and under `auto` bubblewrap when
 * the primary cannot be proved; the first proved is the one used.
 */
async function proveCandidates(candidates: BackendCandidates, options: SandboxSpawnerOptions, logger: Logger): Promise<Result<ProvedBackend, HostError>> {
  const primary = await proveBackend(candidates.primary, options, logger);
  if (primary.isOk()) return ok({ backend: candidates.primary, limits: primary.value, ...(candidates.fallbackReason === undefined ? {} : { fallbackReason: candidates.fallbackReason }) });
  if (candidates.fallback === undefined || primary.error.code !== 'PLUGIN_SANDBOX_UNSUPPORTED' || primary.error.details?.cause === 'tree_limits_unavailable') return err(primary.error);
  const fallbackReason = `the Landlock launcher was not proved: ${primary.error.message}`;
  logger.warn({ reason: fallbackReason }, 'sandbox backend auto: falling back to bubblewrap');
  const fallback = await proveBackend(candidates.fallback, options, logger);
  return fallback.map((limits) => ({ backend: candidates.fallback!, limits, fallbackReason }));
}

/**
 * Proves that `backend` enforces (once per host process and launcher) and
 * finds how plugin trees are capped; refused when `requireTreeLimits` asks
 * for groups that cannot be used.
 */
async function proveBackend(backend: SandboxBackend, options: SandboxSpawnerOptions, logger: Logger): Promise<Result<TreeLimitSupport, HostError>> {
  const platform = options.platform ?? process.platform;
  const treeSupport: Promise<TreeLimitSupport> =
    !isLinuxBackend(backend)
      ? Promise.resolve({ tree: undefined, cause: `control groups do not exist on ${platform}` })
      : options.controlGroups === 'off'
        ? Promise.resolve({ tree: undefined, cause: 'control groups turned off by the host (controlGroups: "off")' })
        : probeTreeLimits();
  const [proved, limits] = await Promise.all([probeSandbox(backend), treeSupport]);
  if (proved.isErr()) return err(proved.error);
  logger.info({ backend: backend.name, launcher: backend.command }, 'sandbox enforcement proved');
  if (isLinuxBackend(backend) && !backend.scoped) {
    logger.warn(
      { backend: backend.name },
      'plugins are not scoped by Landlock (kernel ABI below 6, or no usable Landlock launcher under bubblewrap): a plugin with network connects to the host\'s abstract Unix sockets',
    );
  }
  if (limits.tree === undefined) {
    if (options.requireTreeLimits === true) {
      return err(sandboxUnsupported('tree_limits_unavailable', `No control group can cap a plugin's whole process tree on this host: ${limits.cause}.`, TREE_LIMITS_HINT, { limits_cause: limits.cause }));
    }
    logger.warn({ cause: limits.cause }, 'plugin trees are not capped as a whole: falling back to per-process rlimits and a sized /dev/shm');
  } else {
    logger.info({ mechanism: limits.tree.mechanism, parents: limits.tree.parents }, 'plugin process trees capped by control groups');
    if (limits.tree.cpuUnavailable !== undefined) logger.warn({ cause: limits.tree.cpuUnavailable }, 'plugin trees get no CPU weight: the host is not shielded from a busy plugin');
  }
  const leaking = inheritableDescriptors();
  if (leaking.length > 0) {
    logger.warn({ fds: leaking }, 'the host process holds descriptors without close-on-exec; every plugin inherits them (fix whatever starts the host)');
  }
  return ok(limits);
}

/**
 * Spawns plugins with exactly their declared powers. On Linux through
 * bubblewrap, on macOS through Seatbelt; anywhere else, or where a real probe
 * cannot prove enforcement, creation fails closed with
 * PLUGIN_SANDBOX_UNSUPPORTED. The only way around that is the loudly named,
 * dev-profile-only `dangerouslyRunUnsandboxed`.
 */
export class SandboxSpawner {
  private readonly secretPaths: readonly string[];
  private readonly prlimitPath: string | undefined;
  private readonly setprivPath: string | undefined;
  private readonly logger: Logger;
  private egressProxy: EgressProxy | undefined;
  private treeSupport: TreeLimitSupport;
  /** The backend in use (before a `first_spawn` proof: the one that will be proved first). */
  private backend: SandboxBackend | undefined;
  /** bubblewrap, when installed: plugins with an egress destination list run under it under the launcher on a host that is not root. */
  private readonly bubblewrap: SandboxBackend | undefined;
  /** Why `backend: 'auto'` did not use the Landlock launcher, once known. */
  private backendFallback: string | undefined;
  /** With `proveAt: 'first_spawn'`, the proof every spawn waits for until it passed once. */
  private unproved: (() => Promise<Result<ProvedBackend, HostError>>) | undefined;
  /**
   * An empty control group made after a spawn, while its plugin starts, for
   * the next spawn with the same limits, which then only forks into it
   * (making one is ~0.4 ms of the host's thread on the cold call's path).
   */
  private spareGroup: { readonly group: PluginGroup; readonly limits: TreeLimits } | undefined;
  /** Whether a group is made ahead: from {@link SandboxSpawner.keepSpareGroup} until {@link SandboxSpawner.dropSpareGroup}. */
  private sparing = false;

  private constructor(
    private readonly options: SandboxSpawnerOptions,
    candidates: BackendCandidates | undefined,
    proved: ProvedBackend | undefined,
    prove?: () => Promise<Result<ProvedBackend, HostError>>,
  ) {
    const home = options.homeDir;
    this.secretPaths = (options.secretPaths ?? DEFAULT_SECRET_PATHS).map((p) => expandHome(p, home));
    this.logger = options.logger ?? silentLogger;
    this.backend = proved?.backend ?? candidates?.primary;
    this.bubblewrap = candidates?.bubblewrap;
    this.prlimitPath = options.prlimitPath ?? (isLinuxBackend(this.backend) ? ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p)) : undefined);
    this.setprivPath = options.setprivPath ?? ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
    this.unproved = prove;
    this.treeSupport = { tree: undefined, cause: prove === undefined ? 'no sandbox backend' : 'not probed yet (the sandbox is proved at the first spawn)' };
    if (proved !== undefined) this.settle(proved);
  }

  /** Takes the outcome of the proof: the backend used and how trees are capped. */
  private settle(proved: ProvedBackend): void {
    this.backend = proved.backend;
    this.treeSupport = proved.limits;
    this.backendFallback = proved.fallbackReason;
    this.warnIfMemoryUncapped();
  }

  private warnIfMemoryUncapped(): void {
    if (this.backend?.name === 'bubblewrap' && this.treeSupport.tree === undefined && this.options.memoryLimitBytes !== false && this.prlimitPath === undefined) {
      this.logger.warn({}, 'util-linux prlimit not found: plugins run without a memory limit');
    }
  }

  /**
   * Picks the backend of the platform and proves it enforces (once per host
   * process and launcher; later calls reuse the outcome).
   */
  static create(options: SandboxSpawnerOptions = {}): ResultAsync<SandboxSpawner, HostError> {
    const logger = options.logger ?? silentLogger;
    const invalid = invalidTreeLimit(options);
    if (invalid !== undefined) return errAsync(invalid);
    if (options.dangerouslyRunUnsandboxed === true) {
      if (options.profileKind !== 'dev') {
        return errAsync(
          hostError('HOST_INVALID_OPTIONS', 'dangerouslyRunUnsandboxed is accepted only with profileKind "dev".', {
            details: { option: 'dangerouslyRunUnsandboxed', profile_kind: options.profileKind ?? null },
            hint: 'Remove dangerouslyRunUnsandboxed, or use a dev profile for local plugin development.',
          }),
        );
      }
      logger.warn({ option: 'dangerouslyRunUnsandboxed' }, 'PLUGINS RUN UNSANDBOXED: no network, file system or process confinement (dev profile)');
      return okAsync(new SandboxSpawner(options, undefined, undefined));
    }
    const candidates = platformBackend(options);
    if (options.proveAt === 'first_spawn') {
      let proving: Promise<Result<ProvedBackend, HostError>> | undefined;
      const prove = (): Promise<Result<ProvedBackend, HostError>> =>
        (proving ??= candidates.isErr() ? Promise.resolve(err(candidates.error)) : proveCandidates(candidates.value, options, logger));
      return okAsync(new SandboxSpawner(options, candidates.unwrapOr(undefined), undefined, prove));
    }
    if (candidates.isErr()) return errAsync(candidates.error);
    return ResultAsync.fromSafePromise(proveCandidates(candidates.value, options, logger)).andThen((proved) =>
      proved.map((value) => new SandboxSpawner(options, candidates.value, value)),
    );
  }

  /** The enforcing backend, or `none` in the dev-only unsandboxed mode. */
  get backendName(): SandboxBackendName | 'none' {
    return this.backend?.name ?? 'none';
  }

  /**
   * Whether this spawner shows a Node main module's verified copy at the
   * module's own path (bubblewrap), so commands for it can be verified with
   * `launcherMountsMain` and carry no integrity policy.
   */
  get mountsMain(): boolean {
    return isLinuxBackend(this.backend);
  }

  /** Whether plugins run as users of their own: the host is root and the backend is bubblewrap or the Landlock launcher. */
  get switchesUsers(): boolean {
    return isLinuxBackend(this.backend) && process.getuid?.() === 0;
  }

  /**
   * The user a plugin runs as (see `pluginIdentity`), or `undefined` when
   * plugins run as the host's user (the host is not root, or not bubblewrap).
   *
   * @param dataRoot - The parent of every plugin's data directory.
   */
  pluginIdentity(dataRoot: string, pluginId: string): Result<PluginIdentity | undefined, HostError> {
    if (!this.switchesUsers) return ok(undefined);
    return checkUidRange(this.options.pluginUidRange ?? DEFAULT_PLUGIN_UID_RANGE).andThen((range) => pluginIdentity(dataRoot, pluginId, range));
  }

  /**
   * The user an install's introspection runs a package's server as (see
   * `introspectionIdentity`: an id no plugin is given), or `undefined` when
   * plugins run as the host's user.
   */
  introspectionIdentity(): Result<PluginIdentity | undefined, HostError> {
    if (!this.switchesUsers) return ok(undefined);
    return checkUidRange(this.options.pluginUidRange ?? DEFAULT_PLUGIN_UID_RANGE).map((range) => introspectionIdentity(range));
  }

  /**
   * Spawns a plugin in its sandbox. The executable's descriptors (and the
   * request's directories) are released whatever the outcome.
   */
  spawn(request: SandboxSpawnRequest): ResultAsync<PluginProcess, HostError> {
    const prove = this.unproved;
    if (prove !== undefined) {
      return ResultAsync.fromSafePromise(prove()).andThen((proved) => {
        if (proved.isErr()) {
          request.executable.release();
          request.directories?.close();
          return errAsync(proved.error);
        }
        if (this.unproved === prove) {
          this.unproved = undefined;
          this.settle(proved.value);
        }
        return this.spawn(request);
      });
    }
    if (request.gate !== undefined && !isLinuxBackend(this.backend)) {
      const { gate, ...ungated } = request;
      return gate()
        .orElse((error) => {
          request.executable.release();
          request.directories?.close();
          return errAsync(error);
        })
        .andThen(() => this.spawn(ungated));
    }
    const destinations = request.network ? [] : (request.egress ?? []);
    if (destinations.length > 0 && this.backend !== undefined) {
      const backend = this.backendFor(request);
      return this.egressRoute(request, destinations, backend).andThen((onConnection) => this.spawnConfined(request, onConnection, backend));
    }
    return this.spawnConfined(request, undefined, this.backend);
  }

  /**
   * The backend a request runs under: the host's, but for a plugin with an
   * egress destination list under the launcher on a host whose listener
   * helper cannot enter the launcher's sandboxes (not root, or root without
   * CAP_SYS_PTRACE in its bounding set), which runs under bubblewrap. The
   * helper opens the sandbox's network namespace through /proc, which a
   * process that is not dumpable (the launcher's process 1) shows only to a
   * process holding CAP_SYS_PTRACE.
   */
  private backendFor(request: SandboxPolicyRequest): SandboxBackend | undefined {
    const destinations = request.network ? [] : (request.egress ?? []);
    return destinations.length > 0 && this.backend?.name === 'landlock' && !helperEntersLauncherSandboxes() ? this.bubblewrap : this.backend;
  }

  /**
   * The entry of a plugin's connections into the host's egress proxy, once
   * the destination list parsed and the egress path was proved on this host;
   * otherwise PLUGIN_SANDBOX_UNSUPPORTED (cause `egress_unavailable`) and the
   * request's descriptors released: a plugin with a list never starts
   * without the proxy, nor with the whole network.
   */
  private egressRoute(request: SandboxSpawnRequest, destinations: readonly string[], backend: SandboxBackend | undefined): ResultAsync<(socket: Socket) => void, HostError> {
    const refuse = (error: HostError): ResultAsync<never, HostError> => {
      request.executable.release();
      request.directories?.close();
      return errAsync(error);
    };
    if (backend === undefined && this.backend?.name === 'landlock') {
      return refuse(
        sandboxUnsupported(
          'egress_unavailable',
          'The Landlock launcher runs plugins with an egress destination list only on a root host whose capability bounding set keeps CAP_SYS_PTRACE (the listener helper enters the sandbox\'s network namespace), and bubblewrap, which would run them otherwise, is not installed.',
          'Install bubblewrap, run the host as root with CAP_SYS_PTRACE in its bounding set, or give the plugin network: true.',
        ),
      );
    }
    if (backend === undefined || !isLinuxBackend(backend)) {
      return refuse(sandboxUnsupported('egress_unavailable', `Egress destination lists are enforced with bubblewrap or the Landlock launcher only, not ${backend?.name ?? 'no sandbox'}.`, 'Run plugins with an egress list on Linux, or give the plugin network: true.'));
    }
    const policy = egressPolicy(destinations, '/declared_capabilities/egress');
    if (policy.isErr()) return refuse(policy.error);
    return ResultAsync.fromSafePromise(probeEgress(backend, { installRoot: request.executable.installRoot, writeDir: request.writeDir })).andThen((proved) => {
      if (proved.isErr()) return refuse(proved.error);
      this.egressProxy ??= new EgressProxy({
        ...(this.options.egressResolver === undefined ? {} : { resolver: this.options.egressResolver }),
        ...(this.options.onEgress === undefined ? {} : { onEvent: this.options.onEgress }),
      });
      return okAsync(this.egressProxy.attach(request.pluginId ?? '', policy.value));
    });
  }

  /**
   * Spawns in the sandbox; with `onConnection`, the host listens on the proxy
   * address inside the plugin's network namespace before the plugin runs,
   * and serves every connection made there itself.
   */
  private spawnConfined(request: SandboxSpawnRequest, onConnection: ((socket: Socket) => void) | undefined, backend: SandboxBackend | undefined): ResultAsync<PluginProcess, HostError> {
    // Started before the layout and the fork, which take the host's thread: the check's worker threads run meanwhile.
    const checking = request.gate?.();
    const lifecycle = this.lifecycle();
    const { directories } = request;
    // Only the Linux backends mount descriptors; Seatbelt rules name the verified paths, and nothing needs the descriptors then.
    const bindsDescriptors = isLinuxBackend(backend);
    const withDirs = withDirectories(request.executable, bindsDescriptors ? directories : undefined);
    if (!bindsDescriptors) directories?.close();
    // Under bubblewrap, the launcher that scopes the plugin is handed over after everything else the launch inherits.
    const scoping: Result<{ executable: typeof withDirs; scopeFd?: number }, string> = backend === undefined ? ok({ executable: withDirs }) : withScopeLauncher(backend, withDirs);
    if (scoping.isErr()) {
      return errAsync(hostError('PLUGIN_SPAWN_FAILED', scoping.error, { details: { cause: 'scope_launcher_unavailable' }, hint: LAUNCHER_HINT }));
    }
    const { executable, scopeFd } = scoping.value;
    if (!bindsDescriptors && executable.mountedMain?.required === true) {
      executable.release();
      return errAsync(mountRequired(backend?.name ?? 'the unsandboxed mode'));
    }
    const switchesItself = backend?.name === 'landlock';
    if (request.identity !== undefined && !switchesItself && (backend?.name !== 'bubblewrap' || this.setprivPath === undefined)) {
      executable.release();
      return errAsync(
        sandboxUnsupported('probe_failed', 'Cannot run the plugin as its own user: util-linux setpriv was not found (or the backend cannot switch users).', 'Install util-linux (setpriv) or pass setprivPath.', {
          setpriv_path: this.setprivPath ?? null,
        }),
      );
    }
    if (backend === undefined) {
      this.logger.warn({ argv0: executable.argv[0] }, 'spawning a plugin UNSANDBOXED (dangerouslyRunUnsandboxed)');
      return spawnPluginProcess({ ...lifecycle, executable, env: request.env, ...(request.cwd === undefined ? {} : { cwd: request.cwd }) });
    }
    // The launcher mounts a pinned interpreter read-only from its descriptor and closes the descriptor: the plugin runs it
    // by path and never holds a descriptor through which a file its user owns could be reopened for writing.
    const program = bindsDescriptors ? request.executable.programFile : undefined;
    // It also shows a verified Node main module at its own path, which spares Node the integrity policy.
    const mountedMain = bindsDescriptors ? request.executable.mountedMain : undefined;
    const argv = mountedMain?.argv ?? executable.argv;
    const pluginArgv = program === undefined ? argv : [program.path, ...argv.slice(1)];
    const launchEnv = onConnection === undefined ? request.env : { ...request.env, ...proxyEnvironment() };
    const bound: BoundDirectory[] = [
      ...(program === undefined ? [] : [{ path: program.path, fd: 3 + program.index, writable: false }]),
      ...(directories === undefined || !bindsDescriptors ? [] : boundDirectories(directories, 3 + request.executable.inheritFds.length)),
    ];
    const layout = resolveLayout({
      network: request.network,
      installRoot: executable.installRoot,
      writeDir: request.writeDir,
      readOnlyPaths: [...executable.readOnlyPaths, ...(request.readOnlyPaths ?? [])],
      hiddenPaths: request.hiddenPaths,
      secretPaths: this.secretPaths,
      systemPaths: backend.systemPaths,
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
      ...(bound.length === 0 ? {} : { boundDirectories: bound }),
      ...(request.identity === undefined ? {} : { identity: request.identity }),
    });
    if (layout.isErr()) {
      executable.release();
      return errAsync(layout.error);
    }
    const limits = this.treeLimits(request.pluginId);
    const mounted = mountedMain === undefined ? layout.value : { ...layout.value, mountedFiles: [{ fd: 3 + mountedMain.index, path: mountedMain.path }] };
    // Every process gets its own writable /tmp (servers write there by name instead of TMPDIR), sized like /dev/shm.
    const withTmp = { ...mounted, tmpBytes: privateTmpBytes(limits.memoryBytes) };
    const sized = limits.memoryBytes === null ? withTmp : { ...withTmp, shmBytes: limits.memoryBytes };
    const firstFreeFd = 3 + executable.inheritFds.length;
    const tree = this.treeSupport.tree;
    if (tree === undefined && limits.cpuCores !== undefined) {
      executable.release();
      return errAsync(
        hostError('PLUGIN_SPAWN_FAILED', `the plugin's CPU quota (${limits.cpuCores} cores) cannot be enforced: no control group holds its tree (${this.treeSupport.cause})`, {
          details: { cpu_cores: limits.cpuCores, cause: this.treeSupport.cause },
          hint: 'Run the host where it can create control groups with the cpu controller, or drop cpuQuota.',
        }),
      );
    }
    const grouped = tree !== undefined && (limits.memoryBytes !== null || limits.maxProcesses !== null || usesCpu(limits));
    // With a control group the shell that joins it (or the Landlock launcher) sets the data cap too; prlimit runs only in the fallback.
    const rlimits = grouped ? NO_RLIMITS : this.processRlimits(limits, backend);
    let group: PluginGroup | undefined;
    if (grouped) {
      const created = this.takeGroup(tree, limits);
      if (created.isErr()) {
        executable.release();
        return errAsync(
          hostError('PLUGIN_SPAWN_FAILED', `cannot create the control group that caps the plugin's process tree: ${created.error}`, {
            details: { mechanism: tree.mechanism, cause: created.error },
            hint: 'Check that the host may still create groups under its own control group (the probe could at start).',
          }),
        );
      }
      group = created.value;
    }
    const launcherLimits: LauncherLimits | undefined = backend.setsLimits ? launcherLimitsOf(group, grouped ? limits : undefined, rlimits) : undefined;
    const { args, extraInput } = backend.launch(sized, pluginArgv, firstFreeFd, onConnection === undefined ? undefined : firstFreeFd + 1, launcherLimits, scopeFd);
    this.logger.debug({ backend: backend.name, network: request.network, write_dir: layout.value.writeDir }, 'spawning sandboxed plugin');
    const prlimits = [
      ...(rlimits.memoryBytes === null ? [] : [`--data=${rlimits.memoryBytes}`]),
      ...(rlimits.maxProcesses === null ? [] : [`--nproc=${rlimits.maxProcesses}`]),
    ];
    let launch =
      prlimits.length === 0 || backend.setsLimits ? { command: backend.command, args } : { command: this.prlimitPath!, args: [...prlimits, '--', backend.command, ...args] };
    // The shell also turns core dumps off, so it runs without a group too (the launcher does both itself).
    if (!backend.setsLimits) launch = joinGroupLaunch(group?.joinFiles ?? [], launch.command, launch.args, group === undefined ? undefined : (limits.memoryBytes ?? undefined));
    let listener: Server | undefined;
    const listening: Launch['gate'] =
      onConnection === undefined
        ? undefined
        : (launched) =>
            sandboxProxyListener(launched)
              .map((server) => {
                listener = server;
                server.on('connection', onConnection);
              })
              .mapErr(listenerUnavailable);
    const gate = bothGates(listening, checking === undefined ? undefined : () => checking);
    return spawnChild(
      executable,
      {
        ...launch,
        env: launchEnv,
        cwd: '/',
        ...(extraInput ? { extraInput } : {}),
        ...(gate === undefined ? {} : { gate }),
        ...(onConnection === undefined ? {} : { launcherReport: true }),
        ...(backend.detachesItself ? { inHostSession: true } : {}),
      },
      // The launcher's name tells a stop whether the sandbox is still being set up (no plugin to send SIGTERM to).
      { ...lifecycle, tree: backend.tree, launcherFailure: backend.launcherFailure, setupCommand: commandNameOf(backend.command) },
    )
      .map((child): PluginProcess => {
        const held = listener;
        if (held !== undefined) void child.exited.then(() => held.close());
        if (group !== undefined) {
          if (this.sparing) setImmediate(() => this.makeSpareGroup(tree!, limits));
          return new TreeLimitedProcess(child, group, this.logger);
        }
        if (rlimits.memoryBytes === null && rlimits.maxProcesses === null) return child;
        return new RlimitedProcess(child, rlimits);
      })
      .mapErr((error) => {
        listener?.close();
        // A tree killed by a failed gate may take a moment to leave the group.
        if (group !== undefined) removeGroup(group, this.logger);
        return error;
      });
  }

  /**
   * From now on, after each spawn whose plugin is capped by a control group,
   * makes an empty group with the same limits for the next such spawn, which
   * then only forks into it. Whoever calls this calls {@link SandboxSpawner.dropSpareGroup}
   * when done with the spawner (PluginHost does on `close`), so that no group
   * outlives its use; one left by a host that died is removed as stale by
   * the next host's probe.
   */
  keepSpareGroup(): void {
    this.sparing = true;
  }

  /**
   * Removes the control group made ahead for the next spawn and makes none
   * from now on (spawns still work, each making its own group).
   */
  dropSpareGroup(): void {
    this.sparing = false;
    const spare = this.spareGroup;
    this.spareGroup = undefined;
    if (spare !== undefined) removeGroup(spare.group, this.logger);
  }

  /**
   * Reports now, through `onEgress`, every summary of refused egress
   * connections still waiting for its budget to refill (`suppressed`), so
   * that no count is lost when the spawner's user closes. PluginHost calls it
   * on `close` for the spawner it made; an application that passes its own
   * spawner calls it when done with it. Spawning still works afterwards.
   */
  flushEgressEvents(): void {
    this.egressProxy?.close();
  }

  /** The spare group when it carries `limits`, else a new one (a spare with other limits is removed). */
  private takeGroup(tree: GroupTree, limits: TreeLimits): Result<PluginGroup, string> {
    const spare = this.spareGroup;
    this.spareGroup = undefined;
    if (spare !== undefined && sameTreeLimits(spare.limits, limits)) return ok(spare.group);
    if (spare !== undefined) removeGroup(spare.group, this.logger);
    return tree.create(limits);
  }

  /** Makes the spare group for the next spawn; one that cannot be made is left to that spawn, which reports why. */
  private makeSpareGroup(tree: GroupTree, limits: TreeLimits): void {
    if (!this.sparing || this.spareGroup !== undefined) return;
    const made = tree.create(limits);
    if (made.isOk()) this.spareGroup = { group: made.value, limits };
  }

  /** The tree limits of `pluginId` (its `pluginLimits` entry over the host's options over the defaults). */
  private treeLimits(pluginId: string | undefined): TreeLimits {
    const o = this.options;
    return resolveTreeLimits(
      {
        ...(o.memoryLimitBytes === undefined ? {} : { memoryBytes: o.memoryLimitBytes }),
        ...(o.maxProcesses === undefined ? {} : { maxProcesses: o.maxProcesses }),
        ...(o.cpuWeight === undefined ? {} : { cpuWeight: o.cpuWeight }),
        ...(o.cpuQuota === undefined ? {} : { cpuQuota: o.cpuQuota }),
      },
      pluginId === undefined ? undefined : o.pluginLimits?.[pluginId],
    );
  }

  /**
   * The per-process rlimits a spawn sets (through `prlimit`, or the Landlock
   * launcher itself): the data segment of each process always; RLIMIT_NPROC
   * only as the fallback and only for a root host, whose plugins run as users
   * of their own (for a shared user it would count the host's own processes).
   */
  private processRlimits(limits: TreeLimits, backend: SandboxBackend | undefined = this.backend): RlimitCaps {
    if (this.prlimitPath === undefined && backend?.setsLimits !== true) return NO_RLIMITS;
    const nproc = this.treeSupport.tree === undefined && process.getuid?.() === 0;
    return { memoryBytes: limits.memoryBytes, maxProcesses: nproc ? limits.maxProcesses : null };
  }

  /** How the tree limits of `pluginId` are enforced, for `describe`. */
  private enforcedLimits(pluginId: string | undefined): EnforcedTreeLimits {
    if (!isLinuxBackend(this.backend)) return { mechanism: 'none', memoryBytes: null, maxProcesses: null, cpuWeight: null, cpuCores: null };
    const limits = this.treeLimits(pluginId);
    const tree = this.treeSupport.tree;
    const cpuCause = usesCpu(limits) ? (tree === undefined ? this.treeSupport.cause : tree.cpuUnavailable) : undefined;
    const cpu = {
      cpuWeight: cpuCause === undefined ? (limits.cpuWeight ?? null) : null,
      cpuCores: cpuCause === undefined ? (limits.cpuCores ?? null) : null,
      ...(cpuCause === undefined ? {} : { cpuCause }),
    };
    if (tree !== undefined) return { mechanism: tree.mechanism, memoryBytes: limits.memoryBytes, maxProcesses: limits.maxProcesses, ...cpu };
    const rlimits = this.processRlimits(limits);
    return {
      mechanism: 'rlimit',
      memoryBytes: rlimits.memoryBytes,
      maxProcesses: rlimits.maxProcesses,
      ...cpu,
      fallbackCause: this.treeSupport.cause,
    };
  }

  /** The data-memory cap applied to spawns, when one is configured and something sets it (the group's shell, else `prlimit`). */
  private memoryLimit(pluginId: string | undefined): number | undefined {
    const limit = this.treeLimits(pluginId).memoryBytes;
    return limit === null || (this.treeSupport.tree === undefined && this.prlimitPath === undefined && this.backend?.setsLimits !== true) ? undefined : limit;
  }

  /** The policy a spawn of `request` enforces, as a plain object (for `info`). */
  describe(request: SandboxPolicyRequest & { readonly installRoot: string; readonly envNames?: readonly string[]; readonly identity?: PluginIdentity }): EnforcedPolicy {
    const backend = this.backendFor(request);
    const envNames = request.envNames === undefined ? {} : { envNames: [...request.envNames].sort() };
    if (backend === undefined) {
      return {
        backend: 'none',
        enforced: false,
        network: true,
        unixSocketsBlocked: false,
        abstractSocketsScoped: false,
        writablePaths: ['(everything the host user can write)'],
        readablePaths: ['(everything the host user can read)'],
        systemPaths: [],
        hiddenPaths: [],
        ownPidNamespace: false,
        diesWithHost: false,
        capabilitiesDropped: false,
        memoryLimitBytes: null,
        limits: { mechanism: 'none', memoryBytes: null, maxProcesses: null, cpuWeight: null, cpuCores: null },
        ...envNames,
      };
    }
    return {
      backend: backend.name,
      enforced: true,
      network: request.network,
      unixSocketsBlocked: !request.network,
      abstractSocketsScoped: backend.scoped,
      writablePaths: [request.writeDir],
      readablePaths: [...new Set([request.installRoot, ...(request.readOnlyPaths ?? []).filter((p) => !backend.systemPaths.some((s) => isWithin(p, s))), request.writeDir])],
      systemPaths: [...backend.systemPaths],
      hiddenPaths: [...request.hiddenPaths, ...this.secretPaths].filter((p) => isAbsolute(p)),
      ownPidNamespace: backend.containsTree,
      diesWithHost: backend.containsTree,
      capabilitiesDropped: isLinuxBackend(backend),
      memoryLimitBytes: this.memoryLimit(request.pluginId) ?? null,
      limits: this.enforcedLimits(request.pluginId),
      runsAs: request.identity ?? null,
      ...envNames,
      ...(this.backendFallback === undefined ? {} : { backendFallback: this.backendFallback }),
      ...(request.network || (request.egress ?? []).length === 0 ? {} : { egress: [...(request.egress ?? [])] }),
    };
  }

  private lifecycle(): LifecycleOptions {
    const o = this.options;
    return {
      ...(o.stdinGraceMs === undefined ? {} : { stdinGraceMs: o.stdinGraceMs }),
      ...(o.termGraceMs === undefined ? {} : { termGraceMs: o.termGraceMs }),
      ...(o.stderrRingBytes === undefined ? {} : { stderrRingBytes: o.stderrRingBytes }),
      ...(o.stderrLineMaxBytes === undefined ? {} : { stderrLineMaxBytes: o.stderrLineMaxBytes }),
      ...(o.clock === undefined ? {} : { clock: o.clock }),
      ...(o.logger === undefined ? {} : { logger: o.logger }),
    };
  }
}
