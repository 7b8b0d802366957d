import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import treeLimitData from '../../etc/sandbox/tree-limits.json' with { type: 'json' };
import type { ResourceLimitHit, TreeLimitMechanism } from '../process/PluginProcess.js';

/** The caps of one plugin's whole process tree; `null` leaves that resource uncapped. */
export interface TreeLimits {
  /** Bytes of memory of every process of the plugin together, tmpfs pages (such as /dev/shm) included. */
  readonly memoryBytes: number | null;
  /** Tasks (processes and threads) of the plugin together. */
  readonly maxProcesses: number | null;
  /**
   * The tree's CPU weight on the cgroup v2 scale (1-10000, where a default
   * group is 100; v1 `cpu.shares` get the same ratio to a nice-0 thread's
   * 1024). Absent: the tree's threads compete one by one, as the host's do.
   */
  readonly cpuWeight?: number;
  /** A hard cap: the CPU time of this many cores per period, for the whole tree. Absent: no cap. */
  readonly cpuCores?: number;
}

/** Whether `a` and `b` set the same caps (a group made for one serves the other). */
export function sameTreeLimits(a: TreeLimits, b: TreeLimits): boolean {
  return a.memoryBytes === b.memoryBytes && a.maxProcesses === b.maxProcesses && a.cpuWeight === b.cpuWeight && a.cpuCores === b.cpuCores;
}

/** Whether `limits` needs the cpu controller. */
export const usesCpu = (limits: TreeLimits): boolean => limits.cpuWeight !== undefined || limits.cpuCores !== undefined;

/**
 * The file operations control groups need, so that the cgroup v2 logic can be
 * exercised against a plain directory standing in for cgroupfs.
 */
export interface CgroupFs {
  read(path: string): string;
  write(path: string, text: string): void;
  exists(path: string): boolean;
  mkdir(path: string): void;
  rmdir(path: string): void;
  list(dir: string): string[];
}

/** The real cgroupfs. */
export const nodeCgroupFs: CgroupFs = {
  read: (path) => readFileSync(path, 'utf8'),
  write: (path, text) => writeFileSync(path, text),
  exists: (path) => existsSync(path),
  mkdir: (path) => mkdirSync(path),
  rmdir: (path) => rmdirSync(path),
  list: (dir) => readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name),
};

/** The control group of one running plugin process and everything it forks. */
export interface PluginGroup {
  /** The group's name (the same in every hierarchy it spans). */
  readonly name: string;
  /**
   * The files a single-threaded process writes `0` (itself) into to join the
   * group, one per hierarchy: `tasks` under cgroup v1, `cgroup.procs` under
   * v2. Moving a whole thread group (any write to `cgroup.procs`, or a pid to
   * `tasks`) first waits for an RCU grace period, about 10 ms here; moving the
   * writing thread itself does not, and in a single-threaded joiner (the
   * launcher, the joining shell) that thread is the whole process. v2 has no
   * such file for a group that is not threaded.
   */
  readonly joinFiles: readonly string[];
  /**
   * A v2 group's directory: a launcher that forks its tree straight into the
   * group (clone3 with CLONE_INTO_CGROUP, the Landlock launcher) moves no
   * process, so it waits for no grace period at all.
   */
  readonly forkInto?: string;
  /** Which cap the tree reached, read from the kernel's event counters, if any. */
  limitHit(): ResourceLimitHit | undefined;
  /** Pids in the group, as the host sees them. */
  members(): number[];
  /** Removes the group; `false` while the kernel still holds tasks in it. */
  remove(): boolean;
}

/** Where this host creates plugin groups, for one cgroup version. */
export interface GroupTree {
  readonly mechanism: Exclude<TreeLimitMechanism, 'rlimit'>;
  /** The directories plugin groups are created in. */
  readonly parents: readonly string[];
  /**
   * Why the cpu controller cannot weigh or cap plugin groups here, when it
   * cannot: a group is then made without its CPU weight, and one with a CPU
   * quota is refused.
   */
  readonly cpuUnavailable?: string;
  /** The same tree making its groups without the cpu controller, which `cause` says cannot be used (found by the probe). */
  withoutCpu(cause: string): GroupTree;
  /** Creates a group carrying `limits`; the error says why not. */
  create(limits: TreeLimits): Result<PluginGroup, string>;
  /** Removes empty groups left by hosts that are no longer running; returns their paths. */
  collectStale(isAlive: (pid: number) => boolean): string[];
}

const GROUP_PREFIX: string = treeLimitData.groupPrefix;
const CPU_PERIOD_US: number = treeLimitData.cpuPeriodUs;
const V1_DEFAULT_SHARES: number = treeLimitData.v1DefaultShares;
const V2_DEFAULT_WEIGHT: number = treeLimitData.v2DefaultWeight;

/** The v1 `cpu.shares` with the same ratio to a nice-0 thread as `weight` has to a default v2 group (the kernel's minimum is 2). */
const v1Shares = (weight: number): number => Math.max(2, Math.round((weight * V1_DEFAULT_SHARES) / V2_DEFAULT_WEIGHT));

/** Microseconds of CPU time per period for `cores` cores. */
const quotaUs = (cores: number): number => Math.round(cores * CPU_PERIOD_US);

/** The refusal of a group whose CPU quota nothing here can enforce, or `undefined`. */
function unenforceableQuota(limits: TreeLimits, cpuUnavailable: string | undefined): string | undefined {
  return limits.cpuCores === undefined || cpuUnavailable === undefined ? undefined : `its CPU quota cannot be enforced: ${cpuUnavailable}`;
}
const NAME_ATTEMPTS: number = treeLimitData.nameAttempts;
const OWN_GROUP = new RegExp(`^${GROUP_PREFIX.replace(/[^a-z0-9]/gi, '\\$&')}-(\\d+)-(\\d+|host)$`);

const errorCode = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? String(e);

function counter(text: string, key: string): number {
  const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return match === null ? 0 : Number(match[1]);
}

function readOr(fs: CgroupFs, path: string, fallback: string): string {
  try {
    return fs.read(path);
  } catch {
    return fallback;
  }
}

function pidsIn(fs: CgroupFs, dir: string): number[] {
  return readOr(fs, join(dir, 'cgroup.procs'), '')
    .split('\n')
    .filter((line) => /^\d+$/.test(line))
    .map(Number);
}

/** Removes `dirs`, counting ones already gone as removed. */
function removeAll(fs: CgroupFs, dirs: readonly string[]): boolean {
  let removed = true;
  for (const dir of dirs) {
    try {
      fs.rmdir(dir);
    } catch (e) {
      if (errorCode(e) !== 'ENOENT') removed = false;
    }
  }
  return removed;
}

/**
 * Creates a group directory in each parent under the next free name, undoing
 * the ones made when a later one fails. A name can be taken: by another copy
 * of this module in the host process (an ESM and a CJS build side by side count
 * their own sequence), or by a group an earlier process with the same pid left.
 */
function makeGroupDirs(fs: CgroupFs, parents: readonly string[], hostPid: number): Result<{ name: string; dirs: string[] }, string> {
  for (let attempt = 0; attempt < NAME_ATTEMPTS; attempt++) {
    const name = nextName(hostPid);
    const made: string[] = [];
    let taken = false;
    for (const parent of parents) {
      const dir = join(parent, name);
      try {
        fs.mkdir(dir);
        made.push(dir);
      } catch (e) {
        removeAll(fs, made);
        if (errorCode(e) !== 'EEXIST') return err(`cannot create control group ${dir}: ${errorCode(e)}`);
        taken = true;
        break;
      }
    }
    if (!taken) return ok({ name, dirs: made });
  }
  return err(`cannot create a control group in ${parents.join(' and ')}: ${NAME_ATTEMPTS} names in a row were taken`);
}

function collectIn(fs: CgroupFs, parents: readonly string[], isAlive: (pid: number) => boolean): string[] {
  const collected: string[] = [];
  for (const parent of parents) {
    let names: string[];
    try {
      names = fs.list(parent);
    } catch {
      continue;
    }
    for (const name of names) {
      const owner = OWN_GROUP.exec(name)?.[1];
      if (owner === undefined || isAlive(Number(owner))) continue;
      // A group still holding tasks is left alone: the host never kills what it did not start in this run.
      if (removeAll(fs, [join(parent, name)])) collected.push(join(parent, name));
    }
  }
  return collected;
}

let sequence = 0;
const nextName = (hostPid: number): string => `${GROUP_PREFIX}-${hostPid}-${++sequence}`;

/**
 * Plugin groups in the cgroup v1 hierarchies of the `memory` and `pids`
 * controllers, and of `cpu` (`cpu`: the host's group there, or why that
 * hierarchy cannot be used), created under the host's own current group in
 * each (so they nest within whatever limit the host itself already has). A
 * group spans the cpu hierarchy only when its limits weigh or cap CPU.
 */
export function cgroupV1Tree(
  memoryParent: string,
  pidsParent: string,
  hostPid: number = process.pid,
  fs: CgroupFs = nodeCgroupFs,
  cpu: string | { readonly unavailable: string } = { unavailable: 'the cgroup v1 cpu controller is not mounted' },
): GroupTree {
  const cpuParent = typeof cpu === 'string' ? cpu : undefined;
  const cpuUnavailable = typeof cpu === 'string' ? undefined : cpu.unavailable;
  const parents = cpuParent === undefined ? [memoryParent, pidsParent] : [memoryParent, pidsParent, cpuParent];
  return {
    mechanism: 'cgroup-v1',
    parents,
    ...(cpuUnavailable === undefined ? {} : { cpuUnavailable }),
    withoutCpu: (cause) => cgroupV1Tree(memoryParent, pidsParent, hostPid, fs, { unavailable: cause }),
    create(limits) {
      const refused = unenforceableQuota(limits, cpuUnavailable);
      if (refused !== undefined) return err(refused);
      const weighed = cpuParent !== undefined && usesCpu(limits);
      const made = makeGroupDirs(fs, weighed ? parents : [memoryParent, pidsParent], hostPid);
      if (made.isErr()) return err(made.error);
      const { name } = made.value;
      const [memory, pids, cpu] = made.value.dirs as [string, string, string | undefined];
      try {
        if (limits.memoryBytes !== null) {
          fs.write(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
          // With swap accounting, memory plus swap gets the same cap, so the tree cannot spill into swap.
          if (fs.exists(join(memory, 'memory.memsw.limit_in_bytes'))) fs.write(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        }
        if (limits.maxProcesses !== null) fs.write(join(pids, 'pids.max'), String(limits.maxProcesses));
        if (cpu !== undefined && limits.cpuWeight !== undefined) fs.write(join(cpu, 'cpu.shares'), String(v1Shares(limits.cpuWeight)));
        if (cpu !== undefined && limits.cpuCores !== undefined) {
          fs.write(join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
          fs.write(join(cpu, 'cpu.cfs_quota_us'), String(quotaUs(limits.cpuCores)));
        }
      } catch (e) {
        removeAll(fs, made.value.dirs);
        return err(`cannot set the limits of control group ${name}: ${errorCode(e)}`);
      }
      return ok({
        name,
        joinFiles: made.value.dirs.map((dir) => join(dir, 'tasks')),
        limitHit() {
          if (limits.memoryBytes !== null && counter(readOr(fs, join(memory, 'memory.oom_control'), ''), 'oom_kill') > 0) {
            return { limit: 'memory', value: limits.memoryBytes, mechanism: 'cgroup-v1' };
          }
          if (limits.maxProcesses !== null && counter(readOr(fs, join(pids, 'pids.events'), ''), 'max') > 0) {
            return { limit: 'processes', value: limits.maxProcesses, mechanism: 'cgroup-v1' };
          }
          return undefined;
        },
        members: () => [...new Set(made.value.dirs.flatMap((dir) => pidsIn(fs, dir)))],
        remove: () => removeAll(fs, made.value.dirs),
      });
    },
    collectStale: (isAlive) => collectIn(fs, parents, isAlive),
  };
}

const V2_CONTROLLERS = ['memory', 'pids'] as const;

/**
 * Makes `base` able to hold limited child groups: its `memory` and `pids`
 * controllers are enabled for its children, and `cpu` too where it is
 * delegated (without it groups carry no CPU weight; the result says why).
 * cgroup v2 refuses that while `base` itself holds processes; when the only
 * one is the host, the host moves into a leaf group of its own first, where
 * it keeps the default weight its plugins' groups are weighed against.
 */
function enableV2Controllers(fs: CgroupFs, base: string, hostPid: number): Result<{ cpuUnavailable?: string }, string> {
  const available = readOr(fs, join(base, 'cgroup.controllers'), '').split(/\s+/);
  const missing = V2_CONTROLLERS.filter((c) => !available.includes(c));
  if (missing.length > 0) return err(`the ${missing.join(' and ')} controller${missing.length > 1 ? 's are' : ' is'} not delegated to ${base}`);
  let cpuUnavailable = available.includes('cpu') ? undefined : `the cpu controller is not delegated to ${base}`;
  const wanted = (): string[] => (cpuUnavailable === undefined ? [...V2_CONTROLLERS, 'cpu'] : [...V2_CONTROLLERS]);
  const enabled = readOr(fs, join(base, 'cgroup.subtree_control'), '').split(/\s+/);
  if (wanted().every((c) => enabled.includes(c))) return ok(cpuUnavailable === undefined ? {} : { cpuUnavailable });
  const enable = (): void => fs.write(join(base, 'cgroup.subtree_control'), wanted().map((c) => `+${c}`).join(' '));
  // The cpu controller is a nicety: one the kernel will not enable (real-time tasks in the subtree, say) leaves memory and pids to do their work.
  const enableOrDropCpu = (): void => {
    try {
      enable();
    } catch (e) {
      if (cpuUnavailable !== undefined || errorCode(e) === 'EBUSY') throw e;
      cpuUnavailable = `cannot enable the cpu controller in ${base}: ${errorCode(e)}`;
      enable();
    }
  };
  const enabledNow = (): Result<{ cpuUnavailable?: string }, string> => ok(cpuUnavailable === undefined ? {} : { cpuUnavailable });
  try {
    enableOrDropCpu();
    return enabledNow();
  } catch (e) {
    if (errorCode(e) !== 'EBUSY') return err(`cannot enable the memory and pids controllers in ${base}: ${errorCode(e)}`);
  }
  const occupants = pidsIn(fs, base);
  if (occupants.some((pid) => pid !== hostPid)) {
    return err(`cannot enable the memory and pids controllers in ${base}: other processes share the host's group (cgroup v2 allows controllers only for groups without processes)`);
  }
  const leaf = join(base, `${GROUP_PREFIX}-${hostPid}-host`);
  try {
    if (!fs.exists(leaf)) fs.mkdir(leaf);
    fs.write(join(leaf, 'cgroup.procs'), String(hostPid));
    enableOrDropCpu();
    return enabledNow();
  } catch (e) {
    return err(`cannot move the host into ${leaf} to enable controllers in ${base}: ${errorCode(e)}`);
  }
}

/**
 * Plugin groups in the cgroup v2 unified hierarchy, created in `base` (the
 * host's own group in a delegated subtree). Fails when the `memory` and
 * `pids` controllers cannot be enabled there.
 */
export function cgroupV2Tree(base: string, hostPid: number = process.pid, fs: CgroupFs = nodeCgroupFs): Result<GroupTree, string> {
  return enableV2Controllers(fs, base, hostPid).map(({ cpuUnavailable }) => v2Tree(base, hostPid, fs, cpuUnavailable));
}

/** The groups of {@link cgroupV2Tree} once its controllers are enabled; `cpuUnavailable` says why groups get no CPU files. */
function v2Tree(base: string, hostPid: number, fs: CgroupFs, cpuUnavailable: string | undefined): GroupTree {
  return {
    mechanism: 'cgroup-v2' as const,
    parents: [base],
    ...(cpuUnavailable === undefined ? {} : { cpuUnavailable }),
    withoutCpu: (cause: string) => v2Tree(base, hostPid, fs, cause),
    create(limits: TreeLimits): Result<PluginGroup, string> {
      const refused = unenforceableQuota(limits, cpuUnavailable);
      if (refused !== undefined) return err(refused);
      const made = makeGroupDirs(fs, [base], hostPid);
      if (made.isErr()) return err(made.error);
      const { name } = made.value;
      const dir = made.value.dirs[0]!;
      try {
        if (limits.memoryBytes !== null) {
          fs.write(join(dir, 'memory.max'), String(limits.memoryBytes));
          if (fs.exists(join(dir, 'memory.swap.max'))) fs.write(join(dir, 'memory.swap.max'), '0');
          // One OOM kill takes the whole tree, so a plugin never limps on without the process that was killed.
          if (fs.exists(join(dir, 'memory.oom.group'))) fs.write(join(dir, 'memory.oom.group'), '1');
        }
        if (limits.maxProcesses !== null) fs.write(join(dir, 'pids.max'), String(limits.maxProcesses));
        if (cpuUnavailable === undefined && limits.cpuWeight !== undefined) fs.write(join(dir, 'cpu.weight'), String(limits.cpuWeight));
        if (cpuUnavailable === undefined && limits.cpuCores !== undefined) fs.write(join(dir, 'cpu.max'), `${quotaUs(limits.cpuCores)} ${CPU_PERIOD_US}`);
      } catch (e) {
        removeAll(fs, [dir]);
        return err(`cannot set the limits of control group ${dir}: ${errorCode(e)}`);
      }
      return ok({
        name,
        joinFiles: [join(dir, 'cgroup.procs')],
        forkInto: dir,
        limitHit() {
          if (limits.memoryBytes !== null && counter(readOr(fs, join(dir, 'memory.events'), ''), 'oom_kill') > 0) {
            return { limit: 'memory', value: limits.memoryBytes, mechanism: 'cgroup-v2' };
          }
          if (limits.maxProcesses !== null && counter(readOr(fs, join(dir, 'pids.events'), ''), 'max') > 0) {
            return { limit: 'processes', value: limits.maxProcesses, mechanism: 'cgroup-v2' };
          }
          return undefined;
        },
        members: () => pidsIn(fs, dir),
        remove: () => removeAll(fs, [dir]),
      });
    },
    collectStale: (isAlive: (pid: number) => boolean) => collectIn(fs, [base], isAlive),
  };
}

/** One line of /proc/self/mountinfo, the parts that matter here. */
interface Mount {
  readonly root: string;
  readonly mountPoint: string;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const fields = left.split(' ');
    const [fsType, , superOptions] = right.split(' ');
    if (fields[3] === undefined || fields[4] === undefined || fsType === undefined) continue;
    const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    mounts.push({ root: unescape(fields[3]), mountPoint: unescape(fields[4]), fsType, superOptions: (superOptions ?? '').split(',') });
  }
  return mounts;
}

/** The directory of group `path` in a hierarchy mounted as `mount`, or `undefined` when the mount does not show it. */
function groupDir(mount: Mount, path: string): string | undefined {
  const inside = posix.relative(mount.root, path);
  if (inside.startsWith('..')) return undefined;
  return join(mount.mountPoint, inside);
}

/** What {@link discoverGroupTree} reads: the host's groups and the mount table. */
export interface CgroupSystem {
  /** Text of /proc/self/cgroup. */
  readonly procSelfCgroup: string;
  /** Text of /proc/self/mountinfo. */
  readonly mountinfo: string;
  readonly hostPid: number;
  readonly fs: CgroupFs;
}

/** The running host's view of its control groups. */
export function currentCgroupSystem(): CgroupSystem {
  return {
    procSelfCgroup: readOr(nodeCgroupFs, '/proc/self/cgroup', ''),
    mountinfo: readOr(nodeCgroupFs, '/proc/self/mountinfo', ''),
    hostPid: process.pid,
    fs: nodeCgroupFs,
  };
}

/**
 * Finds where this host can create plugin groups: the cgroup v2 unified
 * hierarchy when its `memory` and `pids` controllers are delegated to the
 * host's group, otherwise the cgroup v1 `memory` and `pids` hierarchies
 * (the hybrid layout). The error lists why neither is usable.
 */
export function discoverGroupTree(system: CgroupSystem): Result<GroupTree, string> {
  const groups = new Map<string, string>();
  let unifiedPath: string | undefined;
  for (const line of system.procSelfCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, controllers, path] = match as unknown as [string, string, string];
    if (controllers === '') unifiedPath = path;
    else for (const c of controllers.split(',')) groups.set(c, path);
  }
  const mounts = parseMountinfo(system.mountinfo);
  const reasons: string[] = [];
  const unified = mounts.find((m) => m.fsType === 'cgroup2');
  if (unified !== undefined && unifiedPath !== undefined) {
    const base = groupDir(unified, unifiedPath);
    if (base === undefined) reasons.push(`cgroup v2: the host's group ${unifiedPath} is outside the mounted hierarchy`);
    else {
      const tree = cgroupV2Tree(base, system.hostPid, system.fs);
      if (tree.isOk()) return tree;
      reasons.push(`cgroup v2: ${tree.error}`);
    }
  } else reasons.push('cgroup v2: no unified hierarchy is mounted');
  const v1Dir = (controller: string): string | undefined => {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
    const path = groups.get(controller);
    return mount === undefined || path === undefined ? undefined : groupDir(mount, path);
  };
  const v1Dirs = ['memory', 'pids'].map(v1Dir);
  if (v1Dirs[0] !== undefined && v1Dirs[1] !== undefined) return ok(cgroupV1Tree(v1Dirs[0], v1Dirs[1], system.hostPid, system.fs, v1Dir('cpu')));
  reasons.push('cgroup v1: the memory and pids controllers are not both mounted');
  return err(reasons.join('; '));
}
