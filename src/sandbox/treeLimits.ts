import type { Readable, Writable } from 'node:stream';
import exhaustionData from '../../etc/sandbox/rlimit-exhaustion.json' with { type: 'json' };
import treeLimitData from '../../etc/sandbox/tree-limits.json' with { type: 'json' };
import { silentLogger, type Logger } from '../ports/ports.js';
import { withLimitHit } from '../process/exitInfo.js';
import type { ExitInfo, PluginProcess, ResourceLimitHit, StopOptions, TreeLimitMechanism } from '../process/PluginProcess.js';
import { sendSignal } from '../process/processTree.js';
import type { PluginGroup, TreeLimits } from './controlGroups.js';

/**
 * The default caps on a plugin's whole tree: memory 2 GiB, 512 tasks, and a
 * CPU weight of 25 (a quarter of the host's; no hard CPU cap), from
 * `etc/sandbox/tree-limits.json`.
 */
export const DEFAULT_TREE_LIMITS: { readonly memoryBytes: number; readonly maxProcesses: number; readonly cpuWeight: number } = {
  memoryBytes: treeLimitData.memoryBytes,
  maxProcesses: treeLimitData.maxProcesses,
  cpuWeight: treeLimitData.cpuWeight,
};

/** A hard cap on the CPU time of a plugin's whole tree. */
export interface CpuQuota {
  /**
   * The CPU time of this many cores, per period of 100 ms, for all the
   * tree's threads together: `0.5` is half of one core, `2` two whole cores.
   * From 0.01 to 1024 (`etc/sandbox/tree-limits.json`).
   */
  readonly cores: number;
}

/** Caps that replace the defaults; `false` lifts a cap, an omitted field keeps the level below. */
export interface TreeLimitOverride {
  /** Bytes of memory of the whole tree, tmpfs included. */
  readonly memoryBytes?: number | false;
  /** Tasks (processes and threads) of the whole tree. */
  readonly maxProcesses?: number | false;
  /**
   * The whole tree's CPU weight against the host's own (100) on the cgroup v2
   * scale, a whole number from 1 to 10000; `false` weighs the tree's threads
   * one by one, as the host's.
   */
  readonly cpuWeight?: number | false;
  /** A hard cap on the whole tree's CPU time. */
  readonly cpuQuota?: CpuQuota;
}

/** The limits of one plugin: its own override, else the host's, else {@link DEFAULT_TREE_LIMITS}. */
export function resolveTreeLimits(host: TreeLimitOverride, plugin: TreeLimitOverride | undefined): TreeLimits {
  const pick = (key: 'memoryBytes' | 'maxProcesses' | 'cpuWeight'): number | null => {
    const value = plugin?.[key] ?? host[key] ?? DEFAULT_TREE_LIMITS[key];
    return value === false ? null : value;
  };
  const cpuWeight = pick('cpuWeight');
  const cpuCores = (plugin?.cpuQuota ?? host.cpuQuota)?.cores;
  return {
    memoryBytes: pick('memoryBytes'),
    maxProcesses: pick('maxProcesses'),
    ...(cpuWeight === null ? {} : { cpuWeight }),
    ...(cpuCores === undefined ? {} : { cpuCores }),
  };
}

const CPU_WEIGHT_MAX: number = treeLimitData.cpuWeightMax;
const CPU_QUOTA_MIN_CORES: number = treeLimitData.cpuQuotaMinCores;
const CPU_QUOTA_MAX_CORES: number = treeLimitData.cpuQuotaMaxCores;

/** What is wrong with `value` as a CPU weight (`false` or 1-10000), or `undefined`. */
export function cpuWeightProblem(value: unknown): string | undefined {
  if (value === undefined || value === false || (Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= CPU_WEIGHT_MAX)) return undefined;
  return `must be a whole number from 1 to ${CPU_WEIGHT_MAX} or false, got ${typeof value === 'number' ? String(value) : typeof value}`;
}

/** What is wrong with `value` as a {@link CpuQuota}, naming the field at fault (`''` or `.cores`), or `undefined`. */
export function cpuQuotaProblem(value: unknown): { readonly at: string; readonly problem: string } | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { at: '', problem: `must be { cores: n }, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : String(value)}` };
  const other = Object.keys(value).find((key) => key !== 'cores');
  if (other !== undefined) return { at: '', problem: `has no field ${other} (only cores)` };
  const cores = (value as { cores?: unknown }).cores;
  if (typeof cores === 'number' && Number.isFinite(cores) && cores >= CPU_QUOTA_MIN_CORES && cores <= CPU_QUOTA_MAX_CORES) return undefined;
  return { at: '.cores', problem: `must be a number of cores from ${CPU_QUOTA_MIN_CORES} to ${CPU_QUOTA_MAX_CORES}, got ${typeof cores === 'number' ? String(cores) : typeof cores}` };
}

/** How a plugin's tree limits are enforced, as `info().enforced_capabilities.limits` reports it. */
export interface EnforcedTreeLimits {
  /** `cgroup-v1`/`cgroup-v2` cap the whole tree; `rlimit` is the per-process fallback; `none` caps nothing. */
  readonly mechanism: TreeLimitMechanism | 'none';
  /** The memory cap in bytes (for `rlimit`: each process's data segment, and the size of /dev/shm), or `null`. */
  readonly memoryBytes: number | null;
  /** The task cap (for `rlimit`: RLIMIT_NPROC of the plugin's uid), or `null`. */
  readonly maxProcesses: number | null;
  /** The tree's CPU weight (cgroup v2 scale; the host's is 100), or `null` when none is set. */
  readonly cpuWeight: number | null;
  /** The tree's hard CPU cap in cores, or `null` when none is set. */
  readonly cpuCores: number | null;
  /** Why control groups are not used, when they are not. */
  readonly fallbackCause?: string;
  /** Why no CPU weight or cap is set although one is configured (no cpu controller): a quota then refuses the spawn. */
  readonly cpuCause?: string;
}

const JOIN_PROGRAM = '/bin/sh';
// Runs in the host's child before it execs the launcher chain, so the whole
// plugin tree is born inside the group: membership is inherited at fork and
// moving a process later would leave already-forked children behind. The
// same shell sets the data-segment cap with its ulimit builtin, which spares
// an exec of prlimit; `-` sets none. -d counts KiB in every POSIX shell that
// has it; the soft limit goes first (a hard limit below the current soft one
// is refused), and both are set explicitly, since shells differ in what a
// bare `ulimit -d` sets. Core dumps go off first, soft and hard (a plugin's
// core file holds its credentials and lands wherever core_pattern says).
const JOIN_SCRIPT =
  '{ ulimit -S -c 0 && ulimit -H -c 0; } || { echo "mcp-plugin-host: cannot turn core dumps off" >&2; exit 125; }; ' +
  'if [ "$1" != - ]; then { ulimit -S -d "$1" && ulimit -H -d "$1"; } || { echo "mcp-plugin-host: cannot set the data segment limit" >&2; exit 125; }; fi; shift; ' +
  'while [ "$1" != -- ]; do echo 0 > "$1" || { echo "mcp-plugin-host: cannot join control group $1" >&2; exit 125; }; shift; done; shift; exec "$@"';

/**
 * Prefixes `command args` with a shell that sets its own RLIMIT_CORE to 0
 * (soft and hard, so nothing it starts writes or re-enables core files), caps its own data segment at
 * `dataBytes` (rounded down to whole KiB, inherited by everything it execs
 * and forks), joins the group by writing `0` (itself, a single thread) into
 * each of `joinFiles` (`PluginGroup.joinFiles`; none joined when empty) and then execs the
 * command. A limit or a group it cannot set fails the launch (exit 125).
 */
export function joinGroupLaunch(joinFiles: readonly string[], command: string, args: readonly string[], dataBytes?: number): { command: string; args: string[] } {
  const dataKib = dataBytes === undefined ? '-' : String(Math.floor(dataBytes / 1024));
  return { command: JOIN_PROGRAM, args: ['-c', JOIN_SCRIPT, 'mcp-plugin-host-join', dataKib, ...joinFiles, '--', command, ...args] };
}

const WATCH_INTERVAL_MS: number = treeLimitData.watchIntervalMs;
const REMOVE_ATTEMPTS: number = treeLimitData.removeAttempts;
const REMOVE_RETRY_MS: number = treeLimitData.removeRetryMs;

/**
 * Removes a group once the kernel has let go of the dead tree's tasks, which
 * can take a moment after the launcher died. A group that stays busy is left
 * for stale collection by a later host.
 */
export function removeGroup(group: PluginGroup, logger: Logger, attempt = 1): void {
  if (group.remove()) return;
  if (attempt >= REMOVE_ATTEMPTS) {
    logger.warn({ group: group.name }, 'plugin control group still busy after its tree exited; left for stale collection');
    return;
  }
  setTimeout(() => removeGroup(group, logger, attempt + 1), REMOVE_RETRY_MS);
}

/**
 * What both kinds of capped process share: the plugin's streams and stop
 * sequence are the inner process's; only how an exit is read (which cap it
 * names) differs. `readExit` runs once the inner process has exited, so a
 * subclass's own fields are set by then.
 */
abstract class CappedProcess implements PluginProcess {
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly exited: Promise<ExitInfo>;
  #info: ExitInfo | undefined;

  protected constructor(protected readonly inner: PluginProcess) {
    this.pid = inner.pid;
    this.stdin = inner.stdin;
    this.stdout = inner.stdout;
    this.exited = inner.exited.then((exit) => (this.#info = this.readExit(exit)));
  }

  /** The exit as reported, naming the cap the tree reached if any. */
  protected abstract readExit(exit: ExitInfo): ExitInfo;

  get exitInfo(): ExitInfo | undefined {
    return this.#info;
  }

  stderrTail(): string {
    return this.inner.stderrTail();
  }

  stderrWrapped(): boolean {
    return this.inner.stderrWrapped?.() ?? true;
  }

  onStderrLine(listener: (line: string) => void): () => void {
    return this.inner.onStderrLine(listener);
  }

  abstract limitHit(): ResourceLimitHit | undefined;

  stop(options?: StopOptions): Promise<ExitInfo> {
    return this.inner.stop(options).then(() => this.exited);
  }
}

/**
 * A plugin process inside its own control group. The group's limit events
 * are watched while it runs: the first hit (an OOM kill in the tree, a fork
 * refused at the task cap) stops the whole tree, because a plugin that lost
 * a process or cannot fork is not one to keep serving calls. Its exit then
 * names the limit, which the shapes turn into PLUGIN_RESOURCE_LIMIT. The
 * group is removed once the tree is gone.
 */
export class TreeLimitedProcess extends CappedProcess {
  #hit: ResourceLimitHit | undefined;
  readonly #watch: NodeJS.Timeout;

  constructor(
    inner: PluginProcess,
    private readonly group: PluginGroup,
    private readonly logger: Logger = silentLogger,
  ) {
    super(inner);
    this.#watch = setInterval(() => this.#check(), WATCH_INTERVAL_MS);
    this.#watch.unref();
  }

  protected readExit(exit: ExitInfo): ExitInfo {
    clearInterval(this.#watch);
    const hit = this.#hit ?? this.group.limitHit();
    removeGroup(this.group, this.logger);
    return hit === undefined ? exit : withLimitHit(exit, hit);
  }

  limitHit(): ResourceLimitHit | undefined {
    this.#check();
    return this.#hit ?? this.exitInfo?.limit;
  }

  #check(): void {
    if (this.#hit !== undefined || this.exitInfo !== undefined || this.inner.exitInfo !== undefined) return;
    const hit = this.group.limitHit();
    if (hit === undefined) return;
    this.#hit = hit;
    this.logger.warn({ pid: this.pid, group: this.group.name, limit: hit.limit, value: hit.value }, 'plugin reached a tree limit; stopping its whole tree');
    // The launcher first (bubblewrap's namespace dies with it), then anything else still in the group: all of it is this plugin's.
    sendSignal(this.pid, 'SIGKILL');
    for (const pid of this.group.members()) sendSignal(pid, 'SIGKILL');
  }
}

/** What a runtime writes to stderr when the kernel refused it memory or a fork (`etc/sandbox/rlimit-exhaustion.json`). */
const EXHAUSTION_SIGNS: ReadonlyArray<readonly [ResourceLimitHit['limit'], RegExp]> = [
  ...exhaustionData.memory.map((source) => ['memory', new RegExp(source, 'i')] as const),
  ...exhaustionData.processes.map((source) => ['processes', new RegExp(source, 'i')] as const),
];

/** The per-process caps a spawn's rlimits set: `null` where none is. */
export interface RlimitCaps {
  /** RLIMIT_DATA of each process, in bytes. */
  readonly memoryBytes: number | null;
  /** RLIMIT_NPROC of the plugin's user. */
  readonly maxProcesses: number | null;
}

/** The cap a stderr line says was reached, when it is one of `caps`. */
function exhaustionIn(line: string, caps: RlimitCaps): ResourceLimitHit | undefined {
  for (const [limit, sign] of EXHAUSTION_SIGNS) {
    const value = limit === 'memory' ? caps.memoryBytes : caps.maxProcesses;
    if (value !== null && sign.test(line)) return { limit, value, mechanism: 'rlimit' };
  }
  return undefined;
}

/**
 * A plugin process whose caps are per-process rlimits, the fallback where
 * no control group holds its tree. The kernel counts nothing under an
 * rlimit (a refused allocation or fork is only an error code in the
 * process that asked), so the plugin's own report is the evidence: the
 * first stderr line in which a runtime says the kernel refused memory or a
 * fork names the cap, and an abnormal exit after it names the cap too,
 * which the shapes turn into PLUGIN_RESOURCE_LIMIT as for a control group.
 * The process is not stopped for the line alone: a refused allocation can
 * be survived, unlike a control group's OOM kill.
 */
export class RlimitedProcess extends CappedProcess {
  #hit: ResourceLimitHit | undefined;
  readonly #unsubscribe: () => void;

  constructor(
    inner: PluginProcess,
    private readonly caps: RlimitCaps,
  ) {
    super(inner);
    this.#unsubscribe = inner.onStderrLine((line) => {
      this.#hit ??= exhaustionIn(line, caps);
    });
  }

  protected readExit(exit: ExitInfo): ExitInfo {
    this.#unsubscribe();
    // The tail as well: a line cut by the ring's bound or written in the last moment before the exit.
    this.#hit ??= this.inner
      .stderrTail()
      .split('\n')
      .map((line) => exhaustionIn(line, this.caps))
      .find((hit) => hit !== undefined);
    return this.#hit === undefined || exit.status === 0 ? exit : withLimitHit(exit, this.#hit);
  }

  limitHit(): ResourceLimitHit | undefined {
    return this.exitInfo?.limit ?? this.#hit;
  }
}
