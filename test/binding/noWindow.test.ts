/**
 * No window between verification and execution: a file swapped after its
 * hash was checked never runs. Deterministic swaps between verify and spawn,
 * a race of a tight swapping loop against repeated spawns, and the same
 * verified executables run inside bubblewrap.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bindExecutable, verifyExecutableBinding, type ExecutableBindingRecord } from '../../src/binding/ExecutableBinding.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';
import { runVerified, type RunOutcome } from './helpers/runVerified.js';
import { NODE_22, nodeBinDir } from '../support/otherNode.js';

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

const bind = async (executable: string, searchPath = '/usr/bin'): Promise<ExecutableBindingRecord> =>
  (await bindExecutable({ installRoot: s.root, executable, searchPath }))._unsafeUnwrap();
let node22Bin: string;
beforeAll(async () => {
  node22Bin = await nodeBinDir();
}, 300_000);
/** The same record launched through the loader hook, as on a Node without integrity policies. */
const withLoaderHook = (record: ExecutableBindingRecord): ExecutableBindingRecord => ({
  ...record,
  interpreter: { ...record.interpreter!, node_main: 'loader_hook' },
});
/** The record of a Node 22.15+ launched through the in-thread hook, as the install picks it from the version it reads in the sandbox. */
const withInThreadHook = (record: ExecutableBindingRecord): ExecutableBindingRecord => ({
  ...record,
  interpreter: { ...record.interpreter!, node_main: 'in_thread_hook' },
});
const verify = (record: ExecutableBindingRecord) => verifyExecutableBinding(record, { copyDir: s.copyDir });

interface Plugin {
  readonly file: string;
  readonly original: string;
  readonly swapped: (marker: string) => string;
  /** Whether a swap after verification still runs the verified bytes, or makes the interpreter refuse to start. */
  readonly onSwap: 'runs_original' | 'interpreter_refuses';
  readonly bind?: (record: ExecutableBindingRecord) => ExecutableBindingRecord;
  /** Where `#!/usr/bin/env` finds the interpreter (default /usr/bin). */
  readonly searchPath?: () => string;
}
const PYTHON: Plugin = {
  file: 'bin/plugin',
  original: '#!/usr/bin/env python3\nprint("ORIGINAL")\n',
  swapped: (marker) => `#!/usr/bin/env python3\nopen(${JSON.stringify(marker)}, "w").write("ran")\nprint("SWAPPED")\n`,
  onSwap: 'runs_original',
};
const NODE: Plugin = {
  file: 'bin/plugin.mjs',
  original: "#!/usr/bin/env node\nconsole.log('ORIGINAL');\n",
  swapped: (marker) => `#!/usr/bin/env node\nimport { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nconsole.log('SWAPPED');\n`,
  onSwap: 'interpreter_refuses',
};
const NODE_LOADER_HOOK: Plugin = { ...NODE, onSwap: 'runs_original', bind: withLoaderHook };
const NODE_22_IN_THREAD: Plugin = { ...NODE, onSwap: 'runs_original', searchPath: () => node22Bin, bind: withInThreadHook };

/** Binds `plugin` as the test variant needs it. */
async function bindPlugin(plugin: Plugin): Promise<ExecutableBindingRecord> {
  const record = await bind(plugin.file, plugin.searchPath?.());
  return plugin.bind ? plugin.bind(record) : record;
}

/** Checks a run after a possible swap: the original ran, or Node refused the main module's bytes before running any. */
function expectOnlyOriginal(plugin: Plugin, out: RunOutcome): 'ran' | 'refused' {
  if (plugin.onSwap === 'interpreter_refuses' && out.stdout === '') {
    expect(out.stderr).toContain('ERR_MANIFEST_ASSERT_INTEGRITY');
    expect(out.code).not.toBe(0);
    return 'refused';
  }
  expect(out.stdout).toBe('ORIGINAL\n');
  return 'ran';
}

describe('a swap after verification never runs', () => {
  it.each([
    ['python', PYTHON],
    ['node (integrity policy)', NODE],
    ['node (loader hook)', NODE_LOADER_HOOK],
    [`node ${NODE_22} (in-thread hook)`, NODE_22_IN_THREAD],
  ])('%s script: swapped by rename, then in place, between verify and spawn', async (_name, plugin) => {
    const marker = join(s.base, 'marker');
    const path = s.write(plugin.file, plugin.original);
    const record = await bindPlugin(plugin);
    const expected = plugin.onSwap === 'runs_original' ? 'ran' : 'refused';

    expect((await runVerified((await verify(record))._unsafeUnwrap())).stdout).toBe('ORIGINAL\n');

    const first = (await verify(record))._unsafeUnwrap();
    writeFileSync(`${path}.tmp`, plugin.swapped(marker));
    renameSync(`${path}.tmp`, path);
    expect(expectOnlyOriginal(plugin, await runVerified(first))).toBe(expected);

    writeFileSync(path, plugin.original);
    const second = (await verify(record))._unsafeUnwrap();
    writeFileSync(path, plugin.swapped(marker)); // same inode, rewritten in place
    expect(expectOnlyOriginal(plugin, await runVerified(second))).toBe(expected);

    expect(existsSync(marker)).toBe(false);
    expect((await verify(record))._unsafeUnwrapErr().details.reason).toBe('digest_mismatch');
  });

  it('node (integrity policy): a link swapped in for the script or its folder after verification is refused by Node', async () => {
    const marker = join(s.base, 'marker');
    const path = s.write(NODE.file, NODE.original);
    const record = await bind(NODE.file);
    const elsewhere = join(s.base, 'elsewhere');
    mkdirSync(join(elsewhere, 'bin'), { recursive: true });
    writeFileSync(join(elsewhere, 'bin', 'plugin.mjs'), NODE.swapped(marker));

    const beforeFileSwap = (await verify(record))._unsafeUnwrap();
    rmSync(path);
    symlinkSync(join(elsewhere, 'bin', 'plugin.mjs'), path);
    expect(expectOnlyOriginal(NODE, await runVerified(beforeFileSwap))).toBe('refused');

    rmSync(path);
    writeFileSync(path, NODE.original);
    const beforeFolderSwap = (await verify(record))._unsafeUnwrap();
    renameSync(join(s.root, 'bin'), join(s.root, 'bin.old'));
    symlinkSync(join(elsewhere, 'bin'), join(s.root, 'bin'));
    expect(expectOnlyOriginal(NODE, await runVerified(beforeFolderSwap))).toBe('refused');
    expect(existsSync(marker)).toBe(false);
  });

  it.each([
    ['integrity policy', NODE],
    ['loader hook', NODE_LOADER_HOOK],
    [`Node ${NODE_22} in-thread hook`, NODE_22_IN_THREAD],
  ])('node (%s): a file Node would fall back to when the script is gone, or a directory in its place, never runs', async (_name, plugin) => {
    const marker = join(s.base, 'marker');
    const evil = `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`;
    const path = s.write(plugin.file, plugin.original);
    const record = await bindPlugin(plugin);

    const beforeDelete = (await verify(record))._unsafeUnwrap();
    rmSync(path);
    writeFileSync(`${path}.js`, evil);
    const fellBack = await runVerified(beforeDelete);
    expect(fellBack.code).not.toBe(0);
    expect(fellBack.stdout).toBe('');
    rmSync(`${path}.js`);

    writeFileSync(path, plugin.original);
    const beforeDirectory = (await verify(record))._unsafeUnwrap();
    rmSync(path);
    mkdirSync(path);
    writeFileSync(join(path, 'package.json'), '{ "main": "evil.js" }');
    writeFileSync(join(path, 'evil.js'), evil);
    writeFileSync(join(path, 'index.js'), evil);
    const directory = await runVerified(beforeDirectory);
    expect(directory.code).not.toBe(0);
    expect(directory.stdout).toBe('');
    expect(existsSync(marker)).toBe(false);
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

/** How many times the planned spawns a race may take to show both outcomes before the test gives up. */
const RACE_ATTEMPT_CAP_FACTOR = 25;

describe('race: swapping in a tight loop while spawning repeatedly', () => {
  it.each([
    ['python', PYTHON, 80],
    ['node (integrity policy)', NODE, 16],
    ['node (loader hook)', NODE_LOADER_HOOK, 16],
    [`node ${NODE_22} (in-thread hook)`, NODE_22_IN_THREAD, 16],
  ])('%s: only the original runs or the spawn is refused', { timeout: 600_000 }, async (_name, plugin, spawns) => {
    const marker = join(s.base, 'marker');
    const path = s.write(plugin.file, plugin.original);
    const record = await bindPlugin(plugin);
    swapper = startSwapper(path, plugin.original, plugin.swapped(marker));

    let ran = 0;
    let refused = 0;
    let attempts = 0;
    // At least `spawns` attempts, and on until both outcomes occurred (the loop really raced the swaps),
    // however the machine schedules the swapper; the cap is only reached if the race never shows both.
    for (; attempts < spawns * RACE_ATTEMPT_CAP_FACTOR && (attempts < spawns || ran === 0 || refused === 0); attempts++) {
      const verified = await verify(record);
      if (verified.isErr()) {
        expect(verified.error.code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
        expect(['digest_mismatch', 'changed_during_verification']).toContain(verified.error.details.reason);
        refused++;
        continue;
      }
      if (expectOnlyOriginal(plugin, await runVerified(verified.value)) === 'ran') ran++;
      else refused++;
    }
    expect(existsSync(marker)).toBe(false);
    expect(ran + refused).toBe(attempts);
    expect(ran).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });

  it('control: the same race defeats a spawner that verifies and then runs the script by path', { timeout: 600_000 }, async () => {
    const marker = join(s.base, 'marker');
    const path = s.write(PYTHON.file, PYTHON.original);
    const record = await bind(PYTHON.file);
    swapper = startSwapper(path, PYTHON.original, PYTHON.swapped(marker));
    // Until the swapped script has run; the cap is far above what any scheduling needs.
    for (let i = 0; i < 5_000 && !existsSync(marker); i++) {
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
