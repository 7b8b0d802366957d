/**
 * The tree check of a large package sweeps identities on worker threads
 * beside the host's thread: every tamper the single-threaded check caught
 * is still caught whichever thread swept the entry, and an identity that
 * moved on every file (bytes unchanged; the check then skips the sweep, as
 * for a restored tree) is re-hashed on every file. Which
 * thread sweeps which chunk depends on scheduling, so the workers' own
 * verdicts are also checked with the sweep left to them alone.
 */
import { appendFile, chmod, mkdir, mkdtemp, readFile, readdir, readlink, realpath, rename, rm, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lstatSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createIdentityTable, hashByPath, recordDigest, recordIdentity, startSweepWorkers, sweepIdentities, SWEEP_IDENTITY_MOVED, SWEEP_LOOK_AGAIN, SWEEP_UNCHANGED } from '../../src/binding/identitySweep.js';
import { packageTreesSettled, pinPackageTree, verifyPackageTree, type PackageTreePin } from '../../src/binding/packageTree.js';

/** Whole seconds, so that setting a file's times back restores them exactly (a Date holds only milliseconds). */
const PINNED_TIME = 1_700_000_000;
/** Enough entries that both threads take chunks of every sweep (64 entries a chunk). */
const DIRECTORIES = 100;
const FILES_PER_DIRECTORY = 30;
const FILES = DIRECTORIES * FILES_PER_DIRECTORY;

let root: string;
let pin: PackageTreePin;

const moduleAt = (d: number, f: number): string => join(root, 'node_modules', `dep-${d}`, `m${f}.js`);
const relative = (d: number, f: number): string => `node_modules/dep-${d}/m${f}.js`;

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'sweep-')));
  for (let d = 0; d < DIRECTORIES; d++) {
    await mkdir(join(root, 'node_modules', `dep-${d}`), { recursive: true });
    await Promise.all(Array.from({ length: FILES_PER_DIRECTORY }, (_, f) => writeFile(moduleAt(d, f), `module.exports = ${d * 1000 + f};\n`)));
    await Promise.all(Array.from({ length: FILES_PER_DIRECTORY }, (_, f) => utimes(moduleAt(d, f), PINNED_TIME, PINNED_TIME)));
  }
  pin = (await pinPackageTree(root))._unsafeUnwrap();
  expect(await startSweepWorkers()).toBe(availableParallelism() > 1);
}, 60_000);
afterAll(() => rm(root, { recursive: true, force: true }));

const refusal = async (): Promise<unknown> => (await verifyPackageTree(root, pin))._unsafeUnwrapErr().details;

describe('identity sweep on worker threads', () => {
  it('passes an unchanged tree by identity alone', async () => {
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: FILES, rehashed: 0 });
  });

  it('re-hashes every file when every ctime alone moved (bytes rewritten in place, mtime set back): a restored tree skips the sweep', async () => {
    for (let d = 0; d < DIRECTORIES; d++) {
      for (let f = 0; f < FILES_PER_DIRECTORY; f++) {
        const path = moduleAt(d, f);
        await writeFile(path, await readFile(path));
        await utimes(path, PINNED_TIME, PINNED_TIME);
      }
    }
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: 0, rehashed: FILES });
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: FILES, rehashed: 0 });
  }, 60_000);

  it('sweeps a checked tree through descriptors it holds on the files, and still refuses a file changed behind a directory swapped under them', async () => {
    expect((await verifyPackageTree(root, pin)).isOk()).toBe(true);
    await packageTreesSettled();
    const heldInTree = async (): Promise<number> => {
      const targets = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return targets.filter((target) => target.startsWith(`${root}/`)).length;
    };
    expect(await heldInTree()).toBe(FILES);
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap()).toEqual({ unchanged: FILES, rehashed: 0 });

    // The held files keep every bit of their status; only the directory that their names lead through is another.
    const swapped = join(root, 'node_modules', 'dep-63');
    const aside = `${root}-dep-63`;
    await rename(swapped, aside);
    await mkdir(swapped);
    for (let f = 0; f < FILES_PER_DIRECTORY; f++) {
      const original = await readFile(join(aside, `m${f}.js`), 'utf8');
      await writeFile(moduleAt(63, f), f === 7 ? original.replace('63007', '63006') : original);
      await utimes(moduleAt(63, f), PINNED_TIME, PINNED_TIME);
    }
    try {
      expect(await refusal()).toMatchObject({ reason: 'file_changed', file: relative(63, 7), path: moduleAt(63, 7) });
    } finally {
      await rm(swapped, { recursive: true });
      await rename(aside, swapped);
    }
    // The copies checked before m7 are what the tree last held: the originals, back in place, are hashed again.
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap().rehashed).toBeLessThan(FILES_PER_DIRECTORY);
  });

  it('catches a same-size change with its mtime set back, deep in the tree', async () => {
    const path = moduleAt(97, 29);
    const original = await readFile(path);
    await writeFile(path, original.toString().replace('97029', '97028'));
    await utimes(path, PINNED_TIME, PINNED_TIME);
    expect(await refusal()).toMatchObject({ reason: 'file_changed', file: relative(97, 29) });
    await writeFile(path, original);
    expect((await verifyPackageTree(root, pin)).isOk()).toBe(true);
  });

  it('catches an appended, a removed, a linked and a re-moded file, and an added file and directory', async () => {
    const path = moduleAt(63, 7);
    const original = await readFile(path);

    await appendFile(path, '// more\n');
    expect(await refusal()).toMatchObject({ reason: 'file_changed', file: relative(63, 7) });
    await writeFile(path, original);

    await unlink(path);
    expect(await refusal()).toMatchObject({ reason: 'file_removed', file: relative(63, 7) });

    await symlink(moduleAt(0, 0), path);
    expect(await refusal()).toMatchObject({ reason: 'file_changed', file: relative(63, 7) });
    await unlink(path);
    await writeFile(path, original);

    await chmod(path, 0o755);
    expect(await refusal()).toMatchObject({ reason: 'file_changed', file: relative(63, 7) });
    await chmod(path, 0o644);

    await writeFile(join(root, 'node_modules', 'dep-88', 'extra.js'), '');
    expect(await refusal()).toMatchObject({ reason: 'file_added', file: 'node_modules/dep-88/extra.js' });
    await unlink(join(root, 'node_modules', 'dep-88', 'extra.js'));

    await mkdir(join(root, 'node_modules', 'dep-99', 'sub'));
    expect(await refusal()).toMatchObject({ reason: 'file_added', file: 'node_modules/dep-99/sub' });
    await rm(join(root, 'node_modules', 'dep-99', 'sub'), { recursive: true });

    expect((await verifyPackageTree(root, pin)).isOk()).toBe(true);
  });

  it('catches a directory replaced by a file and a directory removed', async () => {
    const dir = join(root, 'node_modules', 'dep-71');
    await rm(dir, { recursive: true });
    expect(await refusal()).toMatchObject({ reason: 'file_removed', file: 'node_modules/dep-71' });
    await writeFile(dir, 'not a directory');
    expect(await refusal()).toMatchObject({ reason: 'file_changed', file: 'node_modules/dep-71' });
    // Put back as pinned (new inodes), for the cases after this one.
    await rm(dir);
    await mkdir(dir);
    for (let f = 0; f < FILES_PER_DIRECTORY; f++) {
      await writeFile(moduleAt(71, f), `module.exports = ${71 * 1000 + f};\n`);
      await utimes(moduleAt(71, f), PINNED_TIME, PINNED_TIME);
    }
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap().rehashed).toBe(FILES_PER_DIRECTORY);
  });
});

describe("a worker's own verdicts (the sweep left to the workers)", () => {
  /** A table of every directory and file of dep-40…dep-59, recorded as they are now. */
  function tableOfNow(): { table: ReturnType<typeof createIdentityTable>; index: Map<string, number> } {
    const paths: string[] = [];
    const dirs: string[] = [];
    for (let d = 40; d < 60; d++) {
      dirs.push(join(root, 'node_modules', `dep-${d}`));
      for (let f = 0; f < FILES_PER_DIRECTORY; f++) paths.push(moduleAt(d, f));
    }
    const all = [...dirs, ...paths];
    const table = createIdentityTable(all);
    all.forEach((path, i) => {
      const s = lstatSync(path);
      recordIdentity(table, i, s.isDirectory(), s.mode & 0o7777, { dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs });
    });
    return { table, index: new Map(all.map((path, i) => [path, i])) };
  }

  it('flags a moved identity, a mode change, a removal, a link and a directory whose entries changed; passes the rest', async () => {
    const { table, index } = tableOfNow();
    expect(table.paths.length).toBeGreaterThanOrEqual(512);
    const untouched = await sweepIdentities(table, false);
    expect([...untouched].every((v) => v === SWEEP_UNCHANGED)).toBe(true);

    const rewritten = moduleAt(41, 3);
    await writeFile(rewritten, await readFile(rewritten));
    await utimes(rewritten, PINNED_TIME, PINNED_TIME);
    const remoded = moduleAt(47, 11);
    await chmod(remoded, 0o600);
    const removed = moduleAt(52, 20);
    const removedBytes = await readFile(removed);
    await unlink(removed);
    const linked = moduleAt(58, 29);
    const linkedBytes = await readFile(linked);
    await unlink(linked);
    await symlink(moduleAt(40, 0), linked);
    const grown = join(root, 'node_modules', 'dep-55');
    await writeFile(join(grown, 'extra.js'), '');
    try {
      const verdicts = await sweepIdentities(table, false);
      const expected = new Map([
        [rewritten, SWEEP_IDENTITY_MOVED],
        [remoded, SWEEP_LOOK_AGAIN],
        [removed, SWEEP_LOOK_AGAIN],
        [linked, SWEEP_LOOK_AGAIN],
        [grown, SWEEP_LOOK_AGAIN],
        // dep-52 and dep-58 lost or replaced an entry: their identities moved too.
        [join(root, 'node_modules', 'dep-52'), SWEEP_LOOK_AGAIN],
        [join(root, 'node_modules', 'dep-58'), SWEEP_LOOK_AGAIN],
      ]);
      for (const [path, i] of index) expect([path, verdicts[i]]).toEqual([path, expected.get(path) ?? SWEEP_UNCHANGED]);
    } finally {
      await chmod(remoded, 0o644);
      await writeFile(removed, removedBytes);
      await unlink(linked);
      await writeFile(linked, linkedBytes);
      await unlink(join(grown, 'extra.js'));
    }
  });
});

describe("a worker's own hash results (the pass left to the workers)", () => {
  it('clears a file rewritten with its own bytes, with the status it read, and nothing that differs, is gone, is a link or changed mode', async () => {
    const paths: string[] = [];
    for (let d = 20; d < 30; d++) for (let f = 0; f < FILES_PER_DIRECTORY; f++) paths.push(moduleAt(d, f));
    const table = createIdentityTable(paths);
    for (const [i, path] of paths.entries()) {
      const s = lstatSync(path);
      recordIdentity(table, i, false, s.mode & 0o7777, { dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs });
      recordDigest(table, i, createHash('sha256').update(await readFile(path)).digest());
    }
    const [rewritten, changed, remoded, removed, linked] = [moduleAt(21, 4), moduleAt(23, 9), moduleAt(25, 14), moduleAt(27, 19), moduleAt(29, 24)];
    const originals = new Map(await Promise.all([changed, removed, linked].map(async (p) => [p, await readFile(p)] as const)));
    await writeFile(rewritten, await readFile(rewritten));
    // Same size, mtime set back: only the bytes tell.
    await writeFile(changed, originals.get(changed)!.toString().replace('23009', '23008'));
    await utimes(changed, PINNED_TIME, PINNED_TIME);
    await chmod(remoded, 0o600);
    await unlink(removed);
    await unlink(linked);
    await symlink(moduleAt(20, 0), linked);
    try {
      const pass = await hashByPath(table, paths.map((_, i) => i), false);
      const refused = new Set([changed, remoded, removed, linked]);
      for (const [k, path] of paths.entries()) expect([path, pass.pinned(k)]).toEqual([path, !refused.has(path)]);
      const now = lstatSync(rewritten);
      expect(pass.identity(paths.indexOf(rewritten))).toEqual({ dev: now.dev, ino: now.ino, size: now.size, mtimeMs: now.mtimeMs, ctimeMs: now.ctimeMs });
    } finally {
      await chmod(remoded, 0o644);
      await writeFile(changed, originals.get(changed)!);
      await utimes(changed, PINNED_TIME, PINNED_TIME);
      await writeFile(removed, originals.get(removed)!);
      await utimes(removed, PINNED_TIME, PINNED_TIME);
      await unlink(linked);
      await writeFile(linked, originals.get(linked)!);
      await utimes(linked, PINNED_TIME, PINNED_TIME);
    }
    // Back to the pinned bytes (new identities): the tree check passes again, re-hashing them by path.
    expect((await verifyPackageTree(root, pin)).isOk()).toBe(true);
  });

  it('refuses, naming the path, a file whose bytes differ among files re-hashed by path on every thread', async () => {
    // Every module of dep-30…dep-39 gets a new inode (rewritten under a new name and renamed over): their directories move, so no held descriptor serves them.
    for (let d = 30; d < 40; d++) {
      for (let f = 0; f < FILES_PER_DIRECTORY; f++) {
        const path = moduleAt(d, f);
        const bytes = await readFile(path, 'utf8');
        await writeFile(`${path}.new`, d === 36 && f === 5 ? bytes.replace('36005', '36004') : bytes);
        await utimes(`${path}.new`, PINNED_TIME, PINNED_TIME);
        await rename(`${path}.new`, path);
      }
    }
    expect(await refusal()).toMatchObject({ reason: 'file_changed', file: relative(36, 5), path: moduleAt(36, 5) });
    const fixed = moduleAt(36, 5);
    await writeFile(fixed, (await readFile(fixed, 'utf8')).replace('36004', '36005'));
    // The files cleared before the refusal keep the identities found then; the rest are re-hashed now.
    expect((await verifyPackageTree(root, pin))._unsafeUnwrap().rehashed).toBeGreaterThan(0);
  });
});
