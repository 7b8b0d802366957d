/**
 * Under bubblewrap a Node 20/21 main module runs without the integrity
 * policy: the sandbox mounts the verified private copy at the module's own
 * path. These attacks change the installed main module after verification
 * and before the sandbox starts; the plugin must still run the verified
 * bytes (importing its neighbours by relative path), or not start at all.
 */
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bindExecutable, verifyExecutableBinding, type ExecutableBindingRecord } from '../../src/binding/ExecutableBinding.js';
import { mountedMainOptions } from '../../src/binding/nodeMain.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import type { VerifiedExecutable } from '../../src/process/VerifiedExecutable.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';

const MAIN = 'bin/main.mjs';
const ORIGINAL = "#!/usr/bin/env node\nimport { v } from './v.mjs';\nconsole.log('ORIGINAL', v, JSON.stringify(process.execArgv));\n";
const SWAPPED = "#!/usr/bin/env node\nconsole.log('SWAPPED');\n";
const FALLBACK = "console.log('SWAPPED');\n";

let spawner: SandboxSpawner;
let s: Scratch;
const started: PluginProcess[] = [];

beforeAll(async () => {
  spawner = (await SandboxSpawner.create({}))._unsafeUnwrap();
});
beforeEach(() => {
  s = scratch();
  s.write('bin/v.mjs', 'export const v = 7;\n', 0o644);
  mkdirSync(join(s.base, 'data'));
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  s.dispose();
});

async function bindMain(): Promise<ExecutableBindingRecord> {
  s.write(MAIN, ORIGINAL);
  const record = (await bindExecutable({ installRoot: s.root, executable: MAIN, searchPath: dirname(process.execPath) }))._unsafeUnwrap();
  // This Node (20.11+) is one the policy is chosen for; the sandbox must make it unnecessary.
  expect(record.interpreter?.node_main).toBe('integrity_policy');
  return record;
}

const verify = async (record: ExecutableBindingRecord): Promise<VerifiedExecutable> =>
  (await verifyExecutableBinding(record, { copyDir: s.copyDir }))._unsafeUnwrap();

/** Spawns in bubblewrap and collects the plugin's stdout until it exits; `spawned: false` if the sandbox refused to start. */
async function runSandboxed(executable: VerifiedExecutable): Promise<{ spawned: boolean; code: number | null; stdout: string }> {
  const spawned = await spawner.spawn({ executable, env: {}, network: false, writeDir: join(s.base, 'data'), hiddenPaths: [s.copyDir] });
  if (spawned.isErr()) return { spawned: false, code: null, stdout: '' };
  const child = spawned.value;
  started.push(child);
  child.stdin.end();
  let stdout = '';
  for await (const chunk of child.stdout) stdout += String(chunk);
  return { spawned: true, code: (await child.exited).code, stdout };
}

describe('bubblewrap mounts the verified Node main module (no integrity policy)', () => {
  it('runs the verified bytes, with their relative imports and no policy, when the file is replaced or rewritten after verification', async () => {
    const record = await bindMain();
    const path = join(s.root, MAIN);

    const byRename = await verify(record);
    writeFileSync(`${path}.tmp`, SWAPPED);
    renameSync(`${path}.tmp`, path);
    const renamed = await runSandboxed(byRename);
    expect(renamed.stdout).toBe(`ORIGINAL 7 ${JSON.stringify(mountedMainOptions())}\n`);
    expect(renamed.code).toBe(0);

    writeFileSync(path, ORIGINAL);
    const inPlace = await verify(record);
    writeFileSync(path, SWAPPED);
    expect((await runSandboxed(inPlace)).stdout).toBe(`ORIGINAL 7 ${JSON.stringify(mountedMainOptions())}\n`);
  });

  it('never runs a file Node would fall back to: a deleted main module, or a directory in its place, stops the start', async () => {
    const record = await bindMain();
    const path = join(s.root, MAIN);

    const beforeDelete = await verify(record);
    rmSync(path);
    writeFileSync(`${path}.js`, FALLBACK);
    const deleted = await runSandboxed(beforeDelete);
    expect(deleted.stdout).toBe('');
    expect(deleted.spawned ? deleted.code : 1).not.toBe(0);
    rmSync(`${path}.js`);

    writeFileSync(path, ORIGINAL);
    const beforeDirectory = await verify(record);
    rmSync(path);
    mkdirSync(path);
    writeFileSync(join(path, 'package.json'), '{ "main": "evil.js" }');
    writeFileSync(join(path, 'evil.js'), FALLBACK);
    writeFileSync(join(path, 'index.js'), FALLBACK);
    const directory = await runSandboxed(beforeDirectory);
    expect(directory.stdout).toBe('');
    expect(directory.spawned ? directory.code : 1).not.toBe(0);
  });

  it('a link swapped in for the main module runs the verified bytes or nothing', async () => {
    const record = await bindMain();
    const path = join(s.root, MAIN);
    const inside = s.write('bin/other.mjs', SWAPPED);
    const outside = join(s.base, 'elsewhere.mjs');
    writeFileSync(outside, SWAPPED);

    for (const target of [inside, outside]) {
      const verified = await verify(record);
      rmSync(path);
      symlinkSync(target, path);
      const out = await runSandboxed(verified);
      expect(['', `ORIGINAL 7 ${JSON.stringify(mountedMainOptions())}\n`]).toContain(out.stdout);
      rmSync(path);
      writeFileSync(path, ORIGINAL);
    }
  });
});
