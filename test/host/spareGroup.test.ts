/**
 * The host's spawner makes the control group of the next start while the
 * current plugin starts, so a cold start only forks into a group that is
 * already there; host.close() removes that spare group. Real PluginHost, real
 * probe plugin in the default sandbox, real control groups.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { currentCgroupSystem, discoverGroupTree } from '../../src/sandbox/controlGroups.js';
import { eventually } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());

const tree = discoverGroupTree(currentCgroupSystem());
const OWN_GROUP = new RegExp(`^mcp-plugin-host-${process.pid}-\\d+$`);

/** The plugin groups this test process has, by name (a group spans one directory per hierarchy). */
function ownGroups(): string[] {
  const parents = tree._unsafeUnwrap().parents;
  return [...new Set(parents.flatMap((parent) => readdirSync(parent).filter((name) => OWN_GROUP.test(name))))].sort();
}

/** The processes in group `name` (of the first hierarchy). */
function membersOf(name: string): string[] {
  return readFileSync(join(tree._unsafeUnwrap().parents[0]!, name, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
}

describe('the control group made ahead for the next start', () => {
  it('is the group the next cold start runs in, and host.close() removes it', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    expect(ownGroups()).toEqual([]);
    expect((await host.call('plug.host-probe.echo', { message: 'first' })).isOk()).toBe(true);
    const [first, spare, ...more] = ownGroups();
    expect(more).toEqual([]);
    expect(membersOf(first!)).not.toEqual([]);
    expect(membersOf(spare!)).toEqual([]);

    (await host.unquarantine('host-probe'))._unsafeUnwrap();
    expect(await eventually(() => !ownGroups().includes(first!))).toBe(true);
    expect((await host.call('plug.host-probe.echo', { message: 'second' })).isOk()).toBe(true);
    // Before, no group was made ahead: the second start made its own, and the spare above did not exist.
    expect(membersOf(spare!)).not.toEqual([]);
    expect(ownGroups()).toHaveLength(2);

    await host.close();
    expect(await eventually(() => ownGroups().length === 0)).toBe(true);
  });
});
