import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bindExecutable } from '../../src/binding/ExecutableBinding.js';
import { nodeMainLoadingFor } from '../../src/binding/nodeMain.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';
import { PYTHON3_DIR, PYTHON3_REAL } from '../support/python.js';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.dispose());

const NATIVE = '/usr/bin/true';
const sha = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');
const reasonOf = async (executable: string, searchPath = '/usr/bin'): Promise<unknown> => {
  const r = await bindExecutable({ installRoot: s.root, executable, searchPath });
  expect(r.isErr()).toBe(true);
  const e = r._unsafeUnwrapErr();
  expect(e.code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
  return e.details.reason;
};

describe('bindExecutable: paths', () => {
  it('pins a native executable: relative path, SHA-256, argv with absolute paths, real install root', async () => {
    const path = s.write('bin/tool', readFileSync(NATIVE));
    const r = (await bindExecutable({ installRoot: s.root, executable: './bin//tool', args: ['--stdio'] }))._unsafeUnwrap();
    expect(r).toEqual({
      executable_path: 'bin/tool',
      executable_sha256: sha(path),
      argv_normalized: [`${s.root}/bin/tool`, '--stdio'],
      install_root: s.root,
    });
  });

  it('records the real path of an install root reached through a link', async () => {
    s.write('bin/tool', readFileSync(NATIVE));
    symlinkSync(s.root, join(s.base, 'alias'));
    const r = (await bindExecutable({ installRoot: join(s.base, 'alias'), executable: 'bin/tool' }))._unsafeUnwrap();
    expect(r.install_root).toBe(s.root);
  });

  it.each([
    ['/usr/bin/true', 'absolute_path'],
    ['\\bin\\tool', 'absolute_path'],
    ['C:/tools/tool.exe', 'absolute_path'],
    ['../tool', 'path_traversal'],
    ['bin/../../tool', 'path_traversal'],
    ['bin\\tool', 'invalid_path'],
    ['', 'invalid_path'],
    ['./', 'invalid_path'],
  ])('refuses %j (%s)', async (executable, reason) => {
    expect(await reasonOf(executable)).toBe(reason);
  });

  it('refuses a link as the executable, even one pointing inside the root', async () => {
    s.write('bin/real', readFileSync(NATIVE));
    symlinkSync('real', join(s.root, 'bin/tool'));
    expect(await reasonOf('bin/tool')).toBe('link');
  });

  it('refuses a linked directory that leads outside the install root', async () => {
    mkdirSync(join(s.base, 'outside'));
    copyFileSync(NATIVE, join(s.base, 'outside/tool'));
    symlinkSync(join(s.base, 'outside'), join(s.root, 'bin'));
    expect(await reasonOf('bin/tool')).toBe('link');
  });

  it('refuses a missing file, a directory, a FIFO and a file others may write', async () => {
    expect(await reasonOf('bin/none')).toBe('missing');
    mkdirSync(join(s.root, 'dir'));
    expect(await reasonOf('dir')).toBe('not_regular_file');
    execFileSync('mkfifo', [join(s.root, 'fifo')]);
    expect(await reasonOf('fifo')).toBe('not_regular_file');
    s.write('bin/tool', readFileSync(NATIVE));
    chmodSync(join(s.root, 'bin/tool'), 0o777);
    expect(await reasonOf('bin/tool')).toBe('unsafe_permissions');
  });

  it('refuses a file that is neither a native program nor a #! script (execvp would hand it to /bin/sh)', async () => {
    s.write('bin/tool', 'echo hi\n');
    expect(await reasonOf('bin/tool')).toBe('unsupported_format');
  });
});

describe('bindExecutable: shells and interpreters', () => {
  it.each(['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish', 'csh', 'tcsh', 'cmd.exe', 'powershell.exe', 'pwsh', 'Bash'])('refuses a shell by basename: %s', async (name) => {
    s.write(`bin/${name}`, readFileSync(NATIVE));
    expect(await reasonOf(`bin/${name}`)).toBe('shell_interpreter');
  });

  it.each(['#!/bin/sh', '#!/bin/bash -e', '#!/usr/bin/env bash', '#!/usr/bin/env -S zsh -f', '#!/usr/bin/pwsh'])('refuses a shell as #! interpreter: %s', async (line) => {
    s.write('bin/run', `${line}\necho hi\n`);
    expect(await reasonOf('bin/run')).toBe('shell_interpreter');
  });

  it('refuses an interpreter name that resolves to a shell through a link', async () => {
    mkdirSync(join(s.base, 'path'));
    symlinkSync('/bin/bash', join(s.base, 'path/python3'));
    s.write('bin/run', '#!/usr/bin/env python3\nprint(1)\n');
    expect(await reasonOf('bin/run', join(s.base, 'path'))).toBe('shell_interpreter');
  });

  it('refuses an interpreter that is itself a shell wrapper script (a pyenv-style shim)', async () => {
    mkdirSync(join(s.base, 'shims'));
    writeFileSync(join(s.base, 'shims/python3'), `#!/usr/bin/env bash\nexec ${PYTHON3_REAL} "$@"\n`, { mode: 0o755 });
    s.write('bin/run', '#!/usr/bin/env python3\nprint(1)\n');
    expect(await reasonOf('bin/run', join(s.base, 'shims'))).toBe('shell_interpreter');
  });

  it('refuses an interpreter that is a non-shell script', async () => {
    mkdirSync(join(s.base, 'shims'));
    writeFileSync(join(s.base, 'shims/tool'), '#!/usr/bin/python3\nprint(1)\n', { mode: 0o755 });
    s.write('bin/run', `#!${join(s.base, 'shims/tool')}\n`);
    expect(await reasonOf('bin/run')).toBe('interpreter_not_native');
  });

  it('refuses a native interpreter named by a path the host would not find itself, before it runs it at install', async () => {
    // A program the package placed beside itself (in the directory it is installed from, reached as
    // #!/proc/self/cwd/...): as `node` the host asked it for its --version outside every sandbox.
    mkdirSync(join(s.base, 'tools'));
    copyFileSync(NATIVE, join(s.base, 'tools/node'));
    chmodSync(join(s.base, 'tools/node'), 0o755);
    s.write('bin/run', `#!${join(s.base, 'tools/node')}\n`);
    const refused = await bindExecutable({ installRoot: s.root, executable: 'bin/run', searchPath: '/usr/bin' });
    expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'interpreter_location', resolved: join(s.base, 'tools/node') } });
    expect(refused._unsafeUnwrapErr().hint).toMatch(/#!\/usr\/bin\/env node/);
    // The same file is the host's own choice when its search path gives it for that name.
    const searched = (await bindExecutable({ installRoot: s.root, executable: 'bin/run', searchPath: join(s.base, 'tools') }))._unsafeUnwrap();
    expect(searched.interpreter?.path).toBe(join(s.base, 'tools/node'));
    // Interpreters of the system directories and the host's own Node stay accepted by path.
    s.write('bin/system', '#!/usr/bin/python3\n');
    expect((await bindExecutable({ installRoot: s.root, executable: 'bin/system', searchPath: '/nonexistent' }))._unsafeUnwrap().interpreter?.path).toBe(realpathSync('/usr/bin/python3'));
    s.write('bin/host', `#!${process.execPath}\n`);
    expect((await bindExecutable({ installRoot: s.root, executable: 'bin/host', searchPath: '/nonexistent' })).isOk()).toBe(true);
  });

  it('refuses an interpreter that is not on the install-time PATH', async () => {
    s.write('bin/run', '#!/usr/bin/env no-such-interpreter\n');
    expect(await reasonOf('bin/run')).toBe('interpreter_not_found');
  });

  it.each(['#!/usr/bin/env node --no-warnings', '#!/usr/bin/env -i node', '#!/usr/bin/env FOO=1 node', '#!node', '#!/usr/bin/env'])(
    'refuses an unsupported #! line: %s',
    async (line) => {
      s.write('bin/run', `${line}\n`);
      expect(await reasonOf('bin/run')).toBe('unsupported_shebang');
    },
  );

  it('resolves #!/usr/bin/env once, at install, to a pinned real path with its SHA-256 and identity', async () => {
    s.write('bin/run', '#!/usr/bin/env -S python3 -u\nprint(1)\n');
    const r = (await bindExecutable({ installRoot: s.root, executable: 'bin/run', args: ['x'], searchPath: `relative/dir:${s.base}:${PYTHON3_DIR}` }))._unsafeUnwrap();
    expect(r.interpreter?.path).toBe(PYTHON3_REAL);
    expect(r.interpreter?.sha256).toBe(sha(PYTHON3_REAL));
    expect(r.interpreter?.args).toEqual(['-u']);
    expect(r.interpreter?.kind).toBe('python');
    expect(r.interpreter?.identity.size).toBe(String(readFileSync(PYTHON3_REAL).length));
    expect(r.argv_normalized).toEqual([PYTHON3_REAL, '-u', `${s.root}/bin/run`, 'x']);
  });

  it('marks Node interpreters so they get the verified-source loader', async () => {
    s.write('bin/run', '#!/usr/bin/env node\n');
    const r = (await bindExecutable({ installRoot: s.root, executable: 'bin/run', searchPath: '/usr/bin' }))._unsafeUnwrap();
    expect(r.interpreter?.kind).toBe('node');
    expect(r.interpreter?.args).toEqual([]);
    expect(r.interpreter?.node_main).toBe(nodeMainLoadingFor(execFileSync(r.interpreter!.path, ['--version'], { encoding: 'utf8' })));
  });

  it('marks other interpreters generic', async () => {
    s.write('bin/run', '#!/usr/bin/perl\n');
    const r = (await bindExecutable({ installRoot: s.root, executable: 'bin/run' }))._unsafeUnwrap();
    expect(r.interpreter?.kind).toBe('generic');
  });

  it('records no Node loading method for other interpreters', async () => {
    s.write('bin/run', '#!/usr/bin/python3\n');
    const r = (await bindExecutable({ installRoot: s.root, executable: 'bin/run' }))._unsafeUnwrap();
    expect(r.interpreter).not.toHaveProperty('node_main');
  });

  it('passes the rest of a direct #! line as one argument, as the kernel does', async () => {
    s.write('bin/run', '#!/usr/bin/python3 -uB\n');
    const r = (await bindExecutable({ installRoot: s.root, executable: 'bin/run' }))._unsafeUnwrap();
    expect(r.interpreter?.args).toEqual(['-uB']);
    s.write('bin/two', '#!/usr/bin/python3 -u -B\n');
    expect(await reasonOf('bin/two')).toBe('interpreter_argument');
  });

  it.each([
    '#!/usr/bin/env -S node ./bin/other.js',
    '#!/usr/bin/env -S node --env-file=.env',
    '#!/usr/bin/env -S node --require ./preload.cjs',
    '#!/usr/bin/env -S node --import ./x.mjs',
    '#!/usr/bin/env -S node -e 1',
    '#!/usr/bin/env -S node --',
    '#!/usr/bin/env -S python3 -m evilmod',
    '#!/usr/bin/env -S python3 -c pass',
    '#!/usr/bin/python3 -i',
    '#!/usr/bin/perl -w',
  ])('refuses #! arguments that could decide what runs instead of the pinned script: %s', async (line) => {
    s.write('bin/run', `${line}\n`);
    expect(await reasonOf('bin/run')).toBe('interpreter_argument');
  });

  it.each(['#!/usr/bin/env -S node --max-old-space-size=64 --enable-source-maps', '#!/usr/bin/env -S python3 -u -Xutf8=1', '#!/usr/bin/python3 -I'])(
    'accepts #! arguments that only tune the interpreter: %s',
    async (line) => {
      s.write('bin/run', `${line}\n`);
      expect((await bindExecutable({ installRoot: s.root, executable: 'bin/run', searchPath: '/usr/bin' })).isOk()).toBe(true);
    },
  );
});
