import { appendFileSync, copyFileSync, existsSync, fstatSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bindExecutable, verifyExecutableBinding, type ExecutableBindingRecord } from '../../src/binding/ExecutableBinding.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';
import { runVerified } from './helpers/runVerified.js';
import { NODE_MAIN_GUARD, type NodeMainLoading } from '../../src/binding/nodeMain.js';
import { confinedInterpreterVersion, type InterpreterVersionProbe } from '../../src/binding/interpreterVersion.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { NODE_22, nodeBinDir } from '../support/otherNode.js';
import { PYTHON3_REAL } from '../support/python.js';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.dispose());

const bind = async (executable: string, args: string[] = [], searchPath = '/usr/bin', nodeVersion?: InterpreterVersionProbe): Promise<ExecutableBindingRecord> =>
  (await bindExecutable({ installRoot: s.root, executable, args, searchPath }, nodeVersion))._unsafeUnwrap();
const verify = (record: ExecutableBindingRecord) => verifyExecutableBinding(record, { copyDir: s.copyDir });
const refusal = async (record: ExecutableBindingRecord): Promise<Record<string, unknown>> => {
  const e = (await verify(record))._unsafeUnwrapErr();
  expect(e.code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
  expect(e.details.quarantine).toBe(true);
  return e.details;
};

const PY_ORIGINAL = '#!/usr/bin/env python3\nimport sys\nprint("ORIGINAL", *sys.argv[1:])\n';

describe('verifyExecutableBinding: what runs', () => {
  it('runs a native executable from the verified copy through fd 3', async () => {
    s.write('bin/echo', readFileSync('/bin/echo'));
    const exe = (await verify(await bind('bin/echo', ['hello', 'world'])))._unsafeUnwrap();
    expect(exe.argv).toEqual(['/proc/self/fd/3', 'hello', 'world']);
    expect(exe.inheritFds).toHaveLength(1);
    expect(exe.readOnlyPaths).toEqual([s.root]);
    expect(exe.installRoot).toBe(s.root);
    const out = await runVerified(exe);
    expect(out).toMatchObject({ code: 0, stdout: 'hello world\n' });
    expect(readdirSync(s.copyDir)).toEqual([]);
  });

  const nodeMethods = [['integrity_policy'], ['loader_hook']] as const;

  const WORKER_MAIN = `#!/usr/bin/env node
const { openSync } = require('node:fs');
const { Worker } = require('node:worker_threads');
// Takes the lowest free descriptor, which the launch's own descriptor left free.
openSync(__dirname + '/state.txt', 'r');
new Worker(__dirname + '/worker.js').on('exit', (code) => console.log('worker exit', code));
`;
  const writeWorkerPlugin = (): void => {
    s.write('bin/main.cjs', WORKER_MAIN);
    s.write('bin/worker.js', "console.log('worker ran its own file');\n", 0o644);
    s.write('bin/state.txt', "console.log('state.txt RAN AS CODE');\n", 0o644);
  };

  it.each(nodeMethods)('lets a worker thread run its own file, and never serves a reused descriptor as code (%s)', async (method) => {
    writeWorkerPlugin();
    const out = await runVerified((await verify(launchedWith(await bind('bin/main.cjs'), method)))._unsafeUnwrap());
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe('worker ran its own file\nworker exit 0\n');
  });

  describe(`on Node ${NODE_22}`, () => {
    let node22Bin: string;
    // The install asks a Node other than the host's own for its version in the sandbox only.
    let inSandbox: InterpreterVersionProbe;
    beforeAll(async () => {
      node22Bin = await nodeBinDir();
      inSandbox = confinedInterpreterVersion({ spawner: (await SandboxSpawner.create())._unsafeUnwrap() });
    }, 300_000);

    it('pins the interpreter with the in-thread hook and runs a two-file ESM plugin and an extensionless CommonJS plugin', async () => {
      s.write('bin/main.mjs', "#!/usr/bin/env node\nimport { answer } from '../lib/answer.mjs';\nconsole.log('ESM', answer, import.meta.url, process.version);\n");
      s.write('lib/answer.mjs', 'export const answer = 42;\n', 0o644);
      const esm = await bind('bin/main.mjs', [], node22Bin, inSandbox);
      expect(esm.interpreter).toMatchObject({ path: join(node22Bin, 'node'), node_main: 'in_thread_hook' });
      const exe = (await verify(esm))._unsafeUnwrap();
      expect(exe.argv).toContain('--import');
      const out = await runVerified(exe);
      expect(out.stderr).toBe('');
      expect(out.stdout).toBe(`ESM 42 file://${s.root}/bin/main.mjs v${NODE_22}\n`);

      s.write('bin/server', "#!/usr/bin/env node\nconst { name } = require('./helper.js');\nconsole.log('CJS', name, __filename, require.main === module);\n");
      s.write('bin/helper.js', "exports.name = 'helper';\n", 0o644);
      const cjs = await runVerified((await verify(await bind('bin/server', [], node22Bin, inSandbox)))._unsafeUnwrap());
      expect(cjs.stderr).toBe('');
      expect(cjs.stdout).toBe(`CJS helper ${s.root}/bin/server true\n`);
    });

    it('lets a worker thread run its own file, and never serves a reused descriptor as code', async () => {
      writeWorkerPlugin();
      const out = await runVerified((await verify(await bind('bin/main.cjs', [], node22Bin, inSandbox)))._unsafeUnwrap());
      expect(out.stderr).toBe('');
      expect(out.stdout).toBe('worker ran its own file\nworker exit 0\n');
    });

    it('runs an extensionless main written as an ES module, as plain Node 22 does (its format is detected)', async () => {
      const script = s.write('bin/server', "#!/usr/bin/env node\nimport { sep } from 'node:path';\nconsole.log('esm syntax', sep);\n");
      const plain = spawnSync(join(node22Bin, 'node'), [script], { encoding: 'utf8' });
      const out = await runVerified((await verify(await bind('bin/server', [], node22Bin, inSandbox)))._unsafeUnwrap());
      expect(out.stdout).toBe('esm syntax /\n');
      expect(out.stdout).toBe(plain.stdout);
    });
  });
  const launchedWith = (record: ExecutableBindingRecord, method: NodeMainLoading): ExecutableBindingRecord => ({
    ...record,
    interpreter: { ...record.interpreter!, node_main: method },
  });

  it.each(nodeMethods)('runs a two-file ESM Node plugin whose relative import resolves inside the install root (%s)', async (method) => {
    s.write('bin/main.mjs', "#!/usr/bin/env node\nimport { answer } from '../lib/answer.mjs';\nconsole.log('ESM', answer, import.meta.url);\n");
    s.write('lib/answer.mjs', 'export const answer = 42;\n', 0o644);
    const exe = (await verify(launchedWith(await bind('bin/main.mjs'), method)))._unsafeUnwrap();
    // Under the policy the verified copy comes third, for a launcher that mounts it in place of the policy.
    expect(exe.inheritFds).toHaveLength(method === 'integrity_policy' ? 3 : 2);
    expect(exe.mountedMain?.path).toBe(method === 'integrity_policy' ? join(s.root, 'bin/main.mjs') : undefined);
    expect(exe.readOnlyPaths).toEqual([s.root, '/usr/bin/node', ...(method === 'integrity_policy' ? [NODE_MAIN_GUARD] : [])]);
    expect(exe.argv.includes(`--experimental-policy=/proc/self/fd/3`)).toBe(method === 'integrity_policy');
    const out = await runVerified(exe);
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe(`ESM 42 file://${s.root}/bin/main.mjs\n`);
    expect(readdirSync(s.copyDir)).toEqual([]);
  });

  it('runs a Node plugin that imports a data: URL under the integrity policy', async () => {
    s.write('bin/main.mjs', "#!/usr/bin/env node\nconst m = await import('data:text/javascript,export default 42');\nconsole.log('data', m.default);\n");
    const record = await bind('bin/main.mjs');
    expect(record.interpreter?.node_main).toBe('integrity_policy');
    const out = await runVerified((await verify(record))._unsafeUnwrap());
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe('data 42\n');
  });

  it('runs a Node script pinned for the integrity policy through the loader hook when the guard file is not where it was said to be', async () => {
    s.write('bin/main.mjs', "#!/usr/bin/env node\nconsole.log('hooked');\n");
    const record = await bind('bin/main.mjs');
    expect(record.interpreter?.node_main).toBe('integrity_policy');
    const exe = (await verifyExecutableBinding(record, { copyDir: s.copyDir, nodeMainGuardPath: join(s.base, 'no-guard.cjs') }))._unsafeUnwrap();
    expect(exe.argv).toContain('--import');
    expect(exe.argv.some((a) => a.startsWith('--experimental-policy'))).toBe(false);
    expect((await runVerified(exe)).stdout).toBe('hooked\n');
    // A launcher that mounts the main module preloads the guard too (require()'s global folders): without it, the hook as well.
    const mounted = (await verifyExecutableBinding(record, { copyDir: s.copyDir, nodeMainGuardPath: join(s.base, 'no-guard.cjs'), launcherMountsMain: true }))._unsafeUnwrap();
    expect(mounted.argv).toContain('--import');
    expect(mounted.mountedMain).toBeUndefined();
    expect((await runVerified(mounted)).stdout).toBe('hooked\n');
  });

  it('pins a Node script that is not valid UTF-8 with the loader hook, and runs it', async () => {
    s.write('bin/latin1.cjs', Buffer.concat([Buffer.from("#!/usr/bin/env node\n// caf"), Buffer.from([0xe9]), Buffer.from("\nconsole.log('latin-1 ok');\n")]));
    const record = await bind('bin/latin1.cjs');
    expect(record.interpreter?.node_main).toBe('loader_hook');
    expect((await runVerified((await verify(record))._unsafeUnwrap())).stdout).toBe('latin-1 ok\n');
  });

  it.each(nodeMethods)('runs an extensionless CommonJS Node plugin with require() of a sibling and its arguments (%s)', async (method) => {
    s.write('bin/server', "#!/usr/bin/env node\nconst { name } = require('./helper.js');\nconsole.log('CJS', name, __filename, require.main === module, process.argv.slice(2).join(','));\n");
    s.write('bin/helper.js', "exports.name = 'helper';\n", 0o644);
    const out = await runVerified((await verify(launchedWith(await bind('bin/server', ['--stdio', 'x']), method)))._unsafeUnwrap());
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe(`CJS helper ${s.root}/bin/server true --stdio,x\n`);
  });

  it('runs a Python script through its pinned interpreter', async () => {
    s.write('bin/plugin', PY_ORIGINAL);
    const out = await runVerified((await verify(await bind('bin/plugin', ['a'])))._unsafeUnwrap());
    expect(out).toMatchObject({ code: 0, stdout: 'ORIGINAL a\n' });
  });

  it('runs a two-file Python plugin as a plain `python script` would: sibling import, __file__, argv, __main__', async () => {
    s.write(
      'bin/server.py',
      [
        '#!/usr/bin/env python3',
        'import sys',
        'from helper import NAME',
        'def main():',
        '    print(NAME, __file__, sys.argv, __name__, sys.modules["__main__"].__file__)',
        'if __name__ == "__main__":',
        '    main()',
        '',
      ].join('\n'),
    );
    s.write('bin/helper.py', 'NAME = "helper"\n', 0o644);
    const exe = (await verify(await bind('bin/server.py', ['--stdio'])))._unsafeUnwrap();
    expect(exe.argv).toContain('-c');
    const out = await runVerified(exe);
    expect(out.stderr).toBe('');
    const script = `${s.root}/bin/server.py`;
    expect(out.stdout).toBe(`helper ${script} ['${script}', '--stdio'] __main__ ${script}\n`);
  });

  it.each([['#!/usr/bin/env python3'], ['#!/usr/bin/python3 -I'], ['#!/usr/bin/python3 -P']])(
    'gives the script the sys.argv, sys.path and __file__ a plain run of it gives (%s)',
    async (shebang) => {
      const script = s.write('bin/show.py', `${shebang}\nimport json, sys\nprint(json.dumps([sys.argv, sys.path, __file__, __name__]))\n`);
      const record = await bind('bin/show.py', ['--x']);
      const verified = await runVerified((await verify(record))._unsafeUnwrap());
      const plain = spawnSync(record.interpreter!.path, [...record.interpreter!.args, script, '--x'], { cwd: s.root, encoding: 'utf8' });
      expect(verified.stderr).toBe('');
      expect(verified.stdout).toBe(plain.stdout);
    },
  );

  it('imports no module from the install root (its working directory) before running the script, even with -S', async () => {
    s.write('os.py', 'print("EVIL os.py from the working directory")\n', 0o644);
    s.write('stat.py', 'print("EVIL stat.py from the working directory")\n', 0o644);
    s.write('bin/plugin', '#!/usr/bin/python3 -S\nprint("ORIGINAL")\n');
    const record = await bind('bin/plugin');
    // Python 3.11+ imports os and stat frozen; turning that off makes them come from sys.path as on older Pythons.
    const args = ['-S', '-Xfrozen_modules=off'];
    const unfrozen = { ...record, interpreter: { ...record.interpreter!, args }, argv_normalized: [record.interpreter!.path, ...args, `${s.root}/bin/plugin`] };
    const out = await runVerified((await verify(unfrozen))._unsafeUnwrap());
    expect(out).toMatchObject({ code: 0, stdout: 'ORIGINAL\n' });
  });

  it('runs a Python plugin whose exit status and uncaught error come through unchanged', async () => {
    s.write('bin/plugin', '#!/usr/bin/env python3\nimport sys\nif len(sys.argv) > 1:\n    raise ValueError("boom")\nsys.exit(7)\n');
    expect((await runVerified((await verify(await bind('bin/plugin')))._unsafeUnwrap())).code).toBe(7);
    const failed = await runVerified((await verify(await bind('bin/plugin', ['fail'])))._unsafeUnwrap());
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('ValueError: boom');
    expect(failed.stderr).toContain(`File "${s.root}/bin/plugin", line 4`);
  });

  it('closes the inherited descriptors on release', async () => {
    s.write('bin/plugin', PY_ORIGINAL);
    const exe = (await verify(await bind('bin/plugin')))._unsafeUnwrap();
    const fds = [...exe.inheritFds];
    expect(() => fstatSync(fds[0]!)).not.toThrow();
    exe.release();
    exe.release();
    await new Promise((r) => setTimeout(r, 50));
    for (const fd of fds) expect(() => fstatSync(fd)).toThrow();
  });
});

describe('verifyExecutableBinding: refusals (each marks the plugin for quarantine)', () => {
  it('refuses an executable tampered with after install, every time (never cached)', async () => {
    const path = s.write('bin/plugin', PY_ORIGINAL);
    const record = await bind('bin/plugin');
    (await verify(record))._unsafeUnwrap().release();
    appendFileSync(path, 'print("extra")\n');
    const details = await refusal(record);
    expect(details.reason).toBe('digest_mismatch');
    expect(details.expected_sha256).toBe(record.executable_sha256);
    expect(details.actual_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readdirSync(s.copyDir)).toEqual([]);
  });

  it('refuses a link swapped in after install, even to identical bytes', async () => {
    const path = s.write('bin/plugin', PY_ORIGINAL);
    const record = await bind('bin/plugin');
    copyFileSync(path, join(s.base, 'same-bytes'));
    rmSync(path);
    symlinkSync(join(s.base, 'same-bytes'), path);
    expect((await refusal(record)).reason).toBe('link');
  });

  it('refuses a directory of the path swapped for a link to the outside', async () => {
    s.write('bin/plugin', PY_ORIGINAL);
    const record = await bind('bin/plugin');
    renameSync(join(s.root, 'bin'), join(s.base, 'moved'));
    symlinkSync(join(s.base, 'moved'), join(s.root, 'bin'));
    expect((await refusal(record)).reason).toBe('link');
  });

  it('refuses an install root that became a link', async () => {
    s.write('bin/plugin', PY_ORIGINAL);
    const record = await bind('bin/plugin');
    renameSync(s.root, join(s.base, 'elsewhere'));
    symlinkSync(join(s.base, 'elsewhere'), s.root);
    expect((await refusal(record)).reason).toBe('link');
  });

  it('refuses a deleted executable', async () => {
    const path = s.write('bin/plugin', PY_ORIGINAL);
    const record = await bind('bin/plugin');
    rmSync(path);
    expect((await refusal(record)).reason).toBe('missing');
  });

  it('refuses a record whose argv no longer matches its paths, or whose path escapes', async () => {
    s.write('bin/plugin', PY_ORIGINAL);
    const record = await bind('bin/plugin');
    expect((await refusal({ ...record, argv_normalized: ['/bin/sh', '-c', 'id'] })).reason).toBe('binding_inconsistent');
    expect((await refusal({ ...record, executable_path: '../x' })).reason).toBe('path_traversal');
    expect((await refusal({ ...record, executable_sha256: 'nothex' })).reason).toBe('binding_inconsistent');
  });
});

describe('verifyExecutableBinding: interpreter pin', () => {
  const setUpPinnedPython = async (): Promise<{ record: ExecutableBindingRecord; interpreter: string; pathDir: string }> => {
    const pathDir = join(s.base, 'path1');
    mkdirSync(pathDir);
    const interpreter = join(pathDir, 'python3');
    copyFileSync(PYTHON3_REAL, interpreter);
    s.write('bin/plugin', PY_ORIGINAL);
    const record = await bind('bin/plugin', [], pathDir);
    expect(record.interpreter?.path).toBe(interpreter);
    return { record, interpreter, pathDir };
  };

  it('keeps running the pinned interpreter when another one is put first on PATH after install', async () => {
    const { record, pathDir } = await setUpPinnedPython();
    const marker = join(s.base, 'swapped-interpreter-ran');
    const evil = join(s.base, 'path0');
    mkdirSync(evil);
    writeFileSync(join(evil, 'python3'), `#!${PYTHON3_REAL}\nopen(${JSON.stringify(marker)}, 'w').write('x')\n`, { mode: 0o755 });
    const previous = process.env.PATH;
    process.env.PATH = `${evil}:${pathDir}:${previous ?? ''}`;
    try {
      const out = await runVerified((await verify(record))._unsafeUnwrap());
      expect(out.stdout).toBe('ORIGINAL\n');
    } finally {
      process.env.PATH = previous;
    }
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses a pinned interpreter modified in place after install', async () => {
    const { record, interpreter } = await setUpPinnedPython();
    appendFileSync(interpreter, Buffer.from([0]));
    const details = await refusal(record);
    expect(details.reason).toBe('interpreter_digest_mismatch');
    expect(details.path).toBe(interpreter);
  });

  it('refuses a pinned interpreter replaced by another binary', async () => {
    const { record, interpreter } = await setUpPinnedPython();
    copyFileSync('/usr/bin/env', `${interpreter}.new`);
    renameSync(`${interpreter}.new`, interpreter);
    expect((await refusal(record)).reason).toBe('interpreter_digest_mismatch');
  });

  it('accepts a pinned interpreter whose file identity changed but whose bytes did not (re-hashed)', async () => {
    const { record, interpreter } = await setUpPinnedPython();
    copyFileSync(interpreter, `${interpreter}.new`);
    renameSync(`${interpreter}.new`, interpreter);
    const out = await runVerified((await verify(record))._unsafeUnwrap());
    expect(out.stdout).toBe('ORIGINAL\n');
  });
});
