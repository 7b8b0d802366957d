/**
 * A profile directory named through a chain of links: the folder holding a
 * link in the middle of the chain is checked too (review R12 F7). Only the
 * folders of the path as named and of its real path were, so with
 * `<base>/l1 -> <base>/open/l2 -> <base>/safe` the folder `open`, which
 * everyone can write (not sticky), was never looked at, and another user
 * could replace `l2` with a link to a profile of theirs. Real folders and
 * links, opened through CatalogStore.open.
 */
import { chmod, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'profile-link-chain-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

describe('a profile directory named through a chain of links', () => {
  it('is refused when a link in the middle of the chain lies in a folder everyone can write, and opens once it does not', async () => {
    const open = join(base, 'open');
    const safe = join(base, 'safe');
    await mkdir(open);
    await mkdir(safe);
    await chmod(open, 0o777);
    await symlink(safe, join(open, 'l2'));
    await symlink(join(open, 'l2'), join(base, 'l1'));
    const profile = join(base, 'l1', 'profile');
    const error = (await CatalogStore.open({ profileDir: profile, profile: 'default' }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'profileDir', reason: 'ancestor_writable_by_others', ancestor: open, mode: '777' } });
    await chmod(open, 0o755);
    expect((await CatalogStore.open({ profileDir: profile, profile: 'default' })).isOk()).toBe(true);
  });
});
