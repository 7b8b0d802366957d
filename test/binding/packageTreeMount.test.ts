/**
 * A mount placed over a file of a checked tree, after the host took its
 * descriptor: it moves no directory's identity and leaves the held
 * descriptor on the file it hides, while the path leads to another file
 * (root on the host, or a same-user FUSE mount through fusermount), which a
 * spawn would run. The check compares the mount table and refuses it. Runs
 * mount(8), so it needs root, as the suite does.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forgetPackageTrees, packageTreesSettled, pinPackageTree, verifyPackageTree } from '../../src/binding/packageTree.js';

const dirs: string[] = [];
afterEach(async () => {
  forgetPackageTrees();
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('package tree pins and mounts', () => {
  it('refuses a file hidden by a mount placed over it after its descriptor was taken', async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), 'tree-mount-')));
    dirs.push(root);
    await mkdir(join(root, 'lib'));
    await writeFile(join(root, 'main.js'), 'require("./lib/m05.js");\n');
    for (let i = 0; i < 10; i++) await writeFile(join(root, 'lib', `m${String(i).padStart(2, '0')}.js`), `module.exports = ${i};\n`);
    const pin = (await pinPackageTree(root))._unsafeUnwrap();
    expect((await verifyPackageTree(root, pin)).isOk()).toBe(true);
    await packageTreesSettled();
    const hidden = join(root, 'lib', 'm05.js');
    const other = join(root, '..', `${root.split('/').pop()}-other.js`);
    await writeFile(other, 'module.exports = 55;\n');
    execFileSync('mount', ['--bind', other, hidden]);
    try {
      expect(await readFile(hidden, 'utf8')).toBe('module.exports = 55;\n');
      expect((await verifyPackageTree(root, pin))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_changed', file: 'lib/m05.js' });
    } finally {
      execFileSync('umount', [hidden]);
      await rm(other);
    }
  });
});
