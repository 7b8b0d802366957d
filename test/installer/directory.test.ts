import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { expectRefused, expectStaged, workspace, type Workspace } from './workspace.js';

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

let ws: Workspace;
let pkg: string;
beforeEach(async () => {
  ws = await workspace();
  pkg = join(ws.dir, 'hello-plugin');
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'manifest.json'), '{"manifest_schema_version":1}');
  await writeFile(join(pkg, 'bin', 'hello'), '#!/bin/true\n');
  await chmod(join(pkg, 'bin', 'hello'), 0o750);
  await writeFile(join(pkg, 'secret-ish'), 'x');
  await chmod(join(pkg, 'secret-ish'), 0o600);
});
afterEach(async () => {
  await ws.dispose();
});

describe('local directory sources', () => {
  it('copies the tree with 0755 directories, 0755 executables and 0644 files', async () => {
    const staged = expectStaged(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }));
    expect(staged.source).toEqual({ kind: 'directory', path: pkg });
    expect(staged.digest).toBeUndefined();
    expect(staged.manifestFile).toBe('manifest.json');
    expect((await readdir(staged.root)).sort()).toEqual(['bin', 'manifest.json', 'secret-ish']);
    expect(await readFile(join(staged.root, 'bin', 'hello'), 'utf8')).toBe('#!/bin/true\n');
    expect(await mode(staged.root)).toBe(0o755);
    expect(await mode(join(staged.root, 'bin'))).toBe(0o755);
    expect(await mode(join(staged.root, 'bin', 'hello'))).toBe(0o755);
    expect(await mode(join(staged.root, 'secret-ish'))).toBe(0o644);
    expect(staged.stats).toEqual({ entries: 4, bytes: '{"manifest_schema_version":1}'.length + '#!/bin/true\n'.length + 1 });
    await staged.discard();
  });

  it('never strips a folder of a directory source', async () => {
    const outer = join(ws.dir, 'outer');
    await mkdir(outer);
    execFileSync('cp', ['-r', pkg, join(outer, 'inner')]);
    await expectRefused(await openPackageSource(outer, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_MANIFEST_NOT_FOUND');
  });

  it('refuses a symbolic link that leads outside the package, anywhere in the tree', async () => {
    await symlink('/etc/passwd', join(pkg, 'bin', 'passwd'));
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_EXECUTABLE_UNTRUSTED', {
      reason: 'symlink',
      entry: 'bin/passwd',
      target: '/etc/passwd',
    });
    await rm(join(pkg, 'bin', 'passwd'));
    await symlink('../../hello-plugin', join(pkg, 'bin', 'up'));
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_EXECUTABLE_UNTRUSTED', {
      entry: 'bin/up',
    });
  });

  it('leaves out links that stay inside the package (npm node_modules/.bin), without following them', async () => {
    await mkdir(join(pkg, 'node_modules', 'tool'), { recursive: true });
    await mkdir(join(pkg, 'node_modules', '.bin'));
    await writeFile(join(pkg, 'node_modules', 'tool', 'cli.js'), 'console.log(1)\n');
    await symlink('../tool/cli.js', join(pkg, 'node_modules', '.bin', 'tool'));
    await symlink('bin', join(pkg, 'alias'));
    const staged = expectStaged(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }));
    expect(staged.droppedLinks).toEqual(['alias', 'node_modules/.bin/tool']);
    expect((await readdir(staged.root)).sort()).toEqual(['bin', 'manifest.json', 'node_modules', 'secret-ish']);
    expect(await readdir(join(staged.root, 'node_modules', '.bin'))).toEqual([]);
    expect(await readFile(join(staged.root, 'node_modules', 'tool', 'cli.js'), 'utf8')).toBe('console.log(1)\n');
    await staged.discard();
  });

  it('refuses file and folder names a Windows host could not create faithfully, as archives do', async () => {
    await writeFile(join(pkg, 'bin', 'notes:stream'), 'x');
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'colon',
      entry: 'bin/notes:stream',
    });
    await rm(join(pkg, 'bin', 'notes:stream'));
    await mkdir(join(pkg, 'aux'));
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'reserved_name',
      entry: 'aux',
    });
  });

  it('refuses a FIFO', async () => {
    execFileSync('mkfifo', [join(pkg, 'pipe')]);
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'special_file',
      entry: 'pipe',
    });
  });

  it('applies the entry and byte limits', async () => {
    await expectRefused(
      await openPackageSource(pkg, { stagingRoot: ws.stagingRoot, limits: { maxEntries: 3 } }),
      ws.stagingRoot,
      'PLUGIN_ARCHIVE_INVALID',
      { limit: 'maxEntries', max: 3 },
    );
    await writeFile(join(pkg, 'big'), Buffer.alloc(2048));
    await expectRefused(
      await openPackageSource(pkg, { stagingRoot: ws.stagingRoot, limits: { maxExtractedBytes: 1024 } }),
      ws.stagingRoot,
      'PLUGIN_ARCHIVE_INVALID',
      { limit: 'maxExtractedBytes', entry: 'big' },
    );
  });

  it('refuses a checksum or signature requirement, which only archives can meet', async () => {
    // A standard profile asks for a checksum without naming one: the directory itself is what it refuses.
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot, requireChecksum: true }), ws.stagingRoot, 'PLUGIN_SOURCE_NOT_ALLOWED', {
      reason: 'directory_source',
    });
    await expectRefused(
      await openPackageSource(pkg, { stagingRoot: ws.stagingRoot, checksum: `sha256:${'0'.repeat(64)}` }),
      ws.stagingRoot,
      'PLUGIN_CHECKSUM_MISMATCH',
      { reason: 'directory_source' },
    );
    await expectRefused(
      await openPackageSource(pkg, { stagingRoot: ws.stagingRoot, signature: 'AAAA' }),
      ws.stagingRoot,
      'PLUGIN_SIGNATURE_INVALID',
      { reason: 'directory_source' },
    );
  });

  it('refuses a staging root inside the package being copied', async () => {
    const inside = join(pkg, '.staging');
    const result = await openPackageSource(pkg, { stagingRoot: inside });
    expect(result.isErr() && result.error.code).toBe('HOST_INVALID_OPTIONS');
    expect(await readdir(inside)).toEqual([]);
  });

  it('reports a missing source as an I/O error that is not worth retrying', async () => {
    const result = await openPackageSource(join(ws.dir, 'nope'), { stagingRoot: ws.stagingRoot });
    expect(result.isErr() && result.error.code).toBe('HOST_IO_ERROR');
    expect(result.isErr() && result.error.retryable).toBe(false);
  });
});

describe('manifest names', () => {
  it('are the manifest validator’s, in the same order', async () => {
    const { PACKAGE_MANIFEST_NAMES } = await import('../../src/manifest/ManifestValidator.js');
    const { MANIFEST_FILE_NAMES } = await import('../../src/manifest/ManifestValidator.js');
    expect([...PACKAGE_MANIFEST_NAMES]).toEqual([...MANIFEST_FILE_NAMES]);
  });

  it('refuse a package with several plugin manifests, naming them (review N6): the first used to win silently', async () => {
    await writeFile(join(pkg, 'plugin.toml'), 'manifest_schema_version = 1\n');
    const error = await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_MANIFEST_AMBIGUOUS', { manifest_files: ['manifest.json', 'plugin.toml'] });
    expect(error.message).toContain('manifest.json and plugin.toml');
    expect(error.hint).toMatch(/remove plugin\.toml or manifest\.json/);
    await writeFile(join(pkg, 'mcp-plugin.json'), '{}');
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_MANIFEST_AMBIGUOUS', { manifest_files: ['manifest.json', 'plugin.toml', 'mcp-plugin.json'] });
  });

  it('install an MCP Bundle manifest.json beside one GUM manifest as the bundle, and refuse it beside two', async () => {
    const bundle = { manifest_version: '0.3', name: 'b', version: '1.0.0', description: 'd', author: { name: 'a' }, server: { type: 'binary', entry_point: 'bin/hello' } };
    await writeFile(join(pkg, 'manifest.json'), JSON.stringify(bundle));
    await writeFile(join(pkg, 'plugin.toml'), 'manifest_schema_version = 1\n');
    const staged = expectStaged(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }));
    expect(staged.manifestFile).toBe('manifest.json');
    await staged.discard();
    await writeFile(join(pkg, 'manifest.toml'), 'manifest_schema_version = 1\n');
    await expectRefused(await openPackageSource(pkg, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_MANIFEST_AMBIGUOUS', {
      manifest_files: ['plugin.toml', 'manifest.toml'],
      bundle_manifest: 'manifest.json',
    });
  });
});

// Waits until the copier opens the folder `a` (to list it), then swaps `a` and `b` atomically (renameat2 RENAME_EXCHANGE).
const SWAP_WHEN_LISTED = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
fd = libc.inotify_init()
libc.inotify_add_watch(fd, a, 0x20)
print("watching", flush=True)
os.read(fd, 4096)
libc.renameat2(-100, a, -100, b, 2)
`;

describe('a directory source changed while it is copied', () => {
  it('copies no file from outside the package when a folder of it is swapped for a link to elsewhere', async () => {
    const names = ['config.json', 'index.js'];
    const outside = join(ws.dir, 'outside');
    await mkdir(join(pkg, 'sub'));
    await mkdir(outside);
    for (const name of names) {
      await writeFile(join(pkg, 'sub', name), 'package file');
      await writeFile(join(outside, name), 'OUTSIDE THE PACKAGE');
    }
    // The other side of the swap: a link to the folder outside, kept out of the package itself.
    const swap = join(ws.dir, 'swap');
    await symlink(outside, swap);
    const swapper = spawn('/usr/bin/python3', ['-c', SWAP_WHEN_LISTED, join(pkg, 'sub'), swap], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await once(swapper.stdout, 'data');
      const staged = await openPackageSource(pkg, { stagingRoot: ws.stagingRoot });
      if (staged.isOk()) {
        const copied = await Promise.all(names.map((name) => readFile(join(staged.value.root, 'sub', name), 'utf8')));
        await staged.value.discard();
        expect(copied).toEqual(['package file', 'package file']);
      } else {
        // Refused as a link on the file's path, or, when the swap came between the file's lstat and its open, as a changed entry.
        expect([staged.error.code, staged.error.details['reason'], staged.error.details['entry']]).toSatisfy(
          ([code, reason, entry]: unknown[]) =>
            entry === 'sub/config.json' && ((code === 'PLUGIN_EXECUTABLE_UNTRUSTED' && reason === 'symlink') || (code === 'PLUGIN_ARCHIVE_INVALID' && reason === 'conflict')),
        );
      }
    } finally {
      swapper.kill('SIGKILL');
    }
  });
});
