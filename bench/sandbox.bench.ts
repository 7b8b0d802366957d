/**
 * Sandbox overhead: spawn-to-exit of /bin/true through SandboxSpawner with
 * its default backend (network off, seccomp filter, masks) and through
 * bubblewrap, against the same spawn with no sandbox, interleaved so machine
 * load moves all alike.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnPluginProcess, unverifiedCommand } from '../src/process/spawnPluginProcess.js';
import { SandboxSpawner } from '../src/sandbox/SandboxSpawner.js';
import { median, result, timeMs, type BenchResult } from './harness.js';

const RUNS = 50;

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-bench-'));
  try {
    // 'auto', the default: the Landlock launcher where it is proved; bubblewrap otherwise.
    const spawner = (await SandboxSpawner.create({ backend: 'auto' }))._unsafeUnwrap();
    const bubblewrap = (await SandboxSpawner.create({ backend: 'bubblewrap' }))._unsafeUnwrap();
    const executable = () => unverifiedCommand(['/bin/true'], dir);
    // The policy PluginHost gives a plugin without network (see its #sandboxPolicy): the profile directory
    // hidden, the plugin's data directory readable, one writable directory inside it; the spawner adds its
    // secret-path masks to every policy.
    const profile = join(dir, 'profile');
    const dataDir = join(profile, 'data', 'bench-plugin');
    const writeDir = join(dataDir, 'work');
    mkdirSync(writeDir, { recursive: true });
    const policy = { network: false, writeDir, hiddenPaths: [profile], readOnlyPaths: [dataDir], pluginId: 'bench-plugin' };
    const sandboxed = async () => {
      const p = (await spawner.spawn({ executable: executable(), env: {}, ...policy }))._unsafeUnwrap();
      await p.exited;
    };
    const underBubblewrap = async () => {
      const p = (await bubblewrap.spawn({ executable: executable(), env: {}, ...policy }))._unsafeUnwrap();
      await p.exited;
    };
    const bare = async () => {
      const p = (await spawnPluginProcess({ executable: executable(), env: {}, setprivPath: false }))._unsafeUnwrap();
      await p.exited;
    };
    await sandboxed();
    await underBubblewrap();
    await bare();
    const values: number[] = [];
    const bubblewrapValues: number[] = [];
    const baselines: number[] = [];
    const sides = [() => timeMs(sandboxed).then((v) => values.push(v)), () => timeMs(underBubblewrap).then((v) => bubblewrapValues.push(v)), () => timeMs(bare).then((v) => baselines.push(v))];
    for (let i = 0; i < RUNS; i++) {
      // Rotate which side goes first, so none always runs right after another.
      for (let k = 0; k < sides.length; k++) await sides[(i + k) % sides.length]!();
    }
    const ratio = median(values) / median(baselines);
    // The control-group step (create the group, join it: the Landlock launcher writes its own pid, under bubblewrap a /bin/sh does and execs bwrap; remove the group) against the same sandbox without it.
    const withoutGroups = (await SandboxSpawner.create({ backend: 'auto', controlGroups: 'off' }))._unsafeUnwrap();
    const ungrouped = async () => {
      const p = (await withoutGroups.spawn({ executable: executable(), env: {}, ...policy }))._unsafeUnwrap();
      await p.exited;
    };
    await ungrouped();
    const grouped: number[] = [];
    const ungroupedTimes: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      grouped.push(await timeMs(sandboxed));
      ungroupedTimes.push(await timeMs(ungrouped));
    }
    return [
      result(
        {
          name: `sandboxed spawn of /bin/true (backend auto: ${spawner.backendName}, network off)`,
          baselineName: 'bare spawn',
          unit: 'ms',
          compare: 'difference',
          target: 4,
          better: 'lower',
          note: `median of ${RUNS} rotating runs each, spawn until exit, with the policy a plugin gets (profile hidden, data directory readable, one writable directory, its tree in a control group); ratio sandboxed/bare ${ratio.toFixed(2)}×; target issue 18's ≤ +4 ms. The Landlock launcher joins the group, unshares, mounts only the plugin's own trees and applies one Landlock ruleset, see docs/performance.md "One spawn"`,
        },
        values,
        baselines,
      ),
      result(
        {
          name: 'sandboxed spawn of /bin/true (bubblewrap, network off)',
          baselineName: 'bare spawn',
          unit: 'ms',
          compare: 'difference',
          target: 4,
          better: 'lower',
          role: 'design',
          note: `the fallback backend, measured in the same rotation: sh joins the group → bwrap (its own start and root pivot, ~39 mounts) → the program; ratio ${(median(bubblewrapValues) / median(baselines)).toFixed(2)}×; kept as a design note (the Landlock launcher is what issue 18's target is measured on)`,
        },
        bubblewrapValues,
        baselines,
      ),
      result(
        {
          name: 'sandboxed spawn of /bin/true with its tree in a control group',
          baselineName: 'sandboxed spawn without control groups',
          unit: 'ms',
          compare: 'difference',
          target: 15,
          better: 'lower',
          note: `median of ${RUNS} interleaved runs each; ratio ${(median(grouped) / median(ungroupedTimes)).toFixed(2)}×; target ≤ +15 ms: the group's mkdir/limit writes, the join (by the launcher itself, or under bubblewrap a /bin/sh that also sets the data cap), and above all the kernel's cgroup migration (the write to cgroup.procs waits for an RCU grace period), measured +7–11 ms by hand on this machine`,
        },
        grouped,
        ungroupedTimes,
      ),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
