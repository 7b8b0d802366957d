// Tree limits through PluginHost: each real Linux backend, real control groups (v1
// here), a real MCP plugin that spends memory, shared memory and processes
// across its tree. A limit hit fails that plugin with PLUGIN_RESOURCE_LIMIT;
// the host and its other plugin keep working.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { HostError } from '../../src/errors/HostError.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { HostPool, packaged } from '../support/hostHarness.js';
import { eventually } from '../support/eventually.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

const MiB = 2 ** 20;
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const pool = new HostPool();
let hogPackage: string;
let host: PluginHost;

beforeAll(async () => {
  hogPackage = await packageFixturePlugin(join(root, 'fixtures/plugins/host-hog'), { bundle: ['bin/hog.mjs'] });
}, 120_000);

/** A host with the hog and the probe installed, under `backend`. */
async function hogHost(backend: (typeof LINUX_BACKENDS)[number]): Promise<PluginHost> {
  const dir = await pool.profile();
  const options = {
    // A plugin's own limits beat the host's: the hog gets small caps, its neighbour the host's defaults.
    sandbox: { backend, pluginLimits: { 'host-hog': { memoryBytes: 192 * MiB, maxProcesses: 32 } } },
    backoffScheduleMs: [1, 1, 1, 1, 1, 1, 1, 1],
    callTimeoutMs: 60_000,
  };
  const installer = await pool.open(dir, options);
  for (const pkg of [hogPackage, await packaged('probe')]) (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
  await installer.close();
  return pool.open(dir, options);
}

afterAll(async () => {
  await pool.cleanup();
  await rm(hogPackage, { recursive: true, force: true });
});

/** Calls a hog tool once its backoff (1 ms) has passed. */
async function hogCall(tool: string, args: Record<string, unknown>): Promise<HostError> {
  await new Promise((resolve) => setTimeout(resolve, 10));
  const result = await host.call(`plug.host-hog.${tool}`, args);
  if (result.isOk()) throw new Error(`${tool} answered: ${JSON.stringify(result.value)}`);
  return result.error;
}

describe.each(LINUX_BACKENDS)('under %s', (backend) => {
  beforeAll(async () => {
    host = await hogHost(backend);
  }, 120_000);
  // Its plugins run as the same users as the next backend's: a hog left running would count against their caps.
  afterAll(async () => {
    await host.close();
  });

  describe('PluginHost with tree limits', () => {
    it('reports each plugin’s limits and mechanism in enforced_capabilities', async () => {
      const hog = (await host.info('host-hog'))._unsafeUnwrap().enforced_capabilities;
      const neighbour = (await host.info('host-probe'))._unsafeUnwrap().enforced_capabilities;
      expect(hog?.limits).toEqual({ mechanism: 'cgroup-v1', memoryBytes: 192 * MiB, maxProcesses: 32, cpuWeight: 25, cpuCores: null });
      expect(neighbour?.limits).toEqual({ mechanism: 'cgroup-v1', memoryBytes: 2 * 1024 * MiB, maxProcesses: 512, cpuWeight: 25, cpuCores: null });
    });

    it('fails a plugin whose two children each hold more than half its memory cap with PLUGIN_RESOURCE_LIMIT', async () => {
      const error = await hogCall('hog_children', { count: 2, mib: 112 });
      expect(error.code).toBe('PLUGIN_RESOURCE_LIMIT');
      expect(error.details).toMatchObject({ limit: 'memory', limit_value: 192 * MiB, mechanism: 'cgroup-v1' });
      expect(typeof error.details.stderr_tail).toBe('string');
      expect((await host.call('plug.host-probe.echo', { message: 'still here' })).isOk()).toBe(true);
    }, 60_000);

    it('fails a plugin that writes past its memory cap into /dev/shm', async () => {
      const error = await hogCall('fill_shm', { mib: 256 });
      expect(error.code).toBe('PLUGIN_RESOURCE_LIMIT');
      expect(error.details.limit).toBe('memory');
    }, 60_000);

    it('stops a process swarm at the task cap; the neighbour answers and the host still forks', async () => {
      const error = await hogCall('swarm', { count: 500 });
      expect(error.code).toBe('PLUGIN_RESOURCE_LIMIT');
      expect(error.details).toMatchObject({ limit: 'processes', limit_value: 32 });
      expect(spawnSync('/bin/true').status).toBe(0);
      expect((await host.call('plug.host-probe.echo', { message: 'still here' })).isOk()).toBe(true);
      // After its backoff the same plugin starts again, in a fresh group.
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect((await host.call('plug.host-hog.echo', {})).isOk()).toBe(true);
    }, 60_000);
  });

  describe('PluginHost without control groups (controlGroups: "off"), root host', () => {
    /** Tasks (threads included, as RLIMIT_NPROC counts them) of processes whose real uid is `uid`. */
    function tasksOfUid(uid: number): number {
      let tasks = 0;
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const status = readFileSync(`/proc/${entry}/status`, 'utf8');
          if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid) tasks += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 0);
        } catch {
          // Exited while we looked.
        }
      }
      return tasks;
    }

    it('fails a plugin that dies of an allocation RLIMIT_DATA refused with PLUGIN_RESOURCE_LIMIT (mechanism rlimit); the neighbour answers', async () => {
      const fallbackPool = new HostPool();
      try {
        const dir = await fallbackPool.profile();
        const options = { sandbox: { backend, controlGroups: 'off' as const, pluginLimits: { 'host-hog': { memoryBytes: 192 * MiB } } }, callTimeoutMs: 30_000 };
        const installer = await fallbackPool.open(dir, options);
        for (const pkg of [hogPackage, await packaged('probe')]) (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
        await installer.close();
        const fallbackHost = await fallbackPool.open(dir, options);
        const error = (await fallbackHost.call('plug.host-hog.allocate_until_refused', {}))._unsafeUnwrapErr();
        expect(error.code).toBe('PLUGIN_RESOURCE_LIMIT');
        expect(error.details).toMatchObject({ limit: 'memory', limit_value: 192 * MiB, mechanism: 'rlimit' });
        expect(String(error.details.stderr_tail)).toContain('Array buffer allocation failed');
        expect((await fallbackHost.call('plug.host-probe.echo', { message: 'still here' })).isOk()).toBe(true);
      } finally {
        await fallbackPool.cleanup();
      }
    }, 60_000);

    it.runIf(process.getuid?.() === 0)('caps the plugin user’s tasks with RLIMIT_NPROC and says so in enforced_capabilities', async () => {
      const fallbackPool = new HostPool();
      let uid: number | undefined;
      try {
        const dir = await fallbackPool.profile();
        const options = { sandbox: { backend, controlGroups: 'off' as const, maxProcesses: 32 }, callTimeoutMs: 3_000 };
        const installer = await fallbackPool.open(dir, options);
        (await installer.install(hogPackage, { canary: false }))._unsafeUnwrap();
        await installer.close();
        const fallbackHost = await fallbackPool.open(dir, options);
        const caps = (await fallbackHost.info('host-hog'))._unsafeUnwrap().enforced_capabilities;
        expect(caps?.limits).toMatchObject({ mechanism: 'rlimit', memoryBytes: 2 * 1024 * MiB, maxProcesses: 32 });
        uid = caps?.runsAs?.uid;
        expect(uid).toBeGreaterThan(0);
        // The swarm never answers; by the time its call times out the kernel has refused every fork past the cap.
        const swarm = await fallbackHost.call('plug.host-hog.swarm', { count: 200 });
        expect(swarm._unsafeUnwrapErr().code).toBe('PLUGIN_TIMEOUT');
        const tasks = tasksOfUid(uid!);
        expect(tasks).toBeGreaterThan(16);
        expect(tasks).toBeLessThanOrEqual(32);
      } finally {
        await fallbackPool.cleanup();
        // The next backend's plugin gets the same user: its cap must not count this swarm while the kernel reaps it.
        const swarmUid = uid;
        if (swarmUid !== undefined) await eventually(() => tasksOfUid(swarmUid) === 0);
      }
    }, 60_000);
  });
});
