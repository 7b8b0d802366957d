import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as tar from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_PACKAGE_LIMITS } from '../../src/installer/limits.js';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { paxHeader, tgzOf, type TarMember } from './craftArchives.js';
import { expectRefused, expectStaged, workspace, type Workspace } from './workspace.js';

const MANIFEST = JSON.stringify({ manifest_schema_version: 1, plugin: { id: 'hello' } });
const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

let ws: Workspace;
beforeEach(async () => {
  ws = await workspace();
});
afterEach(async () => {
  await ws.dispose();
});

async function packWithTar(): Promise<string> {
  const src = join(ws.dir, 'src');
  await mkdir(join(src, 'package', 'bin'), { recursive: true });
  await mkdir(join(src, 'package', 'schemas'), { recursive: true });
  await writeFile(join(src, 'package', 'manifest.json'), MANIFEST);
  await writeFile(join(src, 'package', 'bin', 'server'), '#!/usr/bin/env node\n');
  await chmod(join(src, 'package', 'bin', 'server'), 0o700);
  await writeFile(join(src, 'package', 'schemas', 'hello.json'), '{}');
  await chmod(join(src, 'package', 'schemas', 'hello.json'), 0o600);
  const archive = join(ws.dir, 'hello-1.0.0.tgz');
  await tar.c({ gzip: true, cwd: src, file: archive }, ['package']);
  return archive;
}

// The bomb tests keep the limits they were written for: the mechanism is what they check, not the default sizes.
const BOMB_LIMITS = { maxArchiveBytes: 32 * 1024 * 1024, maxExtractedBytes: 32 * 1024 * 1024, maxEntries: 4096 };

const refuse = async (members: readonly TarMember[], details: Record<string, unknown>, trailing = 0) => {
  const archive = await ws.file('hostile.tgz', tgzOf(members, trailing));
  return expectRefused(
    await openPackageSource(archive, { stagingRoot: ws.stagingRoot, limits: BOMB_LIMITS }),
    ws.stagingRoot,
    'PLUGIN_ARCHIVE_INVALID',
    details,
  );
};

describe('tgz sources', () => {
  it('stages a tar.c archive, strips its single top folder and normalises modes', async () => {
    const archive = await packWithTar();
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.source).toEqual({ kind: 'tgz', path: archive });
    expect(staged.manifestFile).toBe('manifest.json');
    expect(staged.strippedTopDirectory).toBe('package');
    expect(staged.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect((await readdir(staged.root)).sort()).toEqual(['bin', 'manifest.json', 'schemas']);
    expect(await readFile(join(staged.root, 'manifest.json'), 'utf8')).toBe(MANIFEST);
    expect(await mode(staged.root)).toBe(0o755);
    expect(await mode(join(staged.root, 'bin'))).toBe(0o755);
    expect(await mode(join(staged.root, 'bin', 'server'))).toBe(0o755);
    expect(await mode(join(staged.root, 'schemas', 'hello.json'))).toBe(0o644);
    expect(await mode(join(staged.root, 'manifest.json'))).toBe(0o644);
    expect(staged.stats.entries).toBe(6);
    await staged.discard();
    expect(await readdir(ws.stagingRoot)).toEqual([]);
  });

  it('recognises the format by its bytes, whatever the extension', async () => {
    const archive = await ws.file('plugin.bin', tgzOf([{ path: 'plugin.toml', data: 'manifest_schema_version = 1\n' }]));
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.source.kind).toBe('tgz');
    expect(staged.manifestFile).toBe('plugin.toml');
    expect(staged.strippedTopDirectory).toBeUndefined();
    await staged.discard();
  });

  it('does not strip a top folder when the manifest is already at the root', async () => {
    const archive = await ws.file('p.tgz', tgzOf([{ path: 'mcp-plugin.json', data: '{}' }, { path: 'dist/', type: 'Directory' }, { path: 'dist/index.js', data: '' }]));
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.manifestFile).toBe('mcp-plugin.json');
    expect((await readdir(staged.root)).sort()).toEqual(['dist', 'mcp-plugin.json']);
    await staged.discard();
  });

  it('accepts ./-prefixed names as tar writes them for "."', async () => {
    const archive = await ws.file('p.tgz', tgzOf([{ path: './', type: 'Directory' }, { path: './manifest.json', data: MANIFEST }]));
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(await readdir(staged.root)).toEqual(['manifest.json']);
    await staged.discard();
  });

  it('stages two packages at once into separate private directories', async () => {
    const archive = await ws.file('p.tgz', tgzOf([{ path: 'manifest.json', data: MANIFEST }]));
    const [a, b] = await Promise.all([0, 1].map(async () => expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }))));
    expect(a?.root).not.toBe(b?.root);
    expect(await readdir(ws.stagingRoot)).toHaveLength(2);
    expect((await stat(join(ws.stagingRoot, (await readdir(ws.stagingRoot))[0] ?? ''))).mode & 0o777).toBe(0o700);
    await Promise.all([a?.discard(), b?.discard()]);
    expect(await readdir(ws.stagingRoot)).toEqual([]);
  });

  it('refuses a package with no manifest at the root, or two levels down', async () => {
    const archive = await ws.file('p.tgz', tgzOf([{ path: 'a/b/manifest.json', data: MANIFEST }]));
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_MANIFEST_NOT_FOUND', {
      top_level: ['a'],
    });
  });

  it('refuses zip-slip names', async () => {
    await refuse([{ path: 'manifest.json', data: MANIFEST }, { path: '../evil', data: 'x' }], { reason: 'traversal', entry: '../evil' });
    await refuse([{ path: 'a/../../evil', data: 'x' }], { reason: 'traversal', entry: 'a/../../evil' });
  });

  it('refuses absolute names', async () => {
    await refuse([{ path: '/etc/evil', data: 'x' }], { reason: 'absolute_name', entry: '/etc/evil' });
  });

  it('refuses backslashes in names', async () => {
    await refuse([{ path: '..\\evil', data: 'x' }], { reason: 'backslash' });
  });

  it('refuses names that are harmless here but hazardous on Windows or macOS, with the one name check', async () => {
    const file = (path: string) => [{ path: 'manifest.json', data: MANIFEST }, { path, data: 'x' }];
    await refuse(file('a/C:x'), { reason: 'colon', entry: 'a/C:x' });
    await refuse(file('C:foo'), { reason: 'absolute_name', entry: 'C:foo' });
    await refuse(file('bin/server:secret'), { reason: 'colon', entry: 'bin/server:secret' });
    await refuse(file('a\\b'), { reason: 'backslash', entry: 'a\\b' });
    await refuse(file('a/b\u0007'), { reason: 'control_character', entry: 'a/b\u0007' });
    await refuse(file('lib/CON'), { reason: 'reserved_name', entry: 'lib/CON' });
    await refuse(file('lib/nul.txt'), { reason: 'reserved_name', entry: 'lib/nul.txt' });
    await refuse(file('Com1.js'), { reason: 'reserved_name', entry: 'Com1.js' });
    const refused = await refuse([{ path: 'manifest.json', data: MANIFEST }, { path: 'lpt9/', type: 'Directory' }], { reason: 'reserved_name', entry: 'lpt9/' });
    expect(refused.message).toBe(`tar entry 'lpt9/': entry name segment "lpt9" is a Windows device name`);
  });

  it('still stages names that only resemble device names or drive letters', async () => {
    const archive = await ws.file(
      'p.tgz',
      tgzOf([
        { path: 'manifest.json', data: MANIFEST },
        { path: 'lib/console.js', data: 'x' },
        { path: 'COM10.txt', data: 'x' },
        { path: 'C-drive', data: 'x' },
      ]),
    );
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect((await readdir(staged.root)).sort()).toEqual(['C-drive', 'COM10.txt', 'lib', 'manifest.json']);
    await staged.discard();
  });

  it('leaves out symbolic links that stay inside the package, as npm lays out node_modules/.bin', async () => {
    const archive = await ws.file(
      'bin-links.tgz',
      tgzOf([
        { path: 'package/manifest.json', data: MANIFEST },
        { path: 'package/node_modules/tool/cli.js', data: 'console.log(1)\n' },
        { path: 'package/node_modules/.bin/tool', type: 'SymbolicLink', linkpath: '../tool/cli.js' },
        { path: 'package/self', type: 'SymbolicLink', linkpath: '.' },
      ]),
    );
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.droppedLinks).toEqual(['package/node_modules/.bin/tool', 'package/self']);
    expect(await readdir(join(staged.root, 'node_modules'))).toEqual(['tool']);
    expect((await readdir(staged.root)).sort()).toEqual(['manifest.json', 'node_modules']);
    await staged.discard();
  });

  it('refuses a link whose target leaves the package, and an entry written through a dropped link', async () => {
    for (const linkpath of ['../../../outside', '../tool/../../../x', 'C:/x']) {
      await refuse([{ path: 'manifest.json', data: MANIFEST }, { path: 'node_modules/.bin/x', type: 'SymbolicLink', linkpath }], {
        reason: 'symlink',
        entry: 'node_modules/.bin/x',
        target: linkpath,
      });
    }
    await refuse(
      [
        { path: 'manifest.json', data: MANIFEST },
        { path: 'lib', type: 'SymbolicLink', linkpath: 'dist' },
        { path: 'lib/evil.js', data: 'x' },
      ],
      { reason: 'conflict', entry: 'lib/evil.js' },
    );
  });

  it('refuses symbolic links out of the package, hard links, devices and FIFOs', async () => {
    await refuse([{ path: 'manifest.json', data: MANIFEST }, { path: 'link', type: 'SymbolicLink', linkpath: '/etc/passwd' }], {
      reason: 'symlink',
      entry: 'link',
      target: '/etc/passwd',
    });
    await refuse([{ path: 'manifest.json', data: MANIFEST }, { path: 'hard', type: 'Link', linkpath: 'manifest.json' }], {
      reason: 'hardlink',
      entry: 'hard',
    });
    await refuse([{ path: 'tty', type: 'CharacterDevice' }], { reason: 'device', entry: 'tty' });
    await refuse([{ path: 'disk', type: 'BlockDevice' }], { reason: 'device', entry: 'disk' });
    await refuse([{ path: 'pipe', type: 'FIFO' }], { reason: 'fifo', entry: 'pipe' });
  });

  it('refuses tar entry types that are neither file nor directory', async () => {
    await refuse([{ path: 'dump', type: 'GNUDumpDir' }], { reason: 'unsupported_type', entry: 'dump', type: 'GNUDumpDir' });
    await refuse([{ path: 'manifest.json', data: MANIFEST }, { path: 'sparse', type: 'SparseFile', data: 'abc' }], {
      reason: 'unsupported_type',
      entry: 'sparse',
    });
  });

  it('refuses duplicate entries and a file that collides with a directory', async () => {
    await refuse([{ path: 'manifest.json', data: MANIFEST }, { path: 'manifest.json', data: '{}' }], { reason: 'duplicate', entry: 'manifest.json' });
    await refuse([{ path: 'a', data: 'x' }, { path: 'a/b', data: 'y' }], { reason: 'conflict', entry: 'a/b' });
  });

  it('refuses a bomb: 40 MiB of zeros that compress to a few KiB', async () => {
    const bomb = tgzOf([{ path: 'manifest.json', data: MANIFEST }, { path: 'zeros', data: Buffer.alloc(40 * 1024 * 1024) }]);
    expect(bomb.length).toBeLessThan(256 * 1024);
    const archive = await ws.file('bomb.tgz', bomb);
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, limits: BOMB_LIMITS }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'limit',
      limit: 'maxExtractedBytes',
      max: 32 * 1024 * 1024,
      entry: 'zeros',
    });
  });

  it('counts bytes across entries, not per entry', async () => {
    const members = [0, 1, 2].map((i) => ({ path: `part${i}`, data: Buffer.alloc(400 * 1024, i) }));
    const archive = await ws.file('p.tgz', tgzOf(members));
    await expectRefused(
      await openPackageSource(archive, { stagingRoot: ws.stagingRoot, limits: { maxExtractedBytes: 1024 * 1024 } }),
      ws.stagingRoot,
      'PLUGIN_ARCHIVE_INVALID',
      { limit: 'maxExtractedBytes', max: 1024 * 1024, entry: 'part2' },
    );
  });

  it('counts decompressed bytes the tar headers never mention (zeros after the end marker)', async () => {
    await refuse([{ path: 'manifest.json', data: MANIFEST }], { reason: 'limit', limit: 'maxExtractedBytes' }, 60 * 1024 * 1024);
  });

  it('accepts packages sized like published servers by default: 50,000 entries and 256 MiB', () => {
    expect(DEFAULT_PACKAGE_LIMITS.maxEntries).toBeGreaterThanOrEqual(50_000);
    expect(DEFAULT_PACKAGE_LIMITS.maxExtractedBytes).toBeGreaterThanOrEqual(256 * 1024 * 1024);
    expect(DEFAULT_PACKAGE_LIMITS.maxArchiveBytes).toBeGreaterThanOrEqual(DEFAULT_PACKAGE_LIMITS.maxExtractedBytes);
  });

  it('stages 5,000 entries with the default limits', async () => {
    const members = Array.from({ length: 5000 }, (_, i) => ({ path: `node_modules/dep${i % 50}/f${i}.js`, data: 'module.exports = 1;\n' }));
    const archive = await ws.file('many.tgz', tgzOf([{ path: 'manifest.json', data: MANIFEST }, ...members]));
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    // The archive lists 5,001 members; their names imply 51 directories more (node_modules and dep0 … dep49).
    expect(staged.stats.entries).toBe(5052);
    await staged.discard();
  });

  it('refuses more than 4,096 entries', async () => {
    const members = Array.from({ length: 4097 }, (_, i) => ({ path: `f${i}`, data: '' }));
    await refuse(members, { reason: 'limit', limit: 'maxEntries', max: 4096, entry: 'f4096' });
  });

  it('counts the parent directories an entry name implies against maxEntries, so a few deep names cannot make thousands of directories', async () => {
    const chain = (top: string): string => [top, ...Array.from({ length: 1400 }, () => 'd')].join('/');
    const members = ['c0', 'c1', 'c2'].flatMap((top) => [paxHeader({ path: `${chain(top)}/f.js` }), { path: `${top}.js`, data: '' }]);
    await refuse([{ path: 'manifest.json', data: MANIFEST }, ...members], { reason: 'limit', limit: 'maxEntries', max: 4096, entry: `${chain('c2')}/f.js` });
  });

  it('refuses an archive over maxArchiveBytes before extracting it', async () => {
    const archive = await ws.file('p.tgz', tgzOf([{ path: 'manifest.json', data: MANIFEST }, { path: 'noise', data: randomBytes(8192) }]));
    await expectRefused(
      await openPackageSource(archive, { stagingRoot: ws.stagingRoot, limits: { maxArchiveBytes: 1024 } }),
      ws.stagingRoot,
      'PLUGIN_ARCHIVE_INVALID',
      { reason: 'limit', limit: 'maxArchiveBytes', max: 1024 },
    );
  });

  it('refuses truncated and corrupt archives as malformed', async () => {
    const good = tgzOf([{ path: 'manifest.json', data: MANIFEST }, { path: 'big', data: Buffer.alloc(100_000, 1) }]);
    const truncated = await ws.file('t.tgz', good.subarray(0, Math.floor(good.length / 2)));
    await expectRefused(await openPackageSource(truncated, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'malformed',
    });
    const notTar = await ws.file('n.tgz', (await import('node:zlib')).gzipSync(Buffer.alloc(2000, 0x41)));
    await expectRefused(await openPackageSource(notTar, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'malformed',
    });
  });

  it('refuses files that are neither gzip nor zip, including plain tar', async () => {
    const text = await ws.file('x.tgz', 'not an archive at all');
    await expectRefused(await openPackageSource(text, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'unknown_format',
    });
    const { tarOf } = await import('./craftArchives.js');
    const plain = await ws.file('x.tar', tarOf([{ path: 'manifest.json', data: MANIFEST }]));
    await expectRefused(await openPackageSource(plain, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'unknown_format',
    });
  });
});

describe('chunksUntilAborted', () => {
  it('ends the iteration of an entry that was destroyed before anyone read it, once the extraction aborts', async () => {
    const { Minipass } = await import('minipass');
    const { chunksUntilAborted } = await import('../../src/installer/extractTar.js');
    const entry = new Minipass<Buffer>();
    entry.write(Buffer.from('partial'));
    entry.destroy();
    const abort = new AbortController();
    const reading = (async () => {
      const seen: number[] = [];
      for await (const chunk of chunksUntilAborted(entry as unknown as AsyncIterable<Uint8Array>, abort.signal)) seen.push(chunk.length);
      return seen;
    })();
    abort.abort(new Error('extraction aborted'));
    await expect(reading).rejects.toThrow('extraction aborted');
  });

  it('passes every chunk through and ends with the data when nothing aborts', async () => {
    const { chunksUntilAborted } = await import('../../src/installer/extractTar.js');
    async function* three(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('a');
      yield Buffer.from('bb');
      yield Buffer.from('ccc');
    }
    const seen: number[] = [];
    for await (const chunk of chunksUntilAborted(three(), new AbortController().signal)) seen.push(chunk.length);
    expect(seen).toEqual([1, 2, 3]);
  });
});
