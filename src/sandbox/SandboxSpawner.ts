import { accessSync, existsSync, constants as fsConstants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { silentLogger, type Logger } from '../ports/ports.js';
import type { LifecycleOptions } from '../process/ChildPluginProcess.js';
import type { PluginProcess } from '../process/PluginProcess.js';
import { inheritableDescriptors } from '../process/processTree.js';
import { spawnChild } from '../process/spawnChild.js';
import { spawnPluginProcess } from '../process/spawnPluginProcess.js';
import type { VerifiedExecutable } from '../process/VerifiedExecutable.js';
import { bubblewrapBackend, seatbeltBackend, type SandboxBackend, type SandboxBackendName } from './backends.js';
import { probeSandbox, sandboxUnsupported } from './probe.js';
import { resolveLayout } from './SandboxLayout.js';
import { unixSocketDenyFilter } from './seccompFilter.js';
import { DEFAULT_SECRET_PATHS, expandHome } from './secretLocations.js';

/** Default cap on each plugin's data memory: 2 GiB. */
export const DEFAULT_PLUGIN_MEMORY_LIMIT_BYTES = 2 * 1024 ** 3;

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
  /** The Seatbelt launcher on macOS. Default `/usr/bin/sandbox-exec`. */
  readonly sandboxExecPath?: string;
  /** The platform to sandbox for. Default `process.platform`. */
  readonly platform?: NodeJS.Platform;
  /** The secret locations hidden from plugins (`~/` = home). Default {@link DEFAULT_SECRET_PATHS}. */
  readonly secretPaths?: readonly string[];
  /** The home directory that `~/` means. Default `os.homedir()`. */
  readonly homeDir?: string;
  /** The `PATH` searched for `bwrap`. Default `process.env.PATH`. */
  readonly searchPath?: string;
  /** Where sandbox decisions are logged. Default silent. */
  readonly logger?: Logger;
  /**
   * Cap on each plugin's data memory (RLIMIT_DATA: heap and private writable
   * mappings), inherited by every process of the plugin; allocations beyond it
   * fail inside the plugin instead of exhausting the machine. Applied on Linux
   * through util-linux `prlimit`. Default {@link DEFAULT_PLUGIN_MEMORY_LIMIT_BYTES};
   * `false` leaves the host's own limit.
   */
  readonly memoryLimitBytes?: number | false;
  /** The util-linux `prlimit` binary. Default `/usr/bin/prlimit` or `/bin/prlimit` when present. */
  readonly prlimitPath?: string;
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
}

/** A request to spawn one plugin in its sandbox. */
export interface SandboxSpawnRequest extends SandboxPolicyRequest {
  /** What to run, as verified just before this spawn. */
  readonly executable: VerifiedExecutable;
  /** The complete environment of the plugin (from EnvDenylist); nothing else of the host's is passed. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory inside the sandbox. Default the install root. */
  readonly cwd?: string;
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
  /** Names of the environment variables passed, when known. */
  readonly envNames?: readonly string[];
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

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
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
  private readonly logger: Logger;

  private constructor(
    private readonly backend: SandboxBackend | undefined,
    private readonly options: SandboxSpawnerOptions,
  ) {
    const home = options.homeDir;
    this.secretPaths = (options.secretPaths ?? DEFAULT_SECRET_PATHS).map((p) => expandHome(p, home));
    this.logger = options.logger ?? silentLogger;
    this.prlimitPath = options.prlimitPath ?? (backend?.name === 'bubblewrap' ? ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p)) : undefined);
    if (backend?.name === 'bubblewrap' && options.memoryLimitBytes !== false && this.prlimitPath === undefined) {
      this.logger.warn({}, 'util-linux prlimit not found: plugins run without a memory limit');
    }
  }

  /**
   * Picks the backend of the platform and proves it enforces (once per host
   * process and launcher; later calls reuse the outcome).
   */
  static create(options: SandboxSpawnerOptions = {}): ResultAsync<SandboxSpawner, HostError> {
    const logger = options.logger ?? silentLogger;
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
      return okAsync(new SandboxSpawner(undefined, options));
    }
    const platform = options.platform ?? process.platform;
    let backend: SandboxBackend;
    if (platform === 'linux') {
      const bwrap = options.bwrapPath ?? findOnPath('bwrap', options.searchPath ?? process.env.PATH);
      if (bwrap === undefined || !isExecutableFile(bwrap)) {
        return errAsync(
          sandboxUnsupported(
            'bubblewrap_missing',
            bwrap === undefined ? 'bubblewrap (bwrap) is not installed: it was not found on PATH.' : `bubblewrap is not executable at ${bwrap}.`,
            'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) or pass bwrapPath.',
            { bwrap_path: bwrap ?? null },
          ),
        );
      }
      const filter = unixSocketDenyFilter();
      if (filter === undefined) {
        return errAsync(
          sandboxUnsupported('architecture_unsupported', `Cannot enforce network: false on ${process.arch}: no seccomp syscall table for it.`, 'Run the host on x86-64 or arm64 Linux.', { arch: process.arch }),
        );
      }
      backend = bubblewrapBackend(bwrap, filter);
    } else if (platform === 'darwin') {
      const sandboxExec = options.sandboxExecPath ?? '/usr/bin/sandbox-exec';
      if (!isExecutableFile(sandboxExec)) {
        return errAsync(sandboxUnsupported('sandbox_exec_missing', `sandbox-exec is not available at ${sandboxExec}.`, 'Run on macOS, where /usr/bin/sandbox-exec ships with the system.', { sandbox_exec_path: sandboxExec }));
      }
      backend = seatbeltBackend(sandboxExec);
    } else {
      return errAsync(
        sandboxUnsupported('platform_unsupported', `No OS sandbox backend exists for platform ${platform}; plugins are not run unconfined.`, 'Run the host on Linux (bubblewrap) or macOS (Seatbelt).', { platform }),
      );
    }
    return ResultAsync.fromSafePromise(probeSandbox(backend)).andThen((proved) => {
      if (proved.isErr()) return errAsync(proved.error);
      logger.info({ backend: backend.name, launcher: backend.command }, 'sandbox enforcement proved');
      const leaking = inheritableDescriptors();
      if (leaking.length > 0) {
        logger.warn({ fds: leaking }, 'the host process holds descriptors without close-on-exec; every plugin inherits them (fix whatever starts the host)');
      }
      return okAsync(new SandboxSpawner(backend, options));
    });
  }

  /** The enforcing backend, or `none` in the dev-only unsandboxed mode. */
  get backendName(): SandboxBackendName | 'none' {
    return this.backend?.name ?? 'none';
  }

  /** Spawns a plugin in its sandbox. The executable's descriptors are released whatever the outcome. */
  spawn(request: SandboxSpawnRequest): ResultAsync<PluginProcess, HostError> {
    const lifecycle = this.lifecycle();
    const { executable } = request;
    if (this.backend === undefined) {
      this.logger.warn({ argv0: executable.argv[0] }, 'spawning a plugin UNSANDBOXED (dangerouslyRunUnsandboxed)');
      return spawnPluginProcess({ ...lifecycle, executable, env: request.env, ...(request.cwd === undefined ? {} : { cwd: request.cwd }) });
    }
    const layout = resolveLayout({
      network: request.network,
      installRoot: executable.installRoot,
      writeDir: request.writeDir,
      readOnlyPaths: [...executable.readOnlyPaths, ...(request.readOnlyPaths ?? [])],
      hiddenPaths: request.hiddenPaths,
      secretPaths: this.secretPaths,
      systemPaths: this.backend.systemPaths,
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
    });
    if (layout.isErr()) {
      executable.release();
      return errAsync(layout.error);
    }
    const { args, extraInput } = this.backend.launch(layout.value, executable.argv, request.env, 3 + executable.inheritFds.length);
    this.logger.debug({ backend: this.backend.name, network: request.network, write_dir: layout.value.writeDir }, 'spawning sandboxed plugin');
    const limit = this.memoryLimit();
    const launch =
      limit === undefined
        ? { command: this.backend.command, args }
        : { command: this.prlimitPath!, args: [`--data=${limit}`, '--', this.backend.command, ...args] };
    return spawnChild(
      executable,
      { ...launch, env: request.env, cwd: '/', ...(extraInput ? { extraInput } : {}) },
      { ...lifecycle, tree: this.backend.tree, launcherFailure: this.backend.launcherFailure },
    );
  }

  /** The data-memory cap applied to spawns, when one is configured and `prlimit` exists. */
  private memoryLimit(): number | undefined {
    const limit = this.options.memoryLimitBytes ?? DEFAULT_PLUGIN_MEMORY_LIMIT_BYTES;
    return limit === false || this.prlimitPath === undefined ? undefined : limit;
  }

  /** The policy a spawn of `request` enforces, as a plain object (for `info`). */
  describe(request: SandboxPolicyRequest & { readonly installRoot: string; readonly envNames?: readonly string[] }): EnforcedPolicy {
    const backend = this.backend;
    const envNames = request.envNames === undefined ? {} : { envNames: [...request.envNames].sort() };
    if (backend === undefined) {
      return {
        backend: 'none',
        enforced: false,
        network: true,
        unixSocketsBlocked: false,
        writablePaths: ['(everything the host user can write)'],
        readablePaths: ['(everything the host user can read)'],
        systemPaths: [],
        hiddenPaths: [],
        ownPidNamespace: false,
        diesWithHost: false,
        capabilitiesDropped: false,
        memoryLimitBytes: null,
        ...envNames,
      };
    }
    return {
      backend: backend.name,
      enforced: true,
      network: request.network,
      unixSocketsBlocked: !request.network,
      writablePaths: [request.writeDir],
      readablePaths: [request.installRoot, ...(request.readOnlyPaths ?? []), request.writeDir],
      systemPaths: [...backend.systemPaths],
      hiddenPaths: [...request.hiddenPaths, ...this.secretPaths].filter((p) => isAbsolute(p)),
      ownPidNamespace: backend.containsTree,
      diesWithHost: backend.containsTree,
      capabilitiesDropped: backend.name === 'bubblewrap',
      memoryLimitBytes: this.memoryLimit() ?? null,
      ...envNames,
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
