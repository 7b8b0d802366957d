/**
 * What a sandboxed Node plugin inherits. Under bubblewrap a Node 20/21 main
 * module runs from the verified copy mounted at its path, so no integrity
 * policy is written for it, and no file descriptor but stdio reaches the
 * plugin. A launcher that cannot mount refuses such a command; without the
 * option the policy is still written for the launchers that use it.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bindExecutable, verifyExecutableBinding, type ExecutableBindingRecord, type VerifyExecutableOptions } from '../../src/binding/ExecutableBinding.js';
import { mountedMainOptions } from '../../src/binding/nodeMain.js';
import { inheritableDescriptors } from '../../src/process/processTree.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { spawnPluginProcess } from '../../src/process/spawnPluginProcess.js';
import type { VerifiedExecutable } from '../../src/process/VerifiedExecutable.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';

const MAIN = 'bin/fds.mjs';
// Prints every descriptor the plugin holds with what it refers to, and Node's own options.
const LIST_FDS = `#!/usr/bin/env node
import { readdirSync, readlinkSync } from 'node:fs';
const fds = {};
for (const fd of readdirSync('/proc/self/fd')) { try { fds[fd] = readlinkSync('/proc/self/fd/' + fd); } catch { fds[fd] = null; } }
console.log(JSON.stringify({ fds, execArgv: process.execArgv }));
`;

interface Listing {
  readonly fds: Record<string, string | null>;
  readonly execArgv: string[];
}

let spawner: SandboxSpawner;
let s: Scratch;
const started: PluginProcess[] = [];

beforeAll(async () => {
  spawner = (await SandboxSpawner.create({}))._unsafeUnwrap();
});
beforeEach(() => {
  s = scratch();
  mkdirSync(join(s.base, 'data'));
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  s.dispose();
});

async function bindLister(): Promise<ExecutableBindingRecord> {
  s.write(MAIN, LIST_FDS);
  const record = (await bindExecutable({ installRoot: s.root, executable: MAIN, searchPath: dirname(process.execPath) }))._unsafeUnwrap();
  expect(record.interpreter?.node_main).toBe('integrity_policy');
  return record;
}

const verify = async (record: ExecutableBindingRecord, options: Partial<VerifyExecutableOptions> = {}): Promise<VerifiedExecutable> =>
  (await verifyExecutableBinding(record, { copyDir: s.copyDir, ...options }))._unsafeUnwrap();

async function listing(child: PluginProcess): Promise<Listing> {
  started.push(child);
  child.stdin.end();
  let stdout = '';
  for await (const chunk of child.stdout) stdout += String(chunk);
  expect((await child.exited).code).toBe(0);
  return JSON.parse(stdout) as Listing;
}

const runSandboxed = async (executable: VerifiedExecutable): Promise<Listing> =>
  listing((await spawner.spawn({ executable, env: {}, network: false, writeDir: join(s.base, 'data'), hiddenPaths: [s.copyDir] }))._unsafeUnwrap());

/** The plugin's descriptors above stdio that refer to files, leaving out what whatever started this test leaks to every child. */
function fileDescriptors(fds: Listing['fds']): string[] {
  const leakedByParent = new Set(inheritableDescriptors().map(String));
  return Object.entries(fds)
    // Node keeps /dev/null open for itself; the listing's own directory descriptor is /proc/<pid>/fd.
    .filter(([fd, target]) => Number(fd) > 2 && !leakedByParent.has(fd) && target !== null && target.startsWith('/') && target !== '/dev/null' && !/^\/proc\/\d+\/fd$/.test(target))
    .map(([fd, target]) => `${fd} -> ${String(target)}`);
}

describe('descriptors a sandboxed Node plugin inherits', () => {
  it('under bubblewrap: no policy, no file descriptor but stdio (the copy and the interpreter are mounted, not held)', async () => {
    expect(spawner.mountsMain).toBe(true);
    const { fds, execArgv } = await runSandboxed(await verify(await bindLister(), { launcherMountsMain: spawner.mountsMain }));
    expect(execArgv).toEqual(mountedMainOptions());
    expect(fileDescriptors(fds)).toEqual([]);
  });

  it('a launcher that cannot mount refuses a command verified without the policy', async () => {
    const executable = await verify(await bindLister(), { launcherMountsMain: true });
    const refused = await spawnPluginProcess({ executable, env: {}, setprivPath: false });
    expect(refused._unsafeUnwrapErr().code).toBe('PLUGIN_SPAWN_FAILED');
    expect(refused._unsafeUnwrapErr().message).toMatch(/unchecked/);
  });

  it('without a mounting launcher the policy is still written and applied', async () => {
    const executable = await verify(await bindLister());
    const child = (await spawnPluginProcess({ executable, env: {}, setprivPath: false }))._unsafeUnwrap();
    const { execArgv } = await listing(child);
    expect(execArgv.some((option) => option.startsWith('--experimental-policy='))).toBe(true);
  });
});
