/**
 * CPU weight and quota through PluginHost: the host's `sandbox` options reach
 * the control group of a real probe plugin in the default sandbox (cgroup v1
 * cpu hierarchy here), `info` reports them, and `close` leaves no group
 * behind in the cpu hierarchy.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());

const CPU_HIERARCHY = '/sys/fs/cgroup/cpu';
const OWN_GROUP = new RegExp(`^mcp-plugin-host-${process.pid}-\\d+$`);

/** This test process's plugin groups in the cpu hierarchy (under the host's own cpu group). */
function ownCpuGroups(): string[] {
  const hostGroup = join(CPU_HIERARCHY, /^\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))![1]!);
  return readdirSync(hostGroup)
    .filter((name) => OWN_GROUP.test(name))
    .map((name) => join(hostGroup, name));
}

const read = (dir: string, file: string): string => readFileSync(join(dir, file), 'utf8').trim();

describe('CPU limits of a PluginHost plugin', () => {
  it('puts the plugin tree in a cpu group with the weight and quota of the host options, reports them, and removes the groups on close', async () => {
    const options = { sandbox: { cpuWeight: 40, pluginLimits: { 'host-probe': { cpuQuota: { cores: 0.5 } } } } };
    const host = await pool.installed(await pool.profile(), ['probe'], options);
    expect((await host.info('host-probe'))._unsafeUnwrap().enforced_capabilities?.limits).toMatchObject({ cpuWeight: 40, cpuCores: 0.5 });
    expect((await host.call('plug.host-probe.echo', { message: 'weighed' })).isOk()).toBe(true);
    const running = ownCpuGroups().filter((dir) => read(dir, 'cgroup.procs') !== '');
    expect(running).toHaveLength(1);
    // 40 of the host's 100, scaled to v1's 1024 for a nice-0 thread.
    expect(read(running[0]!, 'cpu.shares')).toBe('410');
    expect(read(running[0]!, 'cpu.cfs_quota_us')).toBe('50000');
    expect(read(running[0]!, 'cpu.cfs_period_us')).toBe('100000');

    await host.close();
    expect(await eventually(() => ownCpuGroups().length === 0)).toBe(true);
    expect(existsSync(running[0]!)).toBe(false);
  });
});
