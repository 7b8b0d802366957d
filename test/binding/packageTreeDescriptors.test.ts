/**
 * The descriptors a package tree check holds on the files of a checked tree:
 * a file whose identity moved is re-hashed through its held descriptor while
 * its path still leads there (and refused, by its path, when its bytes
 * differ); reading leaves access times alone; and a descriptor number the
 * embedding application closed behind the host's back and opened again is
 * never closed by the host, even on a new file holding the held file's inode.
 */
import { closeSync, fstatSync, openSync, readlinkSync, statSync, unlinkSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forgetPackageTrees, packageTreesSettled, pinPackageTree, verifyPackageTree, type PackageTreePin } from '../../src/binding/packageTree.js';

const FILES = 40;
/** Whole seconds, so that times set back are restored exactly. */
const LONG_AGO = 1_600_000_000;
const dirs: string[] = [];
const appDescriptors: number[] = [];
afterEach(async () => {
  forgetPackageTrees();
  for (const fd of appDescriptors.splice(0)) closeSync(fd);
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const moduleIn = (root: string, i: number): string => join(root, 'lib', `m${String(i).padStart(2, '0')}.js`);

async function tree(): Promise<string> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'tree-held-')));
  dirs.push(root);
  await mkdir(join(root, 'lib'));
  await writeFile(join(root, 'main.js'), 'require("./lib/m00.js");\n');
  for (let i = 0; i < FILES; i++) await writeFile(moduleIn(root, i), `module.exports = ${i};\n`);
  return root;
}

/** The descriptors of this process open on a file under `root`, by the path each names. */
async function heldIn(root: string): Promise<Map<string, number>> {
  const held = new Map<string, number>();
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target.startsWith(`${root}/`)) held.set(target, Number(fd));
  }
  return held;
}

/** A checked tree whose descriptors the host holds. */
async function checkedTree(): Promise<{ root: string; pin: PackageTreePin }> {
  const root = await tree();
  const pin = (await pinPackageTree(root))._unsafeUnwrap();
  expect((await verifyPackageTree(root, pin)).isOk()).toBe(true);
  await packageTreesSettled();
  expect((await heldIn(root)).size).toBe(FILES + 1);
  return { root, pin };
}

/**
 * Closes the host's descriptor `fd` as a careless application would, then
 * opens a file of the application's until the kernel hands out that number
 * again (it gives the lowest free one): the number is the application's now.
 */
async function reuseNumber(fd: number, dir: string): Promise<string> {
  const appFile = join(dir, `app-${fd}.txt`);
  await writeFile(appFile, 'the application owns this\n');
  closeSync(fd);
  for (;;) {
    const opened = openSync(appFile, 'r');
    appDescriptors.push(opened);
    if (opened === fd) return appFile;
    expect(opened).toBeLessThan(fd);
  }
}

describe('descriptors held on a checked package tree', () => {
  it('re-hashes files rewritten in place through the descriptors it holds, keeps them, and refuses one whose bytes differ by its path', async () => {
    const { root, pin } = await checkedTree();
    const before = await heldIn(root);
    // Same bytes, same inodes: every ctime moves, the directory stays as it was.
    for (let i = 0; i < FILES; i++) await writeFile(moduleIn(root, i), await readFile(moduleIn(root, i)));
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: 1, rehashed: FILES });
    expect(await heldIn(root)).toEqual(before);
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: FILES + 1, rehashed: 0 });

    const changed = moduleIn(root, 17);
    const { mtime } = statSync(changed);
    await writeFile(changed, 'module.exports = 71;\n');
    await utimes(changed, LONG_AGO, mtime);
    expect((await verifyPackageTree(root, pin))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_changed', file: 'lib/m17.js', path: changed });
  });

  it('re-hashes without moving the access times of the files it reads, through held descriptors and by path', async () => {
    const { root, pin } = await checkedTree();
    // An access time older than the ctime that setting it moves: the next plain read would write it (relatime).
    const ageEveryAccessTime = async (): Promise<void> => {
      for (let i = 0; i < FILES; i++) await utimes(moduleIn(root, i), LONG_AGO, statSync(moduleIn(root, i)).mtime);
    };
    const accessTimes = (): number[] => Array.from({ length: FILES }, (_, i) => statSync(moduleIn(root, i)).atimeMs);
    await ageEveryAccessTime();
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap().rehashed).toBe(FILES);
    expect(accessTimes()).toEqual(Array(FILES).fill(LONG_AGO * 1000));

    // A process's first check holds no descriptor: every file is opened by its path.
    forgetPackageTrees();
    await ageEveryAccessTime();
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap().rehashed).toBe(FILES);
    expect(accessTimes()).toEqual(Array(FILES).fill(LONG_AGO * 1000));
  });

  it("never closes a descriptor number the embedding application closed behind the host's back and opened again", async () => {
    const { root, pin } = await checkedTree();
    const held = await heldIn(root);
    const outside = await realpath(await mkdtemp(join(tmpdir(), 'tree-app-')));
    dirs.push(outside);
    const stillTheApplications = (fd: number, appFile: string): void => {
      expect(readlinkSync(`/proc/self/fd/${fd}`)).toBe(appFile);
      expect(fstatSync(fd).ino).toBe(statSync(appFile).ino);
    };

    // Its file's identity moves: the check finds the number naming another file, checks the file by its path, and lets the number be.
    const first = held.get(moduleIn(root, 3))!;
    const firstApp = await reuseNumber(first, outside);
    await writeFile(moduleIn(root, 3), await readFile(moduleIn(root, 3)));
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: FILES, rehashed: 1 });
    await packageTreesSettled();
    stillTheApplications(first, firstApp);

    // The tree is let go of while the number is the application's.
    const second = held.get(moduleIn(root, 9))!;
    const secondApp = await reuseNumber(second, outside);
    forgetPackageTrees();
    stillTheApplications(first, firstApp);
    stillTheApplications(second, secondApp);
    expect((await heldIn(root)).size).toBe(0);
  });

  it('never closes a number the application reopened on a new file that took the deleted held file\'s inode', async () => {
    const { root } = await checkedTree();
    const held = await heldIn(root);
    const appFile = join(root, 'lib', 'app.txt');
    // A held file's last link and descriptor go: its inode is free, and this file system (ext4) hands it to the next file
    // created near it. Other processes on a loaded machine may take a freed inode first, so each held file is a chance.
    const tookFreedInode = async (): Promise<{ fd: number; dev: number; ino: number } | undefined> => {
      for (const [path, fd] of held) {
        const { dev, ino } = fstatSync(fd);
        closeSync(fd);
        unlinkSync(path);
        for (let attempt = 0; attempt < 5; attempt++) {
          await writeFile(appFile, 'the application owns this\n');
          if (statSync(appFile).ino === ino) return { fd, dev, ino };
          unlinkSync(appFile);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
      return undefined;
    };
    const freed = await tookFreedInode();
    expect(freed).toBeDefined();
    const { fd, dev, ino } = freed!;
    expect(statSync(appFile)).toMatchObject({ dev, ino });
    for (;;) {
      const opened = openSync(appFile, 'r');
      appDescriptors.push(opened);
      if (opened === fd) break;
      expect(opened).toBeLessThan(fd);
    }

    forgetPackageTrees();
    expect(readlinkSync(`/proc/self/fd/${fd}`)).toBe(appFile);
  });
});
