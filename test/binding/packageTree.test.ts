/**
 * pinPackageTree and verifyPackageTree on real directories: what the list
 * holds, the identity shortcut and when it gives way to a re-hash, a tree
 * whose every identity moved (checked opening files first), and a list that
 * is missing or was edited.
 */
import { appendFile, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forgetPackageTrees, PACKAGE_TREE_LIST_NAME, packageTreesSettled, pinPackageTree, verifyPackageTree } from '../../src/binding/packageTree.js';

const FILES = 40;
const dirs: string[] = [];
afterEach(async () => {
  forgetPackageTrees();
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A package of FILES modules under lib/ (sorted names: m00.js … m39.js) and a main file. */
async function tree(): Promise<string> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'tree-unit-')));
  dirs.push(root);
  await mkdir(join(root, 'lib'));
  await writeFile(join(root, 'main.js'), 'require("./lib/m00.js");\n');
  for (let i = 0; i < FILES; i++) await writeFile(join(root, 'lib', `m${String(i).padStart(2, '0')}.js`), `module.exports = ${i};\n`);
  return root;
}

/** Rewrites every module with its own bytes: every identity moves, no content changes. */
async function moveEveryIdentity(root: string): Promise<void> {
  for (let i = 0; i < FILES; i++) {
    const path = join(root, 'lib', `m${String(i).padStart(2, '0')}.js`);
    const bytes = await readFile(path);
    await unlink(path);
    await writeFile(path, bytes);
  }
}

describe('package tree pins', () => {
  it('checks an unchanged tree by identity alone, re-hashes files whose identity moved, and remembers them', async () => {
    const root = await tree();
    const pin = (await pinPackageTree(root))._unsafeUnwrap();
    expect(pin).toMatchObject({ files: FILES + 1 });
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: FILES + 1, rehashed: 0 });
    await moveEveryIdentity(root);
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: 1, rehashed: FILES });
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: FILES + 1, rehashed: 0 });
  });

  // The sweep saw every module's identity move: each is opened (no second lstat) and hashed, m16 among them.
  it('catches a changed, a removed and a linked file while most identities moved (files opened first)', async () => {
    const root = await tree();
    const pin = (await pinPackageTree(root))._unsafeUnwrap();
    await moveEveryIdentity(root);
    await appendFile(join(root, 'lib', 'm16.js'), '// changed\n');
    expect((await verifyPackageTree(root, pin))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_changed', file: 'lib/m16.js', change: 'changed' });

    forgetPackageTrees();
    await writeFile(join(root, 'lib', 'm16.js'), 'module.exports = 16;\n');
    await moveEveryIdentity(root);
    await unlink(join(root, 'lib', 'm16.js'));
    expect((await verifyPackageTree(root, pin))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_removed', file: 'lib/m16.js' });

    forgetPackageTrees();
    await writeFile(join(root, 'lib', 'm16.js'), 'module.exports = 16;\n');
    await moveEveryIdentity(root);
    await unlink(join(root, 'lib', 'm16.js'));
    await symlink(join(root, 'lib', 'm00.js'), join(root, 'lib', 'm16.js'));
    expect((await verifyPackageTree(root, pin))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_changed', file: 'lib/m16.js' });
  });

  it('keeps digest_mismatch for the main file and names added files and directories', async () => {
    const root = await tree();
    const pin = (await pinPackageTree(root))._unsafeUnwrap();
    await mkdir(join(root, 'lib', 'extra'));
    expect((await verifyPackageTree(root, pin, 'main.js'))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_added', file: 'lib/extra' });
    await rm(join(root, 'lib', 'extra'), { recursive: true });
    await appendFile(join(root, 'main.js'), '// changed\n');
    expect((await verifyPackageTree(root, pin, 'main.js'))._unsafeUnwrapErr().details).toMatchObject({ reason: 'digest_mismatch', file: 'main.js' });
  });

  it('holds descriptors on the files of a checked tree until its install root is removed or the tree is forgotten', async () => {
    const heldIn = async (root: string): Promise<number> => {
      const targets = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return targets.filter((target) => target.startsWith(`${root}/`)).length;
    };
    const [removed, kept] = [await tree(), await tree()];
    const pins = [(await pinPackageTree(removed))._unsafeUnwrap(), (await pinPackageTree(kept))._unsafeUnwrap()];
    expect((await verifyPackageTree(removed, pins[0]!)).isOk()).toBe(true);
    expect((await verifyPackageTree(kept, pins[1]!)).isOk()).toBe(true);
    await packageTreesSettled();
    expect([await heldIn(removed), await heldIn(kept)]).toEqual([FILES + 1, FILES + 1]);
    // An uninstalled version: the background work after the next check of any tree lets its deleted files go, so that their space is freed.
    await rm(removed, { recursive: true });
    expect((await verifyPackageTree(kept, pins[1]!)).isOk()).toBe(true);
    await packageTreesSettled();
    expect(await heldIn(removed)).toBe(0);
    expect(await heldIn(kept)).toBe(FILES + 1);
    forgetPackageTrees();
    expect(await heldIn(kept)).toBe(0);
  });

  it('refuses a list that is missing or is not the pinned one, and a link at pin time', async () => {
    const root = await tree();
    const pin = (await pinPackageTree(root))._unsafeUnwrap();
    const list = join(root, PACKAGE_TREE_LIST_NAME);
    await appendFile(list, 'f 644 1 0000000000000000000000000000000000000000000000000000000000000000 1 1 1 1 lib/ghost.js\n');
    expect((await verifyPackageTree(root, pin))._unsafeUnwrapErr().details).toMatchObject({ reason: 'digest_mismatch', path: list });
    await unlink(list);
    expect((await verifyPackageTree(root, pin))._unsafeUnwrapErr().details).toMatchObject({ reason: 'missing' });

    const linked = await tree();
    await symlink('/etc/passwd', join(linked, 'lib', 'passwd'));
    expect((await pinPackageTree(linked))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'link' } });
  });
});
