/**
 * The profile directory is created level by level: a path where nothing can
 * be created (under /proc) fails the open with HOST_IO_ERROR instead of
 * hanging in Node's recursive mkdir, and a file on the way is named.
 */
import { chmod, chown, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'profile-dir-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

describe('the profile directory', () => {
  it('fails under /proc with HOST_IO_ERROR naming the path, instead of hanging', { timeout: 20_000 }, async () => {
    const error = (await CatalogStore.open({ profileDir: '/proc/mcp-plugin-host-nope/deeper', profile: 'default' }))._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_IO_ERROR');
    expect(error.message).toContain('/proc/mcp-plugin-host-nope');
  });

  it('fails when a level on the way is a file', async () => {
    await writeFile(join(base, 'a-file'), 'x');
    const error = (await CatalogStore.open({ profileDir: join(base, 'a-file', 'profile'), profile: 'default' }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_IO_ERROR', details: { errno: 'ENOTDIR' } });
  });

  it('creates every missing level, private to the owner', async () => {
    const dir = join(base, 'one', 'two', 'three');
    const store = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrap();
    for (const level of [join(base, 'one'), join(base, 'one', 'two'), dir]) expect((await stat(level)).mode & 0o777).toBe(0o700);
    expect(store).toBeInstanceOf(CatalogStore);
  });

  // Another user who can write the profile directory can rename the catalog files, the staging area or an install
  // root away and put their own in place; the host would publish, run or remove what they planted.
  it.each([0o777, 0o770, 0o1777, 0o722])('refuses a directory that its group or others can write (mode 0o%o), and opens it once it is not', async (mode) => {
    const dir = join(base, `shared-${mode.toString(8)}`);
    await mkdir(dir);
    await chmod(dir, mode);
    const error = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'profileDir', reason: 'writable_by_others', mode: mode.toString(8) } });
    await chmod(dir, 0o755);
    expect((await CatalogStore.open({ profileDir: dir, profile: 'default' })).isOk()).toBe(true);
  });

  it.runIf(process.getuid?.() === 0)('refuses a directory another user owns', async () => {
    const dir = join(base, 'foreign');
    await mkdir(dir, { mode: 0o700 });
    await chown(dir, 65534, 65534);
    const error = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'profileDir', reason: 'foreign_owner', owner_uid: 65534 } });
  });
});
