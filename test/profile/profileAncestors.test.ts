/**
 * The folders above a profile directory are checked as its own owner and mode are (review R9 N3), as ssh's
 * StrictModes checks the path to authorized_keys: a folder another user can write (not sticky) or owns lets them
 * rename the profile away and put one of theirs (a plugins.lock naming their install roots) in its place. Real
 * folders, opened through CatalogStore.open, which every host, installer and CLI command opens a profile with.
 */
import { chmod, chown, mkdir, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'profile-ancestors-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

const open = (profileDir: string) => CatalogStore.open({ profileDir, profile: 'default' });

describe('the folders above the profile directory', () => {
  it('refuses a profile below a folder everyone can write that is not sticky, naming the folder and its mode', async () => {
    const shared = join(base, 'shared-0777');
    await mkdir(shared);
    await chmod(shared, 0o777);
    const profile = join(shared, 'x', 'profile');
    const error = (await open(profile))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'profileDir', reason: 'ancestor_writable_by_others', path: profile, ancestor: shared, mode: '777' } });
    expect(error.hint).toContain(shared);
    expect(error.hint).toContain('777');
    // Sticky, as /tmp is: others may add entries there but not rename or remove this user's.
    await chmod(shared, 0o1777);
    expect((await open(profile)).isOk()).toBe(true);
  });

  it('refuses a folder its group can write, and opens once it is not', async () => {
    const grouped = join(base, 'grouped');
    await mkdir(join(grouped, 'inner'), { recursive: true });
    await chmod(grouped, 0o770);
    const error = (await open(join(grouped, 'inner', 'profile')))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { reason: 'ancestor_writable_by_others', ancestor: grouped, mode: '770' } });
    await chmod(grouped, 0o750);
    expect((await open(join(grouped, 'inner', 'profile'))).isOk()).toBe(true);
  });

  it('accepts the root-owned sticky system temporary folder above a profile', async () => {
    const info = await stat(tmpdir());
    expect({ uid: info.uid, sticky: (info.mode & 0o1000) !== 0 }).toEqual({ uid: 0, sticky: true });
    expect((await open(join(base, 'plain', 'profile'))).isOk()).toBe(true);
  });

  it('checks the folder holding a link on the way, not only the folders of the real path', async () => {
    const target = join(base, 'private-target');
    await mkdir(target, { recursive: true });
    const shared = join(base, 'shared-with-link');
    await mkdir(shared);
    await symlink(target, join(shared, 'link'));
    await chmod(shared, 0o777);
    // The real path (base/private-target/profile) is safe; the link's name can be replaced by anyone.
    const error = (await open(join(shared, 'link', 'profile')))._unsafeUnwrapErr();
    expect(error).toMatchObject({ details: { reason: 'ancestor_writable_by_others', ancestor: shared } });
  });

  it.runIf(process.getuid?.() === 0)('refuses a profile below a folder another non-root user owns', async () => {
    const foreign = join(base, 'foreign');
    await mkdir(join(foreign, 'inner'), { recursive: true, mode: 0o755 });
    await chown(foreign, 65534, 65534);
    const error = (await open(join(foreign, 'inner', 'profile')))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { reason: 'ancestor_foreign_owner', ancestor: foreign, owner_uid: 65534 } });
    expect(error.hint).toContain(foreign);
  });
});
