/**
 * The profile directory is created level by level: a path where nothing can
 * be created (under /proc) fails the open with HOST_IO_ERROR instead of
 * hanging in Node's recursive mkdir, and a file on the way is named.
 */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
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
});
