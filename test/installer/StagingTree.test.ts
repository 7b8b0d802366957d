import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateEntryName } from '../../src/installer/entryName.js';
import { DEFAULT_PACKAGE_LIMITS } from '../../src/installer/limits.js';
import { Refusal } from '../../src/installer/refusal.js';
import { setExecutableMode } from '../../src/installer/setExecutableMode.js';
import { StagingTree } from '../../src/installer/StagingTree.js';
import { workspace, type Workspace } from './workspace.js';

let ws: Workspace;
let root: string;
beforeEach(async () => {
  ws = await workspace();
  root = join(ws.dir, 'tree');
  await mkdir(root);
});
afterEach(async () => {
  await ws.dispose();
});

const safe = (name: string) => validateEntryName(name)._unsafeUnwrap();

async function* chunks(count: number, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < count; i++) yield Buffer.alloc(size, 0x61);
}

async function refusalOf(work: Promise<unknown>): Promise<Refusal> {
  const outcome = await work.then(
    () => undefined,
    (cause: unknown) => cause,
  );
  expect(outcome).toBeInstanceOf(Refusal);
  return outcome as Refusal;
}

describe('StagingTree', () => {
  it('counts the bytes that arrive, not the size the header declared', async () => {
    const tree = new StagingTree(root, { ...DEFAULT_PACKAGE_LIMITS, maxExtractedBytes: 10_000 });
    const refusal = await refusalOf(tree.addFile('liar', safe('liar'), false, 10, chunks(5, 4096)));
    expect(refusal.error.code).toBe('PLUGIN_ARCHIVE_INVALID');
    expect(refusal.error.details).toMatchObject({ reason: 'limit', limit: 'maxExtractedBytes', max: 10_000, entry: 'liar' });
  });

  it('refuses early when the declared size alone is over the limit', async () => {
    const tree = new StagingTree(root, { ...DEFAULT_PACKAGE_LIMITS, maxExtractedBytes: 100 });
    const refusal = await refusalOf(tree.addFile('big', safe('big'), false, 101, chunks(0, 0)));
    expect(refusal.error.details).toMatchObject({ limit: 'maxExtractedBytes', entry: 'big' });
  });

  it('creates missing parents as 0755 directories and files with exact modes despite the umask', async () => {
    const previous = process.umask(0o077);
    try {
      const tree = new StagingTree(root, DEFAULT_PACKAGE_LIMITS);
      await tree.addFile('a/b/run', safe('a/b/run'), true, 3, chunks(1, 3));
      await tree.addFile('a/data', safe('a/data'), false, 3, chunks(1, 3));
      expect((await stat(join(root, 'a'))).mode & 0o777).toBe(0o755);
      expect((await stat(join(root, 'a', 'b'))).mode & 0o777).toBe(0o755);
      expect((await stat(join(root, 'a', 'b', 'run'))).mode & 0o777).toBe(0o755);
      expect((await stat(join(root, 'a', 'data'))).mode & 0o777).toBe(0o644);
      expect(await readFile(join(root, 'a', 'data'), 'utf8')).toBe('aaa');
      expect(tree.byteCount).toBe(6);
    } finally {
      process.umask(previous);
    }
  });

  it('refuses a directory entry where a file already is, and a duplicate directory entry', async () => {
    const tree = new StagingTree(root, DEFAULT_PACKAGE_LIMITS);
    await tree.addFile('x', safe('x'), false, 0, chunks(0, 0));
    expect((await refusalOf(tree.addDirectory('x/', safe('x/')))).error.details).toMatchObject({ reason: 'duplicate' });
    await tree.addDirectory('d/', safe('d/'));
    expect((await refusalOf(tree.addDirectory('./d/', safe('./d/')))).error.details).toMatchObject({ reason: 'duplicate' });
    expect((await refusalOf(tree.addFile('d/', safe('d/'), false, 0, chunks(0, 0)))).error.details).toMatchObject({ reason: 'duplicate' });
  });

  it('never writes through a link planted in the tree', async () => {
    const outside = join(ws.dir, 'outside');
    await writeFile(outside, 'untouched');
    await symlink(outside, join(root, 'planted'));
    const tree = new StagingTree(root, DEFAULT_PACKAGE_LIMITS);
    const refusal = await refusalOf(tree.addFile('planted', safe('planted'), false, 4, chunks(1, 4)));
    expect(refusal.error.details).toMatchObject({ reason: 'duplicate', entry: 'planted' });
    expect(await readFile(outside, 'utf8')).toBe('untouched');
  });
});

describe('setExecutableMode', () => {
  it('makes a staged file 0755', async () => {
    await mkdir(join(root, 'bin'));
    await writeFile(join(root, 'bin', 'server'), '', { mode: 0o644 });
    expect((await setExecutableMode(root, 'bin/server')).isOk()).toBe(true);
    expect((await stat(join(root, 'bin', 'server'))).mode & 0o777).toBe(0o755);
  });

  it.each([
    ['../outside', 'traversal'],
    ['/etc/passwd', 'absolute_name'],
    ['missing', 'missing'],
    ['bin/', 'not_a_file'],
    ['link', 'symlink'],
    ['viaLink/server', 'symlink'],
    ['dir', 'not_a_file'],
  ])('refuses %j (%s) with PLUGIN_EXECUTABLE_UNTRUSTED', async (path, reason) => {
    await mkdir(join(root, 'dir'));
    await writeFile(join(ws.dir, 'outside'), '');
    await mkdir(join(ws.dir, 'elsewhere'));
    await writeFile(join(ws.dir, 'elsewhere', 'server'), '');
    await symlink(join(ws.dir, 'outside'), join(root, 'link'));
    await symlink(join(ws.dir, 'elsewhere'), join(root, 'viaLink'));
    const result = await setExecutableMode(root, path);
    expect(result.isErr() && result.error.code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(result.isErr() && result.error.details).toMatchObject({ reason });
    expect((await stat(join(ws.dir, 'outside'))).mode & 0o111).toBe(0);
  });
});
