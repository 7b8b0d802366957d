import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/ports/ports.js';
import { ChildPluginProcess } from '../../src/process/ChildPluginProcess.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { descendantsOf } from '../../src/process/processTree.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { eventually, waitUntil } from '../support/eventually.js';
import { firstJsonLine, killAllWith, LIFECYCLE, processesWith } from '../support/processes.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

// A stop that reaches a sandbox while its launcher still sets it up finds no plugin to send SIGTERM to: bubblewrap's
// process 1 and the Landlock launcher's ignore it there (review R3 F7). The grace after SIGTERM is ten minutes as the
// spawner sees it; `graceClock` lets it elapse after GRACE_STANDS_FOR_MS and counts it: a stop that needed the grace
// fails the test with the count instead of hanging until the test's own timeout.
const TERM_GRACE_MS = 600_000;
const GRACE_STANDS_FOR_MS = 15_000;
const ROUNDS = 20;

const base = mkdtempSync(join(tmpdir(), 'stop-during-setup-'));
const profile = join(base, 'profile');
const installRoot = join(profile, 'plugins', 'lifecycle');
const dataDir = join(profile, 'data', 'lifecycle');
const markers: string[] = [];
const started: PluginProcess[] = [];
let graceTimers = 0;

/** Real timers; the stop's grace after SIGTERM is counted when it elapses: no stop here should need it. */
const graceClock: Clock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const grace = ms === TERM_GRACE_MS;
    const timer = setTimeout(
      () => {
        if (grace) graceTimers++;
        fn();
      },
      grace ? GRACE_STANDS_FOR_MS : ms,
    );
    return () => clearTimeout(timer);
  },
};

beforeAll(() => {
  for (const d of [installRoot, dataDir]) mkdirSync(d, { recursive: true });
  copyFileSync(LIFECYCLE, join(installRoot, 'lifecycle.mjs'));
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  markers.splice(0).forEach(killAllWith);
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

function marker(): string {
  const m = `setup-stop-${process.pid}-${Math.random().toString(36).slice(2)}`;
  markers.push(m);
  return m;
}

/** A process as a failure message shows it: pid, name, state and parent. */
function describeProcess(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return `${pid} ${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))} state ${state} parent ${ppid}`;
  } catch {
    return `${pid} (gone)`;
  }
}

/** Zombies whose parent is this test process: children it never reaped. */
function ownZombies(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z' && Number(ppid) === process.pid) out.push(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return out;
}

describe.each(LINUX_BACKENDS)('a stop during sandbox setup (real %s)', (backend) => {
  let spawner: SandboxSpawner;
  beforeAll(async () => {
    spawner = (await SandboxSpawner.create({ homeDir: join(base, 'home'), backend, clock: graceClock, termGraceMs: TERM_GRACE_MS }))._unsafeUnwrap();
  });

  it(`ends without the grace and leaves no process of the sandbox, stopped right after spawn (${ROUNDS} rounds)`, async () => {
    graceTimers = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const m = marker();
      const spawned = await spawner.spawn({
        executable: unverifiedCommand([process.execPath, join(installRoot, 'lifecycle.mjs'), 'ignore-eof', m], installRoot, nodeRuntimePaths()),
        env: {},
        network: false,
        writeDir: dataDir,
        hiddenPaths: [profile],
      });
      const p = spawned._unsafeUnwrap();
      started.push(p);
      // The plugin would run until SIGTERM: only the stop ends it, and without waiting for EOF first.
      const exit = await p.stop({ stdinGraceMs: 0 });
      expect(graceTimers, `round ${round}: ${exit.description}`).toBe(0);
      expect(existsSync(`/proc/${p.pid}`), `round ${round}: the launcher is not reaped`).toBe(false);
      await eventually(() => processesWith(m).length === 0);
      expect(processesWith(m).map(describeProcess), `round ${round}: ${exit.description}`).toEqual([]);
    }
    expect(ownZombies()).toEqual([]);
  }, 120_000);

  it('a running plugin still gets SIGTERM, and its own exit comes back', async () => {
    graceTimers = 0;
    const spawned = await spawner.spawn({
      executable: unverifiedCommand([process.execPath, join(installRoot, 'lifecycle.mjs'), 'ignore-eof'], installRoot, nodeRuntimePaths()),
      env: {},
      network: false,
      writeDir: dataDir,
      hiddenPaths: [profile],
    });
    const p = spawned._unsafeUnwrap();
    started.push(p);
    expect(await firstJsonLine(p.stdout)).toEqual({ ready: true });
    const exit = await p.stop({ stdinGraceMs: 0 });
    expect(exit).toMatchObject({ code: 143, status: 143 });
    expect(graceTimers).toBe(0);
  });
});

describe('a stop while bubblewrap waits for its seccomp program', () => {
  it('kills the launcher at once: no plugin code ran, no process of the sandbox is left', async () => {
    const m = marker();
    graceTimers = 0;
    // bubblewrap reads the program from fd 3 during its setup, before it runs anything: never written, it stays there.
    const args = ['--unshare-pid', '--die-with-parent', '--ro-bind', '/', '/', '--seccomp', '3', '--', process.execPath, LIFECYCLE, 'ignore-eof', m];
    const child = spawn('bwrap', args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], detached: true });
    await new Promise((resolve) => child.once('spawn', resolve));
    const p = ChildPluginProcess.create(child, { tree: 'pid-namespace', setupCommand: 'bwrap', clock: graceClock, termGraceMs: TERM_GRACE_MS })._unsafeUnwrap();
    started.push(p);
    // Setting up: its own process and every process of its namespace still run bubblewrap's code.
    await waitUntil(() => processesWith(m).length >= 1 && descendantsOf(p.pid).every((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'bwrap'));
    const exit = await p.stop({ stdinGraceMs: 60_000 });
    expect(graceTimers).toBe(0);
    expect(exit).toMatchObject({ signal: 'SIGKILL', status: 137 });
    expect(exit.description).toContain('before the plugin ran');
    await waitUntil(() => processesWith(m).length === 0);
    expect(ownZombies()).toEqual([]);
  });
});
