// The cgroup v2 logic against a plain directory standing in for cgroupfs:
// this machine's unified hierarchy has no controllers, so v2 cannot be
// exercised on the real kernel here (the v1 path is, in treeLimits.test.ts).
// The kernel's side (a write to cgroup.procs moving a process, EBUSY) is
// played by the directory and by a wrapper around its writes.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { discoverGroupTree, nodeCgroupFs, type CgroupFs, type CgroupSystem } from '../../src/sandbox/controlGroups.js';
import { probeTreeLimits } from '../../src/sandbox/probe.js';

const HOST_PID = 4242;
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A fake unified hierarchy mounted at a temp directory, the host in /user.slice/host.scope. */
function unifiedHierarchy(procs: string = `${HOST_PID}\n`, controllers = 'cpu io memory pids'): { mount: string; base: string; system: (fs?: CgroupFs) => CgroupSystem } {
  const mount = mkdtempSync(join(tmpdir(), 'fake-cgroup2-'));
  dirs.push(mount);
  const base = join(mount, 'user.slice', 'host.scope');
  mkdirSync(base, { recursive: true });
  writeFileSync(join(base, 'cgroup.controllers'), `${controllers}\n`);
  writeFileSync(join(base, 'cgroup.subtree_control'), '\n');
  writeFileSync(join(base, 'cgroup.procs'), procs);
  return {
    mount,
    base,
    system: (fs = nodeCgroupFs) => ({
      procSelfCgroup: '0::/user.slice/host.scope\n',
      mountinfo: `25 1 0:22 / /proc rw - proc proc rw\n41 31 0:38 / ${mount} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n`,
      hostPid: HOST_PID,
      fs,
    }),
  };
}

/** Files a kernel creates in a new v2 group once its parent enables the controllers. */
function withKernelFiles(fs: CgroupFs): CgroupFs {
  return {
    ...fs,
    mkdir(path) {
      fs.mkdir(path);
      for (const file of ['memory.max', 'memory.swap.max', 'memory.oom.group', 'pids.max', 'cpu.weight', 'cpu.max', 'cgroup.procs']) writeFileSync(join(path, file), '');
    },
  };
}

/** Refuses to enable controllers (EBUSY) while the group itself still lists processes, as cgroup v2 does. */
function noInternalProcesses(fs: CgroupFs, base: string): CgroupFs {
  let hostMoved = false;
  return {
    ...fs,
    write(path, text) {
      if (path === join(base, 'cgroup.subtree_control') && !hostMoved) throw Object.assign(new Error('busy'), { code: 'EBUSY' });
      if (path.endsWith('-host/cgroup.procs') && text === String(HOST_PID)) hostMoved = true;
      fs.write(path, text);
    },
  };
}

describe('cgroup v2 (fake cgroupfs)', () => {
  it('enables memory, pids and cpu for child groups and writes each limit of a new plugin group', () => {
    const h = unifiedHierarchy('');
    const tree = discoverGroupTree(h.system(withKernelFiles(nodeCgroupFs)))._unsafeUnwrap();
    expect(tree.mechanism).toBe('cgroup-v2');
    expect(tree.parents).toEqual([h.base]);
    expect(tree.cpuUnavailable).toBeUndefined();
    expect(readFileSync(join(h.base, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids +cpu');
    const group = tree.create({ memoryBytes: 128 * 2 ** 20, maxProcesses: 32 })._unsafeUnwrap();
    const dir = join(h.base, group.name);
    expect(group.name).toMatch(new RegExp(`^mcp-plugin-host-${HOST_PID}-\\d+$`));
    expect(group.joinFiles).toEqual([join(dir, 'cgroup.procs')]);
    // The Landlock launcher forks its tree into the directory: nothing moves, so no grace period is waited for.
    expect(group.forkInto).toBe(dir);
    expect(readFileSync(join(dir, 'memory.max'), 'utf8')).toBe(String(128 * 2 ** 20));
    expect(readFileSync(join(dir, 'memory.swap.max'), 'utf8')).toBe('0');
    expect(readFileSync(join(dir, 'memory.oom.group'), 'utf8')).toBe('1');
    expect(readFileSync(join(dir, 'pids.max'), 'utf8')).toBe('32');
    // No CPU limits asked for: the kernel's defaults (weight 100, no cap) stay.
    expect(readFileSync(join(dir, 'cpu.weight'), 'utf8')).toBe('');
    expect(readFileSync(join(dir, 'cpu.max'), 'utf8')).toBe('');

    const weighed = tree.create({ memoryBytes: null, maxProcesses: null, cpuWeight: 25, cpuCores: 0.5 })._unsafeUnwrap();
    expect(readFileSync(join(h.base, weighed.name, 'cpu.weight'), 'utf8')).toBe('25');
    expect(readFileSync(join(h.base, weighed.name, 'cpu.max'), 'utf8')).toBe('50000 100000');
  });

  it('makes groups without CPU weight where cpu is not delegated, says why, and refuses a CPU quota', () => {
    const h = unifiedHierarchy('', 'io memory pids');
    const tree = discoverGroupTree(h.system(withKernelFiles(nodeCgroupFs)))._unsafeUnwrap();
    expect(readFileSync(join(h.base, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids');
    expect(tree.cpuUnavailable).toBe(`the cpu controller is not delegated to ${h.base}`);
    const group = tree.create({ memoryBytes: 2 ** 20, maxProcesses: 8, cpuWeight: 25 })._unsafeUnwrap();
    expect(readFileSync(join(h.base, group.name, 'cpu.weight'), 'utf8')).toBe('');
    expect(tree.create({ memoryBytes: 2 ** 20, maxProcesses: 8, cpuWeight: 25, cpuCores: 1 })._unsafeUnwrapErr()).toContain('CPU quota cannot be enforced: the cpu controller is not delegated');
  });

  it('enables memory and pids alone when the kernel refuses cpu (EINVAL), and says why', () => {
    const h = unifiedHierarchy('');
    const refusingCpu: CgroupFs = {
      ...nodeCgroupFs,
      write(path, text) {
        if (path === join(h.base, 'cgroup.subtree_control') && text.includes('cpu')) throw Object.assign(new Error('invalid'), { code: 'EINVAL' });
        nodeCgroupFs.write(path, text);
      },
    };
    const tree = discoverGroupTree(h.system(refusingCpu))._unsafeUnwrap();
    expect(tree.mechanism).toBe('cgroup-v2');
    expect(readFileSync(join(h.base, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids');
    expect(tree.cpuUnavailable).toBe(`cannot enable the cpu controller in ${h.base}: EINVAL`);
  });

  it('reads limit hits from memory.events (oom_kill) and pids.events (max)', () => {
    const h = unifiedHierarchy('');
    const tree = discoverGroupTree(h.system())._unsafeUnwrap();
    const group = tree.create({ memoryBytes: 64 * 2 ** 20, maxProcesses: 16 })._unsafeUnwrap();
    const dir = join(h.base, group.name);
    writeFileSync(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 12\noom 0\noom_kill 0\n');
    writeFileSync(join(dir, 'pids.events'), 'max 0\n');
    expect(group.limitHit()).toBeUndefined();
    writeFileSync(join(dir, 'pids.events'), 'max 3\n');
    expect(group.limitHit()).toEqual({ limit: 'processes', value: 16, mechanism: 'cgroup-v2' });
    writeFileSync(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 40\noom 1\noom_kill 1\n');
    expect(group.limitHit()).toEqual({ limit: 'memory', value: 64 * 2 ** 20, mechanism: 'cgroup-v2' });
    for (const file of ['memory.events', 'pids.events', 'memory.max', 'pids.max']) rmSync(join(dir, file));
    expect(group.remove()).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('moves the host into a leaf of its own when it is the only process in its group (no internal processes)', () => {
    const h = unifiedHierarchy();
    const tree = discoverGroupTree(h.system(noInternalProcesses(nodeCgroupFs, h.base)));
    expect(tree._unsafeUnwrap().mechanism).toBe('cgroup-v2');
    expect(readFileSync(join(h.base, `mcp-plugin-host-${HOST_PID}-host`, 'cgroup.procs'), 'utf8')).toBe(String(HOST_PID));
    expect(readFileSync(join(h.base, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids +cpu');
  });

  it('never moves processes that are not the host: the group is unusable and v1 is tried next', () => {
    const h = unifiedHierarchy(`${HOST_PID}\n999\n`);
    const reason = discoverGroupTree(h.system(noInternalProcesses(nodeCgroupFs, h.base)))._unsafeUnwrapErr();
    expect(reason).toContain('other processes share');
    expect(reason).toContain('cgroup v1');
    expect(existsSync(join(h.base, `mcp-plugin-host-${HOST_PID}-host`))).toBe(false);
  });

  it('is not used when memory or pids is not delegated', () => {
    const h = unifiedHierarchy('', 'cpu io');
    expect(discoverGroupTree(h.system())._unsafeUnwrapErr()).toContain('memory and pids controllers are not delegated');
  });

  it('collects stale groups of dead hosts only, never foreign or non-empty ones', () => {
    const h = unifiedHierarchy('');
    const tree = discoverGroupTree(h.system())._unsafeUnwrap();
    for (const name of ['mcp-plugin-host-111-1', 'mcp-plugin-host-111-host', 'mcp-plugin-host-222-1', 'mcp-plugin-host-111-x', 'other-111-1']) mkdirSync(join(h.base, name));
    writeFileSync(join(h.base, 'mcp-plugin-host-111-1', 'cgroup.procs'), '');
    const collected = tree.collectStale((pid) => pid === 222);
    expect(collected).toEqual([join(h.base, 'mcp-plugin-host-111-host')]);
    for (const kept of ['mcp-plugin-host-111-1', 'mcp-plugin-host-222-1', 'mcp-plugin-host-111-x', 'other-111-1']) expect(existsSync(join(h.base, kept))).toBe(true);
  });
  it('takes the next free name when one is taken: by a second copy of the library in the process, or by a group an earlier process with the pid left', async () => {
    const h = unifiedHierarchy('');
    // An ESM and a CJS build loaded side by side are two copies of the module, each with its own name sequence.
    const secondCopy = (await import(/* @vite-ignore */ `../../src/sandbox/controlGroups.ts?second-copy=${Date.now()}`)) as typeof import('../../src/sandbox/controlGroups.js');
    const first = discoverGroupTree(h.system(withKernelFiles(nodeCgroupFs)))._unsafeUnwrap();
    const second = secondCopy.discoverGroupTree(h.system(withKernelFiles(nodeCgroupFs)))._unsafeUnwrap();
    const limits = { memoryBytes: 2 ** 20, maxProcesses: 8 };
    const names = [first.create(limits)._unsafeUnwrap().name, second.create(limits)._unsafeUnwrap().name, second.create(limits)._unsafeUnwrap().name];
    const number = (name: string): number => Number(name.slice(`mcp-plugin-host-${HOST_PID}-`.length));
    // A stale group at the next few numbers, as a dead process with the same pid leaves one behind.
    const next = Math.max(...names.map(number)) + 1;
    const stale = [next, next + 1, next + 2].map((n) => join(h.base, `mcp-plugin-host-${HOST_PID}-${n}`));
    for (const dir of stale) mkdirSync(dir);
    names.push(first.create(limits)._unsafeUnwrap().name, first.create(limits)._unsafeUnwrap().name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(readFileSync(join(h.base, name, 'pids.max'), 'utf8')).toBe('8');
    for (const dir of stale) expect(existsSync(join(dir, 'pids.max'))).toBe(false);
  });
});

describe('the tree limit probe', () => {
  it('refuses groups whose limits are written but not enforced (a plain directory posing as cgroup v1)', async () => {
    const mount = mkdtempSync(join(tmpdir(), 'fake-cgroup1-'));
    dirs.push(mount);
    for (const controller of ['memory', 'pids']) mkdirSync(join(mount, controller, 'host'), { recursive: true });
    const support = await probeTreeLimits({
      procSelfCgroup: '8:pids:/host\n4:memory:/host\n0::/\n',
      mountinfo: [
        `35 31 0:32 / ${join(mount, 'memory')} rw - cgroup cgroup rw,memory`,
        `39 31 0:36 / ${join(mount, 'pids')} rw - cgroup cgroup rw,pids`,
      ].join('\n'),
      hostPid: HOST_PID,
      fs: nodeCgroupFs,
    });
    expect(support.tree).toBeUndefined();
    expect(support.tree === undefined && support.cause).toContain('was not enforced');
  });

  it('reports why when no hierarchy is usable', async () => {
    const support = await probeTreeLimits({ procSelfCgroup: '0::/\n', mountinfo: '', hostPid: HOST_PID, fs: nodeCgroupFs });
    expect(support.tree === undefined && support.cause).toBe('cgroup v2: no unified hierarchy is mounted; cgroup v1: the memory and pids controllers are not both mounted');
  });
});
