/**
 * No window between verification and execution: a file swapped after its
 * hash was checked never runs. Deterministic swaps between verify and spawn,
 * a race of a tight swapping loop against repeated spawns, and the same
 * verified executables run inside bubblewrap.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bindExecutable, verifyExecutableBinding, type ExecutableBindingRecord } from '../../src/binding/ExecutableBinding.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';
import { runVerified } from './helpers/runVerified.js';

let s: Scratch;
let swapper: ChildProcess | undefined;
beforeEach(() => {
  s = scratch();
});
afterEach(async () => {
  if (swapper && swapper.exitCode === null) {
    const gone = new Promise((r) => swapper!.once('exit', r));
    swapper.kill('SIGKILL');
    await gone;
  }
  swapper = undefined;
  s.dispose();
});

const bind = async (executable: string): Promise<ExecutableBindingRecord> =>
  (await bindExecutable({ installRoot: s.root, executable, searchPath: '/usr/bin' }))._unsafeUnwrap();
const verify = (record: ExecutableBindingRecord) => verifyExecutableBinding(record, { copyDir: s.copyDir });

interface Plugin {
  readonly file: string;
  readonly original: string;
  readonly swapped: (marker: string) => string;
}
const PYTHON: Plugin = {
  file: 'bin/plugin',
  original: '#!/usr/bin/env python3\nprint("ORIGINAL")\n',
  swapped: (marker) => `#!/usr/bin/env python3\nopen(${JSON.stringify(marker)}, "w").write("ran")\nprint("SWAPPED")\n`,
};
const NODE: Plugin = {
  file: 'bin/plugin.mjs',
  original: "#!/usr/bin/env node\nconsole.log('ORIGINAL');\n",
  swapped: (marker) => `#!/usr/bin/env node\nimport { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nconsole.log('SWAPPED');\n`,
};

describe('a swap after verification never runs', () => {
  it.each([
    ['python', PYTHON],
    ['node', NODE],
  ])('%s script: swapped by rename, then in place, between verify and spawn', async (_name, plugin) => {
    const marker = join(s.base, 'marker');
    const path = s.write(plugin.file, plugin.original);
    const record = await bind(plugin.file);

    const first = (await verify(record))._unsafeUnwrap();
    writeFileSync(`${path}.tmp`, plugin.swapped(marker));
    renameSync(`${path}.tmp`, path);
    expect((await runVerified(first)).stdout).toBe('ORIGINAL\n');

    writeFileSync(path, plugin.original);
    const second = (await verify(record))._unsafeUnwrap();
    writeFileSync(path, plugin.swapped(marker)); // same inode, rewritten in place
    expect((await runVerified(second)).stdout).toBe('ORIGINAL\n');

    expect(existsSync(marker)).toBe(false);
    expect((await verify(record))._unsafeUnwrapErr().details.reason).toBe('digest_mismatch');
  });

  it('native executable: rewritten in place between verify and spawn', async () => {
    const path = s.write('bin/tool', readFileSync('/bin/echo'));
    const record = (await bindExecutable({ installRoot: s.root, executable: 'bin/tool', args: ['still', 'echo'] }))._unsafeUnwrap();
    const exe = (await verify(record))._unsafeUnwrap();
    writeFileSync(path, readFileSync('/usr/bin/false'));
    const out = await runVerified(exe);
    expect(out).toMatchObject({ code: 0, stdout: 'still echo\n' });
  });
});

/** Starts a process that swaps `path` between two contents as fast as it can, by rename and by in-place rewrite. */
function startSwapper(path: string, original: string, swapped: string): ChildProcess {
  const program = `
    const fs = require('node:fs');
    const [path, a, b] = process.argv.slice(1);
    const tmp = path + '.swap';
    for (let i = 0; ; i++) {
      const next = i % 2 === 0 ? b : a;
      if (i % 4 < 2) { fs.writeFileSync(tmp, next); fs.renameSync(tmp, path); }
      else fs.writeFileSync(path, next);
    }`;
  return spawn(process.execPath, ['-e', program, path, original, swapped], { stdio: 'ignore' });
}

describe('race: swapping in a tight loop while spawning repeatedly', () => {
  it.each([
    ['python', PYTHON, 80],
    ['node', NODE, 16],
  ])('%s: only the original runs or the spawn is refused', { timeout: 120_000 }, async (_name, plugin, spawns) => {
    const marker = join(s.base, 'marker');
    const path = s.write(plugin.file, plugin.original);
    const record = await bind(plugin.file);
    swapper = startSwapper(path, plugin.original, plugin.swapped(marker));

    let ran = 0;
    let refused = 0;
    for (let i = 0; i < spawns; i++) {
      const verified = await verify(record);
      if (verified.isErr()) {
        expect(verified.error.code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
        expect(['digest_mismatch', 'changed_during_verification']).toContain(verified.error.details.reason);
        refused++;
        continue;
      }
      const out = await runVerified(verified.value);
      expect(out.stdout).toBe('ORIGINAL\n');
      ran++;
    }
    expect(existsSync(marker)).toBe(false);
    expect(ran + refused).toBe(spawns);
    // Both outcomes occurred, so the loop really raced the swaps.
    expect(ran).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });

  it('control: the same race defeats a spawner that verifies and then runs the script by path', { timeout: 120_000 }, async () => {
    const marker = join(s.base, 'marker');
    const path = s.write(PYTHON.file, PYTHON.original);
    const record = await bind(PYTHON.file);
    swapper = startSwapper(path, PYTHON.original, PYTHON.swapped(marker));
    for (let i = 0; i < 200 && !existsSync(marker); i++) {
      const verified = await verify(record);
      if (verified.isErr()) continue;
      verified.value.release();
      spawnSync(record.interpreter!.path, [path], { stdio: 'ignore' });
    }
    expect(existsSync(marker)).toBe(true);
  });
});

describe('inside bubblewrap', () => {
  const BWRAP = ['/usr/bin/bwrap', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--unshare-all', '--die-with-parent', '--'];

  it('runs a native executable and a two-file Node plugin through the inherited descriptors', async () => {
    s.write('bin/echo', readFileSync('/bin/echo'));
    const native = (await bindExecutable({ installRoot: s.root, executable: 'bin/echo', args: ['sandboxed'] }))._unsafeUnwrap();
    expect(await runVerified((await verify(native))._unsafeUnwrap(), BWRAP)).toMatchObject({ code: 0, stdout: 'sandboxed\n' });

    s.write('bin/main.mjs', "#!/usr/bin/env node\nimport { v } from './v.mjs';\nconsole.log('node', v);\n");
    s.write('bin/v.mjs', 'export const v = 7;\n', 0o644);
    const out = await runVerified((await verify(await bind('bin/main.mjs')))._unsafeUnwrap(), BWRAP);
    expect(out.stdout).toBe('node 7\n');
  });

  it('still runs the verified bytes when the file is swapped before the sandbox starts', async () => {
    const marker = join(s.base, 'marker');
    const path = s.write(PYTHON.file, PYTHON.original);
    const exe = (await verify(await bind(PYTHON.file)))._unsafeUnwrap();
    writeFileSync(path, PYTHON.swapped(marker));
    expect((await runVerified(exe, BWRAP)).stdout).toBe('ORIGINAL\n');
    expect(existsSync(marker)).toBe(false);
  });
});
