import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { patchZipEntries, zipOf, type ZipMember } from './craftArchives.js';
import { expectRefused, expectStaged, workspace, type Workspace } from './workspace.js';

const MANIFEST = '{"name":"net-utils","version":"1.1.0"}';
const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

let ws: Workspace;
beforeEach(async () => {
  ws = await workspace();
});
afterEach(async () => {
  await ws.dispose();
});

// The bomb tests keep the limits they were written for: the mechanism is what they check, not the default sizes.
const BOMB_LIMITS = { maxArchiveBytes: 32 * 1024 * 1024, maxExtractedBytes: 32 * 1024 * 1024, maxEntries: 4096 };

const refuse = async (members: readonly ZipMember[], details: Record<string, unknown>) => {
  const archive = await ws.file('hostile.zip', await zipOf(members));
  return expectRefused(
    await openPackageSource(archive, { stagingRoot: ws.stagingRoot, limits: BOMB_LIMITS }),
    ws.stagingRoot,
    'PLUGIN_ARCHIVE_INVALID',
    details,
  );
};

describe('zip sources', () => {
  it('stages a yazl archive, strips its single top folder and normalises modes', async () => {
    const archive = await ws.file(
      'net-utils.zip',
      await zipOf([
        { name: 'net-utils/', directory: true },
        { name: 'net-utils/mcp-plugin.json', data: MANIFEST, mode: 0o100600 },
        { name: 'net-utils/dist/index.js', data: 'export function createPlugin() {}\n' },
        { name: 'net-utils/bin/run', data: '#!/bin/true\n', mode: 0o100700 },
        { name: 'net-utils/stored.txt', data: 'stored', compress: false },
      ]),
    );
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.source).toEqual({ kind: 'zip', path: archive });
    expect(staged.manifestFile).toBe('mcp-plugin.json');
    expect(staged.strippedTopDirectory).toBe('net-utils');
    expect((await readdir(staged.root)).sort()).toEqual(['bin', 'dist', 'mcp-plugin.json', 'stored.txt']);
    expect(await readFile(join(staged.root, 'mcp-plugin.json'), 'utf8')).toBe(MANIFEST);
    expect(await readFile(join(staged.root, 'stored.txt'), 'utf8')).toBe('stored');
    expect(await mode(staged.root)).toBe(0o755);
    expect(await mode(join(staged.root, 'dist'))).toBe(0o755);
    expect(await mode(join(staged.root, 'mcp-plugin.json'))).toBe(0o644);
    expect(await mode(join(staged.root, 'dist', 'index.js'))).toBe(0o644);
    expect(await mode(join(staged.root, 'bin', 'run'))).toBe(0o755);
    await staged.discard();
    expect(await readdir(ws.stagingRoot)).toEqual([]);
  });

  it('keeps two top-level entries as they are', async () => {
    const archive = await ws.file('p.zip', await zipOf([{ name: 'manifest.json', data: '{}' }, { name: 'README', data: 'hi' }]));
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.strippedTopDirectory).toBeUndefined();
    expect((await readdir(staged.root)).sort()).toEqual(['README', 'manifest.json']);
    await staged.discard();
  });

  it('stages an empty-looking zip only if it has a manifest', async () => {
    const archive = await ws.file('empty.zip', await zipOf([]));
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_MANIFEST_NOT_FOUND');
  });

  it('refuses zip-slip names', async () => {
    await refuse([{ name: 'manifest.json', data: '{}' }, { name: '../evil.txt', data: 'x' }], { reason: 'traversal', entry: '../evil.txt' });
    await refuse([{ name: 'a/../../evil.txt', data: 'x' }], { reason: 'traversal', entry: 'a/../../evil.txt' });
  });

  it('refuses absolute and drive-letter names', async () => {
    await refuse([{ name: '/etc/passwd', data: 'x' }], { reason: 'absolute_name', entry: '/etc/passwd' });
    await refuse([{ name: 'C:/evil.txt', data: 'x' }], { reason: 'absolute_name', entry: 'C:/evil.txt' });
  });

  it('refuses backslashes instead of reading them as separators', async () => {
    await refuse([{ name: '..\\evil.txt', data: 'x' }], { reason: 'backslash', entry: '..\\evil.txt' });
  });

  it('refuses Windows drive, stream and device names with the same check as tar', async () => {
    const file = (name: string) => [{ name: 'manifest.json', data: '{}' }, { name, data: 'x' }];
    await refuse(file('a/C:x'), { reason: 'colon', entry: 'a/C:x' });
    await refuse(file('C:foo'), { reason: 'absolute_name', entry: 'C:foo' });
    await refuse(file('data/notes.txt:hidden'), { reason: 'colon', entry: 'data/notes.txt:hidden' });
    await refuse(file('a\\C:x'), { reason: 'backslash', entry: 'a\\C:x' });
    await refuse(file('x\u001b[2J'), { reason: 'control_character', entry: 'x\u001b[2J' });
    await refuse(file('AUX.json'), { reason: 'reserved_name', entry: 'AUX.json' });
    await refuse(file('bin/prn'), { reason: 'reserved_name', entry: 'bin/prn' });
    const refused = await refuse([{ name: 'manifest.json', data: '{}' }, { name: 'conout$/', directory: true }], { reason: 'reserved_name', entry: 'conout$/' });
    expect(refused.message).toBe(`zip entry 'conout$/': entry name segment "conout$" is a Windows device name`);
  });

  it('leaves out symbolic links that stay inside the package', async () => {
    const archive = await ws.file(
      'bin-links.zip',
      await zipOf([
        { name: 'manifest.json', data: '{}' },
        { name: 'node_modules/tool/cli.js', data: 'console.log(1)\n' },
        { name: 'node_modules/.bin/tool', data: '../tool/cli.js', mode: 0o120777 },
      ]),
    );
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.droppedLinks).toEqual(['node_modules/.bin/tool']);
    expect(await readdir(join(staged.root, 'node_modules'))).toEqual(['tool']);
    await staged.discard();
  });

  it('refuses symbolic links out of the package, devices and FIFOs marked in the external attributes', async () => {
    await refuse([{ name: 'manifest.json', data: '{}' }, { name: 'link', data: '/etc/passwd', mode: 0o120777 }], {
      reason: 'symlink',
      entry: 'link',
      target: '/etc/passwd',
    });
    await refuse([{ name: 'manifest.json', data: '{}' }, { name: 'a/link', data: '../../etc', mode: 0o120777 }], {
      reason: 'symlink',
      entry: 'a/link',
    });
    await refuse([{ name: 'tty', data: '', mode: 0o020644 }], { reason: 'device', entry: 'tty' });
    await refuse([{ name: 'pipe', data: '', mode: 0o010644 }], { reason: 'fifo', entry: 'pipe' });
  });

  it('refuses duplicate names', async () => {
    await refuse([{ name: 'manifest.json', data: '{}' }, { name: 'manifest.json', data: '{"evil":true}' }], {
      reason: 'duplicate',
      entry: 'manifest.json',
    });
  });

  it('refuses a highly compressible large entry', async () => {
    const bomb = await zipOf([{ name: 'manifest.json', data: '{}' }, { name: 'zeros.bin', data: Buffer.alloc(40 * 1024 * 1024) }]);
    expect(bomb.length).toBeLessThan(256 * 1024);
    const archive = await ws.file('bomb.zip', bomb);
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, limits: BOMB_LIMITS }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'limit',
      limit: 'maxExtractedBytes',
      entry: 'zeros.bin',
    });
  });

  it('refuses an entry whose header understates its size', async () => {
    const honest = await zipOf([{ name: 'manifest.json', data: '{}' }, { name: 'liar.bin', data: Buffer.alloc(4 * 1024 * 1024) }]);
    const lying = Buffer.from(honest);
    // Rewrite the uncompressed size of liar.bin, in its local header and central directory record, to 16 bytes.
    const size = Buffer.alloc(4);
    size.writeUInt32LE(4 * 1024 * 1024);
    for (let at = lying.indexOf(size); at !== -1; at = lying.indexOf(size, at + 4)) lying.writeUInt32LE(16, at);
    const archive = await ws.file('liar.zip', lying);
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'malformed',
      entry: 'liar.bin',
    });
  });

  it('refuses more than 4,096 entries before extracting any', async () => {
    const members = Array.from({ length: 4097 }, (_, i) => ({ name: `f${i}`, data: '' }));
    const error = await refuse(members, { reason: 'limit', limit: 'maxEntries', max: 4096 });
    expect(error.details.entry).toBeUndefined();
  });

  it('refuses encrypted entries and compression methods other than stored and deflate', async () => {
    const plain = await zipOf([{ name: 'manifest.json', data: '{"name":"x"}' }]);
    const encrypted = await ws.file('enc.zip', patchZipEntries(plain, { flags: 0x1 }));
    await expectRefused(await openPackageSource(encrypted, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'encrypted',
      entry: 'manifest.json',
    });
    const bzip2 = await ws.file('bz.zip', patchZipEntries(plain, { method: 12 }));
    await expectRefused(await openPackageSource(bzip2, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'unsupported_compression',
      entry: 'manifest.json',
    });
  });

  it('refuses a corrupt zip as malformed', async () => {
    const good = await zipOf([{ name: 'manifest.json', data: '{}' }]);
    const archive = await ws.file('corrupt.zip', good.subarray(0, good.length - 30));
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'malformed',
    });
  });
});
