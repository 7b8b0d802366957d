/**
 * A Python package's install runs no code of the package on the host: a
 * shipped wheel that requires a direct reference (which pip would fetch and
 * build even offline and binary-only) is refused before pip runs, and what
 * pip and the private environment's interpreter run is confined to the
 * install root (a `.pth` line of an installed wheel writes nothing outside).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { pythonPackage, PYTHON_SEARCH_PATH } from '../support/pythonPackages.js';

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);
const pool = new HostPool();
const scratch: string[] = [];
afterEach(async () => {
  await pool.cleanup();
  await Promise.all(scratch.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

// A wheel written entry by entry (with its RECORD), so that its METADATA says exactly what the test needs.
const WHEEL_WRITER = `
import base64, hashlib, json, sys, zipfile
path, name, version, requires, extra, zeros = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5]), json.loads(sys.argv[6])
info = f'{name}-{version}.dist-info'
files = dict(extra)
files.update({k: '\\0' * n for k, n in zeros.items()})
files[f'{info}/METADATA'] = f'Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n' + ''.join(f'Requires-Dist: {r}\\n' for r in requires)
files[f'{info}/WHEEL'] = 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'
digest = lambda v: base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b'=').decode()
files[f'{info}/RECORD'] = ''.join(f'{k},sha256={digest(v)},{len(v)}\\n' for k, v in files.items()) + f'{info}/RECORD,,\\n'
with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
    for k, v in files.items(): z.writestr(k, v)
`;

/** `zeros` names files of that many NUL bytes, which deflate to almost nothing. */
async function writeWheel(dir: string, name: string, requires: readonly string[], files: Record<string, string> = {}, zeros: Record<string, number> = {}): Promise<void> {
  await run('/usr/bin/python3', ['-c', WHEEL_WRITER, join(dir, `${name}-1.0.0-py3-none-any.whl`), name, '1.0.0', JSON.stringify(requires), JSON.stringify(files), JSON.stringify(zeros)]);
}

/** A source tree whose PEP 517 backend leaves `marker` behind when anything builds it. */
async function markingSourceTree(marker: string): Promise<string> {
  const dir = await tempDir('python-sdist-');
  await writeFile(join(dir, 'pyproject.toml'), '[project]\nname = "bdep"\nversion = "1.0"\n\n[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n');
  await writeFile(
    join(dir, 'backend.py'),
    `open(${JSON.stringify(marker)}, "w").write("build backend ran")\ndef get_requires_for_build_wheel(config_settings=None): return []\ndef prepare_metadata_for_build_wheel(d, config_settings=None): raise RuntimeError("stop")\ndef build_wheel(d, config_settings=None, metadata_directory=None): raise RuntimeError("stop")\n`,
  );
  return dir;
}

describe('Python install runs no package code on the host', () => {
  it('refuses a shipped wheel whose requirement is a direct reference, before pip fetches or builds it', async () => {
    const outside = await tempDir('python-marker-');
    const marker = join(outside, 'built');
    const source = await markingSourceTree(marker);
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    scratch.push(pkg);
    // The dependency the project needs, shipped as a wheel that asks for one more requirement by URL.
    await writeWheel(join(pkg, 'wheels'), 'mcp', [`bdep @ file://${source}`], { 'mcp/__init__.py': '' });
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const error = (await host.install(pkg, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({
      code: 'PLUGIN_PYTHON_INSTALL_FAILED',
      details: { reason: 'direct_reference', wheel: 'wheels/mcp-1.0.0-py3-none-any.whl', requirement: `bdep @ file://${source}` },
    });
    expect(existsSync(marker)).toBe(false);
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
  });

  it('confines what the installed wheels run at install: a .pth line writes nothing outside the install root', async () => {
    const outside = await tempDir('python-marker-');
    const marker = join(outside, 'pth-ran');
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    scratch.push(pkg);
    // The project's dependency, shipped with a .pth file: any interpreter of the environment runs its import line at start.
    await writeWheel(join(pkg, 'wheels'), 'mcp', [], {
      'mcp/__init__.py': '',
      'mcp_startup.pth': `import os; open(${JSON.stringify(marker)}, "w").write("ran on the host")\n`,
    });
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const installed = await host.install(pkg, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  it("holds what the installed wheels run at install to the plugins' seccomp program: no keyring of the host's, no user namespace", async () => {
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    scratch.push(pkg);
    // The process keeps the host's session keyring across bubblewrap and setpriv: unfiltered, a .pth line read the
    // host's keys (or added its own) and left them in the install root, where the plugin reads them.
    const probe = [
      'import ctypes, json, os, platform, sys',
      'libc = ctypes.CDLL(None, use_errno=True)',
      "add_key, keyctl, clone_nr = {'x86_64': (248, 250, 56), 'aarch64': (217, 219, 220)}[platform.machine()]",
      'def call(*args):',
      '    r = libc.syscall(*args)',
      "    return {'ok': r >= 0, 'errno': 0 if r >= 0 else ctypes.get_errno()}",
      'out = {}',
      "out['session'] = call(keyctl, 0, ctypes.c_long(-3), 0)",
      "out['add'] = call(add_key, b'user', b'planted-at-install', b'x', 1, ctypes.c_long(-3))",
      'r = libc.unshare(0x10000000)',
      "out['unshare'] = {'ok': r == 0, 'errno': 0 if r == 0 else ctypes.get_errno()}",
      "open(os.path.join(sys.prefix, 'probe.json'), 'w').write(json.dumps(out))",
      '',
    ].join('\n');
    await writeWheel(join(pkg, 'wheels'), 'mcp', [], { 'mcp/__init__.py': '', 'mcp_probe.py': probe, 'mcp_startup.pth': 'import mcp_probe\n' });
    const profile = await pool.profile();
    const host = await pool.open(profile, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const installed = await host.install(pkg, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    const [version] = await readdir(join(profile, 'plugins', 'hello'));
    const report: unknown = JSON.parse(await readFile(join(profile, 'plugins', 'hello', version!, '.mcp-plugin-host:venv', 'probe.json'), 'utf8'));
    expect(report).toEqual({ session: { ok: false, errno: 1 }, add: { ok: false, errno: 1 }, unshare: { ok: false, errno: 1 } });
  });

  it('writes its launcher over whatever the installed wheels left at its name: a FIFO there does not stall the install', async () => {
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    scratch.push(pkg);
    // Any interpreter of the environment runs this at start; the install asks one for its site-packages after pip.
    const fifo = `import os, sys\npath = os.path.join(sys.prefix, "bin", "hello-mcp")\ntry:\n    if os.path.lexists(path): os.unlink(path)\n    os.mkfifo(path)\nexcept OSError: pass\n`;
    await writeWheel(join(pkg, 'wheels'), 'mcp', [], { 'mcp/__init__.py': '', 'mcp_fifo.py': fifo, 'mcp_startup.pth': 'import mcp_fifo\n' });
    const profile = await pool.profile();
    const host = await pool.open(profile, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const installed = await host.install(pkg, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    const [version] = await readdir(join(profile, 'plugins', 'hello'));
    const launcher = join(profile, 'plugins', 'hello', version!, '.mcp-plugin-host:venv', 'bin', 'hello-mcp');
    expect((await lstat(launcher)).isFile()).toBe(true);
    expect(await readFile(launcher, 'utf8')).toMatch(/^#!.* -IS\n/);
  });

  it('holds what pip writes to the package limits: a small wheel that unpacks to more than maxExtractedBytes is stopped', async () => {
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    scratch.push(pkg);
    // 64 MiB of zeros, deflated to about 64 KiB in the wheel.
    await writeWheel(join(pkg, 'wheels'), 'mcp', [], { 'mcp/__init__.py': '' }, { 'mcp/blob.bin': 64 << 20 });
    const profile = await pool.profile();
    const host = await pool.open(profile, { interpreterSearchPath: PYTHON_SEARCH_PATH, packageLimits: { maxExtractedBytes: 8 << 20 } });
    const error = (await host.install(pkg, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_ARCHIVE_INVALID', details: { reason: 'limit', limit: 'maxExtractedBytes', max: 8 << 20 } });
    expect(existsSync(join(profile, 'plugins', 'hello'))).toBe(false);
  });

  it('gives what the installed wheels run at install a /tmp no larger than maxArchiveBytes', async () => {
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    scratch.push(pkg);
    // /tmp is memory: 64 MiB written there by a .pth line is memory the host lends until the command ends.
    const fill = `import os, sys\ntry:\n    with open("/tmp/fill", "wb") as f: f.write(bytes(64 << 20))\n    outcome = "written"\nexcept OSError as error: outcome = error.strerror\nopen(os.path.join(sys.prefix, "tmp-fill"), "w").write(outcome)\n`;
    await writeWheel(join(pkg, 'wheels'), 'mcp', [], { 'mcp/__init__.py': '', 'mcp_fill.py': fill, 'mcp_startup.pth': 'import mcp_fill\n' });
    const profile = await pool.profile();
    const host = await pool.open(profile, { interpreterSearchPath: PYTHON_SEARCH_PATH, packageLimits: { maxArchiveBytes: 8 << 20 } });
    const installed = await host.install(pkg, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    const [version] = await readdir(join(profile, 'plugins', 'hello'));
    expect(await readFile(join(profile, 'plugins', 'hello', version!, '.mcp-plugin-host:venv', 'tmp-fill'), 'utf8')).toBe('No space left on device');
  });

  // The plugin itself runs as a user of its own on a root host, so a root-only file the mask list does not name is
  // closed to it; what the install runs for the package must not read it either, or a .pth line copies it into the
  // install root, which the plugin then reads.
  it.runIf(process.getuid?.() === 0)('runs what the installed wheels run at install as a user that cannot read root-only files (root host)', async () => {
    const secret = join('/etc', `mcp-plugin-host-install-${process.pid}-${Date.now()}.key`);
    await writeFile(secret, 'root-only key material\n', { mode: 0o600 });
    try {
      const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
      scratch.push(pkg);
      const copy = `try: data = open(${JSON.stringify(secret)}).read()\nexcept OSError as error: data = type(error).__name__\nimport os, sys\nopen(os.path.join(sys.prefix, "copied-secret"), "w").write(data)\n`;
      await writeWheel(join(pkg, 'wheels'), 'mcp', [], {
        'mcp/__init__.py': '',
        'mcp_copy.py': copy,
        'mcp_startup.pth': 'import mcp_copy\n',
      });
      const profile = await pool.profile();
      const host = await pool.open(profile, { interpreterSearchPath: PYTHON_SEARCH_PATH });
      const installed = await host.install(pkg, { canary: false });
      expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
      const [version] = await readdir(join(profile, 'plugins', 'hello'));
      // The environment is the one folder the .pth line can write (pip and it run at install as the plugin's user).
      expect(await readFile(join(profile, 'plugins', 'hello', version!, '.mcp-plugin-host:venv', 'copied-secret'), 'utf8')).toBe('PermissionError');
    } finally {
      await rm(secret, { force: true });
    }
  });
});
