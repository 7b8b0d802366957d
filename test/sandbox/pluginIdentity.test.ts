import { chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkUidRange, introspectionIdentity, pluginIdentity } from '../../src/sandbox/pluginIdentity.js';

const base = mkdtempSync(join(tmpdir(), 'plugin-uids-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
// The first id is the install introspection's: four ids for plugins.
const range = { first: 1_950_000_000, count: 5 };

describe('pluginIdentity', () => {
  it('derives an id in the range from the plugin id, the same every time, group equal to user', () => {
    const root = mkdtempSync(join(base, 'fresh-'));
    const first = pluginIdentity(root, 'alpha', range)._unsafeUnwrap();
    expect(first.uid).toBeGreaterThan(range.first);
    expect(first.uid).toBeLessThan(range.first + range.count);
    expect(first.gid).toBe(first.uid);
    expect(pluginIdentity(root, 'alpha', range)._unsafeUnwrap()).toEqual(first);
  });

  it.runIf(process.getuid?.() === 0)('keeps the owner of the data directory, moves past ids other plugins own, and fails when none is left', () => {
    const root = mkdtempSync(join(base, 'owned-'));
    const wanted = pluginIdentity(root, 'alpha', range)._unsafeUnwrap().uid;
    mkdirSync(join(root, 'other'));
    chownSync(join(root, 'other'), wanted, wanted);
    const moved = pluginIdentity(root, 'alpha', range)._unsafeUnwrap().uid;
    expect(moved).not.toBe(wanted);
    mkdirSync(join(root, 'alpha'));
    chownSync(join(root, 'alpha'), moved, moved);
    // Once created, the data directory's owner is the plugin's id, whatever the hash says.
    expect(pluginIdentity(root, 'alpha', range)._unsafeUnwrap().uid).toBe(moved);
    // A link named like a plugin does not claim an id.
    symlinkSync(join(root, 'other'), join(root, 'linked'));
    const ids = new Set([wanted, moved]);
    for (const name of ['beta', 'gamma']) {
      const uid = pluginIdentity(root, name, range)._unsafeUnwrap().uid;
      expect(ids.has(uid)).toBe(false);
      mkdirSync(join(root, name));
      chownSync(join(root, name), uid, uid);
      ids.add(uid);
    }
    expect(pluginIdentity(root, 'delta', range)._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it.runIf(process.getuid?.() === 0)('gives no plugin the introspection\'s id, not even one whose data directory that id owns', () => {
    const root = mkdtempSync(join(base, 'reserved-'));
    const reserved = introspectionIdentity(range).uid;
    mkdirSync(join(root, 'npm-introspection'));
    chownSync(join(root, 'npm-introspection'), reserved, reserved);
    expect(pluginIdentity(root, 'npm-introspection', range)._unsafeUnwrap().uid).not.toBe(reserved);
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) expect(pluginIdentity(root, name, range)._unsafeUnwrap().uid).not.toBe(reserved);
    expect(checkUidRange({ first: 1_950_000_000, count: 1 }).isErr()).toBe(true);
  });

  it('refuses ranges that reach root or system ids or past 2^32 - 1', () => {
    expect(checkUidRange({ first: 0, count: 10 }).isErr()).toBe(true);
    expect(checkUidRange({ first: 999, count: 10 }).isErr()).toBe(true);
    expect(checkUidRange({ first: 0xffff_fff0, count: 100 }).isErr()).toBe(true);
    expect(checkUidRange({ first: 1_900_000_000, count: 1_000_000 }).isOk()).toBe(true);
  });
});
