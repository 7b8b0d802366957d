// CPU weight and quota of a plugin's whole tree on the real kernel: this
// machine's cgroup v1 cpu hierarchy, real bubblewrap, the real Landlock
// launcher, real busy-looping children. (The v2 files are written against a
// fake cgroupfs in controlGroups.test.ts.)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveHostConfig } from '../../src/host/hostConfig.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { currentCgroupSystem, nodeCgroupFs, type CgroupFs } from '../../src/sandbox/controlGroups.js';
import { probeTreeLimits } from '../../src/sandbox/probe.js';
import { SandboxSpawner, type SandboxSpawnerOptions } from '../../src/sandbox/SandboxSpawner.js';
import { eventually } from '../support/eventually.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';
import { scriptSandbox } from './scriptSandbox.js';

const { installRoot, writeDir, home, spawner, request, start } = scriptSandbox('cpu-limits-', 'cpu-test');

/** Starts `script` and waits for its first line, so that its whole tree is running. */
async function startUp(using: SandboxSpawner, script: string, pluginId?: string): Promise<PluginProcess> {
  const started = await start(using, script, pluginId === undefined ? {} : { pluginId });
  await new Promise((resolve) => started.stdout.once('data', resolve));
  return started;
}

/** The cgroup v1 cpu group directory process `pid` is in. */
function cpuGroupOf(pid: number): string {
  const path = /^\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, 'utf8'))![1]!;
  return join('/sys/fs/cgroup/cpu', path);
}

const read = (dir: string, file: string): string => readFileSync(join(dir, file), 'utf8').trim();

// Threads that spin in a loop for ever, after saying they started.
const spinning = (threads: number): string => `
const { Worker } = require('node:worker_threads');
for (let i = 1; i < ${threads}; i++) new Worker('for (;;);', { eval: true });
console.log('spinning');
setImmediate(() => { for (;;); });`;

describe.each(LINUX_BACKENDS)('CPU of a plugin tree (cgroup v1 cpu hierarchy here, %s)', (backend) => {
  it('weighs every plugin tree by default, every thread of it inside its cpu group, a plugin’s own weight over the host’s', async () => {
    const s = await spawner({ backend, pluginLimits: { heavy: { cpuWeight: 50 } } });
    expect(s.describe({ installRoot, network: false, writeDir, hiddenPaths: [], pluginId: 'cpu-test' }).limits).toMatchObject({ mechanism: 'cgroup-v1', cpuWeight: 25, cpuCores: null });
    const p = await startUp(s, 'console.log("up"); setInterval(() => undefined, 1000)');
    const group = cpuGroupOf(p.pid);
    expect(group).toMatch(/\/mcp-plugin-host-\d+-\d+$/);
    // 25 of the host's 100 on the v2 scale: a quarter of a nice-0 thread's 1024 shares.
    expect(read(group, 'cpu.shares')).toBe('256');
    expect(read(group, 'cpu.cfs_quota_us')).toBe('-1');
    const threads = new Set(read(group, 'tasks').split('\n'));
    const members = read(group, 'cgroup.procs').split('\n');
    const outside = members.flatMap((pid) => {
      try {
        return readdirSync(`/proc/${pid}/task`).filter((tid) => !threads.has(tid));
      } catch {
        return [];
      }
    });
    expect(outside).toEqual([]);
    expect(threads.size).toBeGreaterThan(members.length);

    const heavy = await startUp(s, 'console.log("up"); setInterval(() => undefined, 1000)', 'heavy');
    expect(read(cpuGroupOf(heavy.pid), 'cpu.shares')).toBe('512');

    await p.stop({ stdinGraceMs: 0, termGraceMs: 0 });
    expect(await eventually(() => !existsSync(group))).toBe(true);
  });

  it('leaves the tree in the host’s cpu group with cpuWeight false', async () => {
    const hostGroup = cpuGroupOf(process.pid);
    const s = await spawner({ backend, cpuWeight: false });
    expect(s.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).limits).toMatchObject({ cpuWeight: null, cpuCores: null });
    const p = await startUp(s, 'console.log("up"); setInterval(() => undefined, 1000)');
    expect(cpuGroupOf(p.pid)).toBe(hostGroup);
  });

  it('caps a busy tree at its quota: the group holds it and the kernel throttles the spinning threads, and the group goes with the tree', async () => {
    const s = await spawner({ backend, cpuQuota: { cores: 0.2 } });
    expect(s.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).limits).toMatchObject({ cpuWeight: 25, cpuCores: 0.2 });
    const p = await startUp(s, spinning(2));
    const group = cpuGroupOf(p.pid);
    expect(read(group, 'cpu.cfs_period_us')).toBe('100000');
    expect(read(group, 'cpu.cfs_quota_us')).toBe('20000');
    const throttled = (): number => Number(/^nr_throttled (\d+)$/m.exec(read(group, 'cpu.stat'))?.[1] ?? 0);
    expect(await eventually(() => throttled() > 0)).toBe(true);
    await p.stop({ stdinGraceMs: 0, termGraceMs: 0 });
    expect(await eventually(() => !existsSync(group))).toBe(true);
  });
});

describe('a cpu hierarchy the host cannot write (the real memory and pids hierarchies, mkdir in cpu refused)', () => {
  it('is found by the probe, which keeps the tree without CPU weight and says why', async () => {
    const system = currentCgroupSystem();
    const cpuMount = '/sys/fs/cgroup/cpu/';
    const readOnlyCpu: CgroupFs = {
      ...nodeCgroupFs,
      mkdir(path) {
        if (path.startsWith(cpuMount)) throw Object.assign(new Error('read-only'), { code: 'EROFS' });
        nodeCgroupFs.mkdir(path);
      },
    };
    // Extra newlines make a fresh key: the probe runs once per host view.
    const support = await probeTreeLimits({ ...system, procSelfCgroup: `${system.procSelfCgroup}\n\n\n\n\n`, fs: readOnlyCpu });
    const tree = support.tree!;
    expect(tree.mechanism).toBe('cgroup-v1');
    expect(tree.cpuUnavailable).toMatch(/^cannot create control group \/sys\/fs\/cgroup\/cpu\/mcp-plugin-host-\d+-\d+: EROFS$/);
    const unweighed = tree.create({ memoryBytes: 64 * 2 ** 20, maxProcesses: 8, cpuWeight: 25 })._unsafeUnwrap();
    expect(unweighed.joinFiles.some((file) => file.startsWith(cpuMount))).toBe(false);
    expect(unweighed.remove()).toBe(true);
    expect(tree.create({ memoryBytes: null, maxProcesses: null, cpuWeight: 25, cpuCores: 1 })._unsafeUnwrapErr()).toContain('CPU quota cannot be enforced: cannot create control group');
  });
});

describe('a CPU quota without control groups (controlGroups: "off")', () => {
  it('refuses the spawn rather than run the plugin uncapped, and describe says why', async () => {
    const s = await spawner({ controlGroups: 'off', cpuQuota: { cores: 1 } });
    const limits = s.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).limits;
    expect(limits).toMatchObject({ mechanism: 'rlimit', cpuWeight: null, cpuCores: null });
    expect(limits.cpuCause).toContain('controlGroups');
    const refused = await s.spawn(request('console.log("ran")'));
    expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SPAWN_FAILED', details: { cpu_cores: 1 } });
    expect(refused._unsafeUnwrapErr().message).toContain('CPU quota');
  });
});

describe('CPU options', () => {
  it('refuses a weight or quota out of range, host-wide and per plugin, naming the option', async () => {
    const cases: [SandboxSpawnerOptions, string][] = [
      [{ cpuWeight: 0 }, 'cpuWeight'],
      [{ cpuWeight: 2.5 }, 'cpuWeight'],
      [{ cpuWeight: 10_001 }, 'cpuWeight'],
      [{ cpuQuota: { cores: 0 } }, 'cpuQuota.cores'],
      [{ cpuQuota: { cores: 0.001 } }, 'cpuQuota.cores'],
      [{ cpuQuota: { cores: Number.NaN } }, 'cpuQuota.cores'],
      [{ cpuQuota: { cpus: 1 } as unknown as { cores: number } }, 'cpuQuota'],
      [{ pluginLimits: { p: { cpuQuota: { cores: -1 } } } }, 'pluginLimits.p.cpuQuota.cores'],
      [{ pluginLimits: { p: { cpuWeight: 20_000 } } }, 'pluginLimits.p.cpuWeight'],
    ];
    for (const [options, option] of cases) {
      const refused = (await SandboxSpawner.create({ homeDir: home, ...options }))._unsafeUnwrapErr();
      expect(refused.code, JSON.stringify(options)).toBe('HOST_INVALID_OPTIONS');
      expect(refused.details.option).toBe(option);
      expect(refused.hint).toMatch(/cpu|CPU/);
    }
    expect((await SandboxSpawner.create({ homeDir: home, cpuWeight: false, cpuQuota: { cores: 0.5 }, pluginLimits: { p: { cpuWeight: 10_000, cpuQuota: { cores: 2 } } } })).isOk()).toBe(true);
  });

  it('are host options under sandbox, host-wide and per plugin', () => {
    const config = resolveHostConfig({ sandbox: { cpuWeight: 50, cpuQuota: { cores: 0.5 }, pluginLimits: { p: { cpuWeight: false, cpuQuota: { cores: 1 } } } } });
    expect(config._unsafeUnwrap().sandbox).toMatchObject({ cpuWeight: 50, cpuQuota: { cores: 0.5 } });
  });
});
