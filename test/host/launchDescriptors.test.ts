/**
 * What a plugin started through PluginHost holds: under bubblewrap the host
 * verifies a Node 20/21 main module for the mount, writes no integrity
 * policy, and no file of the host's (policy, verified copy, interpreter)
 * stays open in the plugin's process tree. Real host, real probe plugin.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { descendantsOf, inheritableDescriptors } from '../../src/process/processTree.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());

/** The descriptors above stdio of each process in a tree that refer to files, leaving out what the test's own parent leaks to every child. */
function filesHeld(rootPid: number): string[] {
  const leakedByParent = new Set(inheritableDescriptors().map(String));
  const held: string[] = [];
  for (const pid of [rootPid, ...descendantsOf(rootPid)]) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      if (Number(fd) <= 2 || leakedByParent.has(fd)) continue;
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        // Node keeps /dev/null open for itself.
        if (target.startsWith('/') && target !== '/dev/null') held.push(`${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}:${fd} -> ${target}`);
      } catch {
        // Closed meanwhile.
      }
    }
  }
  return held;
}

describe('descriptors a plugin started by the host holds', () => {
  it('no policy file, verified copy or interpreter descriptor anywhere in the sandboxed tree', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const spawns: number[] = [];
    host.events.on('spawn', (e) => spawns.push(e.pid));
    expect((await host.call('plug.host-probe.env', {})).isOk()).toBe(true);
    expect(spawns).toHaveLength(1);
    expect(filesHeld(spawns[0]!)).toEqual([]);
  });
});
