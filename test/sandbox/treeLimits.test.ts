// Tree limits on the real kernel: this machine has the hybrid cgroup v1 layout
// (memory and pids hierarchies), real bubblewrap, the real Landlock launcher and real child processes.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { currentCgroupSystem, discoverGroupTree } from '../../src/sandbox/controlGroups.js';
import { probeTreeLimits } from '../../src/sandbox/probe.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { joinGroupLaunch } from '../../src/sandbox/treeLimits.js';
import { eventually } from '../support/eventually.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';
import { scriptSandbox } from './scriptSandbox.js';

const MiB = 2 ** 20;
const { base, installRoot, writeDir, home, spawner, start } = scriptSandbox('tree-limits-', 'tree-test');

async function allOutput(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

/** The control group directories the launcher (and so the plugin tree) lives in, per v1 hierarchy. */
function groupDirsOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .map((line) => /^\d+:(memory|pids):(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[2]!.includes('mcp-plugin-host-'))
    .map((m) => join('/sys/fs/cgroup', m[1]!, m[2]!));
}

// Each child allocates and touches `mib` MiB, says so, and keeps it.
const childrenHolding = (count: number, mib: number): string => `
const { spawn } = require('node:child_process');
const hold = "const b = Buffer.alloc(${mib} * 1024 * 1024, 1); console.log('held'); setInterval(() => b[0]++, 1000);";
for (let i = 0; i < ${count}; i++) spawn(process.execPath, ['-e', hold], { stdio: ['ignore', 'inherit', 'inherit'] });
setInterval(() => undefined, 1000);`;

// Starts `count` sleepers, reporting how many the kernel allowed, and keeps running.
const sleepers = (count: number): string => `
const { spawn } = require('node:child_process');
let ok = 0, refused = 0;
for (let i = 0; i < ${count}; i++) {
  const c = spawn('/bin/sleep', ['600'], { stdio: 'ignore' });
  c.on('spawn', () => { ok++; if (ok + refused === ${count}) console.log('spawned ' + ok); });
  c.on('error', () => { refused++; if (ok + refused === ${count}) console.log('spawned ' + ok); });
}
setInterval(() => undefined, 1000);`;

const fillShm = (mib: number): string => `
const fs = require('node:fs');
const fd = fs.openSync('/dev/shm/fill', 'w'), chunk = Buffer.alloc(1024 * 1024, 7);
let written = 0;
try { for (let i = 0; i < ${mib}; i++) written += fs.writeSync(fd, chunk); console.log('wrote ' + written); }
catch (e) { console.log(e.code + ' after ' + written); }
setInterval(() => undefined, 1000);`;

describe.each(LINUX_BACKENDS)('tree limits with control groups (cgroup v1 here, %s)', (backend) => {
  it('probes control groups once and reports them in describe()', async () => {
    const s = await spawner({ backend, memoryLimitBytes: 256 * MiB, maxProcesses: 40 });
    const limits = s.describe({ installRoot, network: false, writeDir, hiddenPaths: [], pluginId: 'tree-test' }).limits;
    expect(limits).toEqual({ mechanism: 'cgroup-v1', memoryBytes: 256 * MiB, maxProcesses: 40, cpuWeight: 25, cpuCores: null });
    expect(s.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).limits.mechanism).toBe('cgroup-v1');
  });

  it('stops a tree whose two children each hold more than half the memory cap, naming the limit', async () => {
    const s = await spawner({ backend, memoryLimitBytes: 192 * MiB });
    const p = await start(s, childrenHolding(2, 112));
    const exit = await p.exited;
    expect(exit.limit).toEqual({ limit: 'memory', value: 192 * MiB, mechanism: 'cgroup-v1' });
    expect(exit.description).toContain('memory limit');
  });

  it('charges /dev/shm to the tree: writing past the cap stops the plugin', async () => {
    const s = await spawner({ backend, memoryLimitBytes: 128 * MiB });
    const p = await start(s, fillShm(256));
    const [said, exit] = await Promise.all([allOutput(p.stdout), p.exited]);
    expect(said).not.toContain('wrote 268435456');
    expect(exit.limit?.limit).toBe('memory');
  });

  it('stops a process swarm at the task cap while a neighbour keeps running and the host can still fork', async () => {
    const s = await spawner({ backend, maxProcesses: 32 });
    const neighbour = await start(s, 'process.stdin.on("data", (d) => process.stdout.write(d));', { pluginId: 'neighbour' });
    const swarm = await start(s, sleepers(200));
    const exit = await swarm.exited;
    expect(exit.limit).toEqual({ limit: 'processes', value: 32, mechanism: 'cgroup-v1' });
    expect(spawnSync('/bin/true').status).toBe(0);
    neighbour.stdin.write('still here\n');
    const echoed = await new Promise<string>((resolve) => neighbour.stdout.once('data', (c: Buffer) => resolve(c.toString())));
    expect(echoed).toBe('still here\n');
    expect(neighbour.exitInfo).toBeUndefined();
  });

  it('caps each process\'s data segment from the shell that joins the group (the Landlock launcher itself), without running prlimit', async () => {
    const spy = join(base, 'prlimit-spy');
    const calls = join(base, 'prlimit-calls');
    writeFileSync(spy, `#!/bin/sh\necho "$@" >> ${calls}\nexec /usr/bin/prlimit "$@"\n`, { mode: 0o755 });
    const cap = 256 * MiB + 100;
    const s = await spawner({ backend, memoryLimitBytes: cap, prlimitPath: spy });
    expect(s.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).memoryLimitBytes).toBe(cap);
    const p = await start(s, 'console.log(require("node:fs").readFileSync("/proc/self/limits", "utf8"))');
    const limits = await allOutput(p.stdout);
    expect(existsSync(calls)).toBe(false);
    // Whole KiB, rounded down: the shell's ulimit counts in KiB; the launcher's setrlimit takes bytes.
    const data = String(backend === 'bubblewrap' ? 256 * MiB : cap);
    expect(/^Max data size\s+(\d+)\s+(\d+)\s+bytes/m.exec(limits)?.slice(1)).toEqual([data, data]);
  });

  it("lets a plugin's own limits override the host's", async () => {
    const s = await spawner({ backend, maxProcesses: 24, pluginLimits: { roomy: { maxProcesses: 128 } } });
    expect(s.describe({ installRoot, network: false, writeDir, hiddenPaths: [], pluginId: 'roomy' }).limits.maxProcesses).toBe(128);
    const roomy = await start(s, sleepers(40), { pluginId: 'roomy' });
    const line = await new Promise<string>((resolve) => roomy.stdout.once('data', (c: Buffer) => resolve(c.toString())));
    expect(line.trim()).toBe('spawned 40');
    const tight = await start(s, sleepers(40), { pluginId: 'tight' });
    expect((await tight.exited).limit?.limit).toBe('processes');
  });

  it('joins each group by the file that moves the joining thread alone (v1 tasks), and every thread of the tree is inside', async () => {
    const s = await spawner({ backend });
    const p = await start(s, 'console.log("up"); setInterval(() => undefined, 1000)');
    await new Promise((resolve) => p.stdout.once('data', resolve));
    const tree = discoverGroupTree(currentCgroupSystem())._unsafeUnwrap();
    const probeGroup = tree.create({ memoryBytes: 64 * MiB, maxProcesses: 8 })._unsafeUnwrap();
    try {
      expect(probeGroup.joinFiles.map((file) => file.split('/').pop())).toEqual(['tasks', 'tasks']);
    } finally {
      probeGroup.remove();
    }
    for (const dir of groupDirsOf(p.pid)) {
      const members = readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim().split('\n');
      const threads = new Set(readFileSync(join(dir, 'tasks'), 'utf8').trim().split('\n'));
      // The launcher, the sandbox's process 1, the plugin (a Node, with its threads); under bubblewrap its chain.
      expect(members.length).toBeGreaterThanOrEqual(backend === 'landlock' ? 3 : 2);
      const missing = members.flatMap((pid) => {
        try {
          return readdirSync(`/proc/${pid}/task`).filter((tid) => !threads.has(tid));
        } catch {
          return [];
        }
      });
      expect(missing).toEqual([]);
      expect(threads.size).toBeGreaterThan(members.length);
    }
  });

  it('removes the group after the tree exits, and collects stale groups of dead hosts only', async () => {
    const s = await spawner({ backend });
    const p = await start(s, 'console.log("up"); setInterval(() => undefined, 1000)');
    await new Promise((resolve) => p.stdout.once('data', resolve));
    const dirs = groupDirsOf(p.pid);
    expect(dirs).toHaveLength(2);
    for (const dir of dirs) expect(readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim()).not.toBe('');
    expect(readFileSync(join(dirs.find((d) => d.includes('/pids/'))!, 'pids.max'), 'utf8').trim()).toBe('512');
    await p.stop({ stdinGraceMs: 0, termGraceMs: 0 });
    expect(await eventually(() => dirs.every((d) => !existsSync(d)))).toBe(true);

    const tree = discoverGroupTree(currentCgroupSystem())._unsafeUnwrap();
    const deadPid = spawnSync('/bin/true').pid!;
    const stale = tree.parents.map((parent) => join(parent, `mcp-plugin-host-${deadPid}-7`));
    const alive = tree.parents.map((parent) => join(parent, `mcp-plugin-host-${process.pid}-999999`));
    const foreign = tree.parents.map((parent) => join(parent, `someone-else-${deadPid}-7`));
    for (const dir of [...stale, ...alive, ...foreign]) mkdirSync(dir);
    try {
      const system = currentCgroupSystem();
      // A fresh key: the probe (which collects) runs once per host view.
      const support = await probeTreeLimits({ ...system, procSelfCgroup: `${system.procSelfCgroup}${'\n'.repeat(1 + LINUX_BACKENDS.indexOf(backend))}` });
      expect(support.tree?.mechanism).toBe('cgroup-v1');
      expect(stale.filter((d) => existsSync(d))).toEqual([]);
      expect(alive.every((d) => existsSync(d))).toBe(true);
      expect(foreign.every((d) => existsSync(d))).toBe(true);
    } finally {
      for (const dir of [...stale, ...alive, ...foreign]) if (existsSync(dir)) rmdirSync(dir);
    }
  });
});

describe('the shell that joins the group (bubblewrap)', () => {
  it('writes 0, itself, into each join file: a pid there would make the kernel move a whole thread group', () => {
    const files = [join(base, 'join-memory'), join(base, 'join-pids')];
    for (const file of files) writeFileSync(file, '');
    const launch = joinGroupLaunch(files, '/bin/true', []);
    expect(spawnSync(launch.command, launch.args).status).toBe(0);
    expect(files.map((file) => readFileSync(file, 'utf8'))).toEqual(['0\n', '0\n']);
  });
});

describe('limit options', () => {
  it('refuses caps that are not positive integers (or false), host-wide and per plugin', async () => {
    for (const options of [{ maxProcesses: 0 }, { memoryLimitBytes: 1.5 }, { pluginLimits: { p: { memoryBytes: -1 } } }, { pluginLimits: { p: { maxProcesses: Number.NaN } } }]) {
      const refused = await SandboxSpawner.create({ homeDir: home, ...options });
      expect(refused._unsafeUnwrapErr().code, JSON.stringify(options)).toBe('HOST_INVALID_OPTIONS');
    }
    expect((await SandboxSpawner.create({ homeDir: home, maxProcesses: false, pluginLimits: { p: { memoryBytes: false } } })).isOk()).toBe(true);
  });
});

describe.each(LINUX_BACKENDS)('fallback without control groups (controlGroups: "off", %s)', (backend) => {
  it('reports rlimit with the cause, and fails closed when tree limits are required', async () => {
    const s = await spawner({ backend, controlGroups: 'off', memoryLimitBytes: 64 * MiB });
    const limits = s.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).limits;
    expect(limits.mechanism).toBe('rlimit');
    expect(limits.memoryBytes).toBe(64 * MiB);
    expect(limits.fallbackCause).toContain('controlGroups');
    const refused = await SandboxSpawner.create({ homeDir: home, backend, controlGroups: 'off', requireTreeLimits: true });
    expect(refused._unsafeUnwrapErr().code).toBe('PLUGIN_SANDBOX_UNSUPPORTED');
    expect(refused._unsafeUnwrapErr().details.cause).toBe('tree_limits_unavailable');
    expect((await SandboxSpawner.create({ homeDir: home, backend, requireTreeLimits: true })).isOk()).toBe(true);
  });

  // RLIMIT_DATA refuses the allocation; the uncaught RangeError ends the plugin (exit 1), as a plugin that does not expect it ends.
  const allocateUntilRefused = `const keep = []; for (;;) keep.push(Buffer.alloc(16 * 1024 * 1024, 1));`;

  it('names the memory cap when a plugin dies of an allocation RLIMIT_DATA refused, and only then', async () => {
    const s = await spawner({ backend, controlGroups: 'off', memoryLimitBytes: 192 * MiB });
    const refused = await start(s, allocateUntilRefused);
    const exit = await refused.exited;
    expect(exit.status).not.toBe(0);
    expect(exit.limit).toEqual({ limit: 'memory', value: 192 * MiB, mechanism: 'rlimit' });
    expect(exit.description).toContain('memory limit (201326592 bytes, rlimit)');
    expect(refused.limitHit?.()).toEqual(exit.limit);

    const python = await start(s, '', {
      executable: unverifiedCommand(['/usr/bin/python3', '-c', 'a = []\nwhile True: a.append(bytearray(16 * 1024 * 1024))'], installRoot, []),
    });
    expect((await python.exited).limit).toMatchObject({ limit: 'memory', mechanism: 'rlimit' });

    const crashed = await start(s, `process.stderr.write('failed for another reason\\n'); process.exit(3);`);
    const other = await crashed.exited;
    expect(other.status).toBe(3);
    expect(other.limit).toBeUndefined();
  });

  it('sizes /dev/shm to the memory cap: writes past it fail with ENOSPC', async () => {
    const s = await spawner({ backend, controlGroups: 'off', memoryLimitBytes: 64 * MiB });
    const p = await start(s, fillShm(128));
    const line = await new Promise<string>((resolve) => p.stdout.once('data', (c: Buffer) => resolve(c.toString())));
    expect(line.trim()).toMatch(/^ENOSPC after \d+$/);
    expect(Number(line.trim().split(' ').pop())).toBeLessThanOrEqual(64 * MiB);
  });
});
