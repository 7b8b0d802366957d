/**
 * The spawn gate: bubblewrap sets a plugin's sandbox up while the host
 * checks the plugin's package tree, and runs the plugin only once the check
 * passed. A plugin whose tree was changed never runs at all: its first
 * statement writes a marker into its writable directory, which stays absent.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { okAsync, ResultAsync } from 'neverthrow';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LINUX_BACKENDS } from './sandboxBackends.js';
import { pinPackageTree, verifyPackageTree, type PackageTreePin } from '../../src/binding/packageTree.js';
import type { HostError } from '../../src/errors/HostError.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { eventually } from '../support/eventually.js';
import { FIXTURES, killAllWith, processesWith } from '../support/processes.js';

const base = mkdtempSync(join(tmpdir(), 'spawn-gate-'));
const started: PluginProcess[] = [];
let spawner: SandboxSpawner;

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  killAllWith(base);
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

interface Package {
  readonly root: string;
  readonly writeDir: string;
  readonly marker: string;
  readonly pin: PackageTreePin;
}

/** A package whose start script first writes a marker into its writable directory, then reads its library; pinned. */
async function pinnedPackage(name: string): Promise<Package> {
  const root = join(base, name, 'install');
  const writeDir = join(base, name, 'data');
  mkdirSync(join(root, 'lib'), { recursive: true });
  mkdirSync(writeDir, { recursive: true });
  const marker = join(writeDir, 'ran');
  writeFileSync(join(root, 'start.sh'), `echo ran > ${marker}\ncat ${join(root, 'lib', 'greeting.txt')}\n`);
  chmodSync(join(root, 'start.sh'), 0o755);
  writeFileSync(join(root, 'lib', 'greeting.txt'), 'hello\n');
  const pin = (await pinPackageTree(root))._unsafeUnwrap();
  return { root, writeDir, marker, pin };
}

/**
 * Spawns the package's start script with its tree check as the gate; the
 * gate first waits until the launcher's sandbox process exists and records
 * whether the marker was written by then.
 */
async function spawnGated(pkg: Package): Promise<{ result: Awaited<ReturnType<SandboxSpawner['spawn']>>; launcherUp: boolean; ranBeforeRelease: boolean }> {
  let launcherUp = false;
  let ranBeforeRelease = true;
  const gate = (): ResultAsync<void, HostError> =>
    new ResultAsync(
      (async () => {
        // The launcher and its sandbox child carry the install root in their command lines.
        launcherUp = await eventually(() => processesWith(pkg.root).length >= 2);
        ranBeforeRelease = existsSync(pkg.marker);
        return verifyPackageTree(pkg.root, pkg.pin).map(() => undefined);
      })(),
    );
  const result = await spawner.spawn({
    executable: unverifiedCommand(['/bin/sh', join(pkg.root, 'start.sh')], pkg.root),
    env: {},
    network: false,
    writeDir: pkg.writeDir,
    hiddenPaths: [],
    gate,
  });
  if (result.isOk()) started.push(result.value);
  return { result, launcherUp, ranBeforeRelease };
}

describe.each(LINUX_BACKENDS)('the spawn gate (real %s)', (backend) => {
  beforeAll(async () => {
    spawner = (await SandboxSpawner.create({ homeDir: join(base, 'home'), backend }))._unsafeUnwrap();
  });

  it('checks the tree while the sandbox is being set up and runs the plugin once the check passed', async () => {
    const pkg = await pinnedPackage(`${backend}-intact`);
    const { result, launcherUp, ranBeforeRelease } = await spawnGated(pkg);
    expect(launcherUp).toBe(true);
    expect(ranBeforeRelease).toBe(false);
    const plugin = result._unsafeUnwrap();
    expect((await plugin.exited).status).toBe(0);
    expect(readFileSync(pkg.marker, 'utf8')).toBe('ran\n');
  });

  it('starts the check before the launcher is forked, so that the check overlaps the layout and the fork too', async () => {
    const pkg = await pinnedPackage(`${backend}-early`);
    let launchersAtStart = -1;
    const gate = (): ResultAsync<void, HostError> => {
      launchersAtStart = processesWith(pkg.root).length;
      return verifyPackageTree(pkg.root, pkg.pin).map(() => undefined);
    };
    const plugin = (
      await spawner.spawn({ executable: unverifiedCommand(['/bin/sh', join(pkg.root, 'start.sh')], pkg.root), env: {}, network: false, writeDir: pkg.writeDir, hiddenPaths: [], gate })
    )._unsafeUnwrap();
    started.push(plugin);
    expect(launchersAtStart).toBe(0);
    expect((await plugin.exited).status).toBe(0);
    expect(readFileSync(pkg.marker, 'utf8')).toBe('ran\n');
  });

  it('never runs a plugin whose tree changed: the launcher is killed before its release, the spawn fails with the check error', async () => {
    const pkg = await pinnedPackage(`${backend}-tampered`);
    appendFileSync(join(pkg.root, 'lib', 'greeting.txt'), 'changed\n');
    const { result, launcherUp, ranBeforeRelease } = await spawnGated(pkg);
    expect(launcherUp).toBe(true);
    expect(ranBeforeRelease).toBe(false);
    expect(result._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'file_changed', file: 'lib/greeting.txt' } });
    expect(processesWith(pkg.root)).toEqual([]);
    expect(existsSync(pkg.marker)).toBe(false);
  });

  it('never runs the plugin when the host dies while the check is running: the launcher fails on its unwritten seccomp program', async () => {
    const m = `gate-${process.pid}-${Math.random().toString(36).slice(2)}`;
    const writeDir = join(base, m);
    mkdirSync(writeDir);
    const host = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'dying-gated-host.ts'), m, writeDir, backend], { stdio: 'ignore' });
    try {
      // The sandbox's own process waits in read(2) for the seccomp program, its mounts done.
      const read = process.arch === 'arm64' ? '63 ' : '0 ';
      const inRead = (pid: number): boolean => {
        try {
          return readFileSync(`/proc/${pid}/syscall`, 'utf8').startsWith(read);
        } catch {
          return false;
        }
      };
      const waiting = (): boolean => processesWith(m).some(inRead);
      expect(await eventually(() => processesWith(m).length >= 2 && waiting(), 30_000)).toBe(true);
      host.kill('SIGKILL');
      expect(await eventually(() => processesWith(m).length === 0)).toBe(true);
      expect(existsSync(join(writeDir, 'ran'))).toBe(false);
    } finally {
      host.kill('SIGKILL');
      killAllWith(m);
    }
  }, 60_000);
});

describe('the spawn gate without a sandbox', () => {
  it('runs the check before the spawn where the launcher cannot wait for it (unsandboxed dev mode)', async () => {
    const unsandboxed = (await SandboxSpawner.create({ dangerouslyRunUnsandboxed: true, profileKind: 'dev' }))._unsafeUnwrap();
    const pkg = await pinnedPackage('unsandboxed');
    appendFileSync(join(pkg.root, 'lib', 'greeting.txt'), 'changed\n');
    const request = { executable: unverifiedCommand(['/bin/sh', join(pkg.root, 'start.sh')], pkg.root), env: {}, network: false, writeDir: pkg.writeDir, hiddenPaths: [] };
    const refused = await unsandboxed.spawn({ ...request, gate: () => verifyPackageTree(pkg.root, pkg.pin).map(() => undefined) });
    expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'file_changed' } });
    expect(existsSync(pkg.marker)).toBe(false);
    const started = (await unsandboxed.spawn({ ...request, gate: () => okAsync(undefined) }))._unsafeUnwrap();
    expect((await started.exited).status).toBe(0);
    expect(existsSync(pkg.marker)).toBe(true);
  });
});
