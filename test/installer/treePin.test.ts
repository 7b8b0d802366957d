/**
 * What an install pins besides the main file: every file of the package, in
 * a list inside the install root that the lock row pins by digest. The same
 * package installed again repairs a changed install root and pins the tree
 * of a lock row recorded before tree pins.
 */
import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PACKAGE_TREE_LIST_NAME } from '../../src/binding/packageTree.js';
import { recheckPinnedCode, verifyBindingTree } from '../../src/binding/recheckPinnedCode.js';
import type { LockedPlugin } from '../../src/catalog/catalogTypes.js';
import { digestOf } from './craftArchives.js';
import { installed, testProfile, tgzOfDirectory, unwrap, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
afterEach(async () => {
  await p.dispose();
});

const FILES = ['README.md', 'bin/greeter.mjs', 'lib/greeting.mjs', 'manifest.json'];
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

async function expectTreePinned(lock: LockedPlugin): Promise<void> {
  const root = lock.binding.install_root;
  const list = await readFile(join(root, PACKAGE_TREE_LIST_NAME));
  let bytes = 0;
  for (const file of FILES) {
    const content = await readFile(join(root, file));
    const mode = ((await stat(join(root, file))).mode & 0o7777).toString(8);
    bytes += content.length;
    expect(list.toString('utf8').split('\n')).toContainEqual(expect.stringMatching(new RegExp(`^f ${mode} ${content.length} ${sha256(content)} \\d+ \\d+ \\d+ \\d+ ${file.replace('.', '\\.')}$`)));
  }
  expect(lock.binding.tree).toEqual({ sha256: sha256(list), files: FILES.length, bytes });
}

describe('the package tree pin', () => {
  it('records every file of a directory install and of an archive install, with the lock row pinning the list by digest', async () => {
    p = await testProfile('standard');
    const pkg = await p.copyFixture('install-node', 'greeter');
    const fromDirectory = unwrap(await p.installerWith({ profileKind: 'dev' }).install(pkg));
    await expectTreePinned(fromDirectory.lock);
    await writeFile(join(pkg, 'README.md'), 'another README\n');
    const archive = join(p.dir, 'greeter.tgz');
    const bytes = await tgzOfDirectory(pkg, archive);
    const fromArchive = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes), replace: true }));
    expect(fromArchive.lock.binding.install_root).not.toBe(fromDirectory.lock.binding.install_root);
    await expectTreePinned(fromArchive.lock);
  });

  it('installs the same archive again over an install root changed since install, instead of calling it unchanged', async () => {
    p = await testProfile('standard');
    const archive = join(p.dir, 'greeter.tgz');
    const bytes = await tgzOfDirectory(await p.copyFixture('install-node', 'greeter'), archive);
    const first = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes) }));
    const sibling = join(first.lock.binding.install_root, 'lib', 'greeting.mjs');
    await writeFile(sibling, 'export const greeting = () => "changed";\n');
    expect((await recheckPinnedCode(first.lock.binding))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_changed', file: 'lib/greeting.mjs' });

    const again = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes) }));
    expect(again.unchanged).toBeUndefined();
    expect(again.lock.binding.install_root).not.toBe(first.lock.binding.install_root);
    expect((await verifyBindingTree(again.lock.binding)).isOk()).toBe(true);
    await expectTreePinned(again.lock);
  });

  it('repairs an install root changed since install from the same directory given again (no digest: compared with the pinned bytes)', async () => {
    p = await testProfile('dev');
    const pkg = await p.copyFixture('install-node', 'greeter');
    const first = unwrap(await p.installer.install(pkg));
    await writeFile(join(first.lock.binding.install_root, 'lib', 'greeting.mjs'), 'export const greeting = () => "changed";\n');
    expect((await recheckPinnedCode(first.lock.binding))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_changed' });

    const again = unwrap(await p.installer.install(pkg));
    expect(again.unchanged).toBeUndefined();
    expect(again.lock.binding.install_root).not.toBe(first.lock.binding.install_root);
    expect((await verifyBindingTree(again.lock.binding)).isOk()).toBe(true);
    // Other bytes of the same version are still refused without replace.
    const other = await p.copyFixture('install-node', 'greeter-other');
    await writeFile(join(other, 'lib', 'greeting.mjs'), 'export const greeting = () => "other";\n');
    expect((await p.installer.install(other))._unsafeUnwrapErr().code).toBe('PLUGIN_ALREADY_INSTALLED');
  });

  it('pins the tree of a lock row recorded before tree pins when the same package is installed again', async () => {
    p = await testProfile('dev');
    const pkg = await p.copyFixture('install-node', 'greeter');
    const first = unwrap(await p.installer.install(pkg));
    const { tree: _dropped, ...bindingWithoutTree } = first.lock.binding;
    unwrap(await p.store.transaction((current) => ({ ...current, plugins: { ...current.plugins, greeter: { ...current.plugins.greeter!, binding: bindingWithoutTree } } })));
    const older = (await installed(p, 'greeter'))!;
    expect(older.lock.binding.tree).toBeUndefined();
    // What such a row pins is still checked: its main file, not its siblings.
    expect((await recheckPinnedCode(older.lock.binding)).isOk()).toBe(true);
    const main = join(older.lock.binding.install_root, 'bin', 'greeter.mjs');
    const original = await readFile(main);
    await writeFile(main, '#!/usr/bin/env node\n');
    expect((await recheckPinnedCode(older.lock.binding))._unsafeUnwrapErr().details).toMatchObject({ reason: 'digest_mismatch' });
    await writeFile(main, original);

    const again = unwrap(await p.installer.install(pkg));
    expect(again.unchanged).toBeUndefined();
    await expectTreePinned(again.lock);
  });
});
