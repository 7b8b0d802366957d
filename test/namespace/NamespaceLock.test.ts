import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HostError } from '../../src/errors/HostError.js';
import {
  NamespaceLock,
  reservedNamespacePreset,
  type NamespaceClaim,
  type NamespaceOwners,
} from '../../src/namespace/NamespaceLock.js';
import { stoppedClock } from '../support/clocks.js';

const fixedClock = stoppedClock(Date.UTC(2026, 4, 19));
const standard = new NamespaceLock({ profileKind: 'standard', clock: fixedClock });
const dev = new NamespaceLock({ profileKind: 'dev', clock: fixedClock });

const fli: NamespaceClaim = { plugin_id: 'fli', namespace_owner: 'io.example.flights' };

describe('namespace ownership', () => {
  it('records a first claim with its owner and the time it was first recorded', () => {
    const owners = standard.claim(fli, {})._unsafeUnwrap();
    expect(owners).toEqual({ fli: { namespace_owner: 'io.example.flights', first_recorded_at: '2026-05-19T00:00:00.000Z' } });
  });

  it('lets the same owner claim again without changing the record', () => {
    const owners = standard.claim(fli, {})._unsafeUnwrap();
    const later = new NamespaceLock({ profileKind: 'standard', clock: stoppedClock(Date.UTC(2027, 0, 1)) });
    expect(later.claim(fli, owners)._unsafeUnwrap()).toEqual(owners);
  });

  it('refuses a different owner for a recorded id with PLUGIN_NAMESPACE_CONFLICT', () => {
    const owners = standard.claim(fli, {})._unsafeUnwrap();
    const error = standard.check({ plugin_id: 'fli', namespace_owner: 'io.evil.flights' }, owners)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_NAMESPACE_CONFLICT');
    expect(error.details).toMatchObject({ reason: 'owner_mismatch', plugin_id: 'fli', recorded_owner: 'io.example.flights', namespace_owner: 'io.evil.flights' });
    expect(error.message).toContain("owned by 'io.example.flights'");
  });

  it('compares owners exactly (case matters)', () => {
    const owners = standard.claim(fli, {})._unsafeUnwrap();
    expect(standard.check({ plugin_id: 'fli', namespace_owner: 'IO.example.flights' }, owners).isErr()).toBe(true);
  });

  it('requires namespace_owner from third-party plugins', () => {
    for (const namespace_owner of [undefined, '', '   ']) {
      const claim: NamespaceClaim = namespace_owner === undefined ? { plugin_id: 'fli' } : { plugin_id: 'fli', namespace_owner };
      const error = standard.check(claim, {})._unsafeUnwrapErr();
      expect(error.code).toBe('PLUGIN_NAMESPACE_CONFLICT');
      expect(error.details.reason).toBe('owner_missing');
    }
  });

  it('lets a first-party plugin omit namespace_owner and records it as first-party', () => {
    const owners = standard.claim({ plugin_id: 'hello', firstParty: true }, {})._unsafeUnwrap();
    expect(owners.hello).toEqual({ first_party: true, first_recorded_at: '2026-05-19T00:00:00.000Z' });
    const error = standard.check({ plugin_id: 'hello', namespace_owner: 'io.example.hello' }, owners)._unsafeUnwrapErr();
    expect(error.details).toMatchObject({ reason: 'owner_mismatch', recorded_owner: 'first-party' });
    expect(standard.check({ plugin_id: 'hello', firstParty: true }, owners).isOk()).toBe(true);
  });

  it.each(['gmail', 'drive', 'calendar', 'gmail-labels', 'search-console', 'search-console-extra'])(
    'refuses the reserved first-party prefix in %s for third parties',
    (plugin_id) => {
      const error = standard.check({ plugin_id, namespace_owner: 'io.example' }, {})._unsafeUnwrapErr();
      expect(error.code).toBe('PLUGIN_NAMESPACE_CONFLICT');
      expect(error.details.reason).toBe('reserved_prefix');
      expect(standard.check({ plugin_id, namespace_owner: 'com.google', firstParty: true }, {}).isOk()).toBe(true);
    },
  );

  it('reserves an id that equals a prefix or continues it after a dash, not one that merely starts with it', () => {
    expect(standard.reservedPrefixOf('gmail')).toBe('gmail');
    expect(standard.reservedPrefixOf('gmail-foo')).toBe('gmail');
    expect(standard.reservedPrefixOf('gmailer')).toBeUndefined();
    expect(standard.reservedPrefixOf('drivers')).toBeUndefined();
    expect(standard.check({ plugin_id: 'gmailer', namespace_owner: 'io.example' }, {}).isOk()).toBe(true);
  });

  it('refuses a reserved prefix even under the dev override', () => {
    const error = dev.check({ plugin_id: 'gmail', namespace_owner: 'io.example', devAllowNamespaceConflict: true }, {})._unsafeUnwrapErr();
    expect(error.details.reason).toBe('reserved_prefix');
  });

  it('lets a dev profile bypass an owner conflict with the override, without transferring ownership', () => {
    const owners = dev.claim(fli, {})._unsafeUnwrap();
    const other: NamespaceClaim = { plugin_id: 'fli', namespace_owner: 'io.other', devAllowNamespaceConflict: true };
    expect(dev.check({ ...other, devAllowNamespaceConflict: false }, owners).isErr()).toBe(true);
    expect(dev.check(other, owners).isOk()).toBe(true);
    expect(dev.claim(other, owners)._unsafeUnwrap()).toEqual(owners);
  });

  it('refuses the override on a standard profile with a clear error, conflict or not', () => {
    for (const owners of [{}, standard.claim(fli, {})._unsafeUnwrap()]) {
      const error = standard
        .check({ plugin_id: 'fli', namespace_owner: 'io.other', devAllowNamespaceConflict: true }, owners)
        ._unsafeUnwrapErr();
      expect(error.code).toBe('HOST_INVALID_OPTIONS');
      expect(error.message).toContain('only on a dev profile');
    }
  });

  it('keeps ownership after remove so the same owner reinstalls and another owner is still refused', () => {
    const installed = standard.claim(fli, {})._unsafeUnwrap();
    const removed = standard.release('fli', installed);
    expect(removed).toEqual(installed);
    expect(standard.claim(fli, removed)._unsafeUnwrap()).toEqual(installed);
    expect(standard.claim({ plugin_id: 'fli', namespace_owner: 'io.other' }, removed).isErr()).toBe(true);
  });

  it('does not mutate the owners record it is given', () => {
    const owners: NamespaceOwners = Object.freeze({});
    const next = standard.claim(fli, owners)._unsafeUnwrap();
    expect(owners).toEqual({});
    expect(next).not.toBe(owners);
  });

  it('treats inherited property names as unowned ids', () => {
    const lock = new NamespaceLock({ profileKind: 'standard', preset: 'neutral', clock: fixedClock });
    expect(lock.ownerOf('constructor', {})).toBeUndefined();
    const owners = lock.claim({ plugin_id: 'constructor', namespace_owner: 'io.example' }, {})._unsafeUnwrap();
    expect(Object.hasOwn(owners, 'constructor')).toBe(true);
  });

  it('survives a round trip through a lock file on disk', () => {
    const dir = mkdtempSync(join(tmpdir(), 'namespace-lock-'));
    try {
      const file = join(dir, 'plugins.lock');
      writeFileSync(file, JSON.stringify({ namespace_owners: standard.claim(fli, {})._unsafeUnwrap() }));
      const reread = (JSON.parse(readFileSync(file, 'utf8')) as { namespace_owners: NamespaceOwners }).namespace_owners;
      expect(standard.check(fli, reread).isOk()).toBe(true);
      expect(standard.check({ plugin_id: 'fli', namespace_owner: 'io.other' }, reread).isErr()).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('namespace ownership: reserved prefixes configuration', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'namespace-etc-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('ships the Google service prefixes in the gum preset of etc/reserved-namespaces.json', () => {
    const file = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'etc', 'reserved-namespaces.json'), 'utf8')) as {
      presets: Record<string, string[]>;
    };
    for (const p of ['gmail', 'drive', 'calendar', 'docs', 'sheets', 'youtube', 'bigquery', 'search-console']) expect(file.presets.gum).toContain(p);
    expect(file.presets.neutral).toEqual([]);
    expect(standard.reserved).toEqual([...new Set(file.presets.gum)].sort());
    expect(reservedNamespacePreset('gum')).toEqual(file.presets.gum);
  });

  it('reserves nothing in the neutral preset except what the host adds', () => {
    const lock = new NamespaceLock({ profileKind: 'standard', preset: 'neutral', reserved: ['myapp'] });
    expect(lock.check({ plugin_id: 'gmail', namespace_owner: 'io.example' }, {}).isOk()).toBe(true);
    expect(lock.check({ plugin_id: 'myapp-notes', namespace_owner: 'io.example' }, {})._unsafeUnwrapErr().details.reason).toBe('reserved_prefix');
  });

  it('refuses invalid options', () => {
    expect(NamespaceLock.create({ profileKind: 'dev', reserved: [''] })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(NamespaceLock.create({ profileKind: 'dev', preset: 'x' as 'gum' })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(() => new NamespaceLock({ profileKind: 'dev', reserved: [''] })).toThrow(HostError);
  });
});

describe('namespace ownership: properties', () => {
  const pluginId = fc.oneof(
    fc.constantFrom(...reservedNamespacePreset('gum')),
    fc.tuple(fc.constantFrom(...reservedNamespacePreset('gum')), fc.stringMatching(/^[a-z0-9-]{0,8}$/)).map(([p, s]) => `${p}-${s}`),
    fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
  );
  const owner = fc.option(fc.constantFrom('io.a', 'io.b', '', 'com.google'), { nil: undefined });
  const claim = fc.record(
    { plugin_id: pluginId, namespace_owner: owner, firstParty: fc.boolean(), devAllowNamespaceConflict: fc.boolean() },
    { requiredKeys: ['plugin_id'] },
  ) as fc.Arbitrary<NamespaceClaim>;

  it('never allows a reserved prefix without firstParty, on any profile, with any owners record', () => {
    fc.assert(
      fc.property(fc.array(claim, { maxLength: 6 }), claim, fc.constantFrom(standard, dev), (history, next, lock) => {
        let owners: NamespaceOwners = {};
        for (const c of history) owners = lock.claim(c, owners).unwrapOr(owners);
        const result = lock.claim(next, owners);
        if (lock.reservedPrefixOf(next.plugin_id) !== undefined && next.firstParty !== true) expect(result.isErr()).toBe(true);
        if (result.isOk()) {
          for (const [id, record] of Object.entries(result.value)) {
            if (lock.reservedPrefixOf(id) !== undefined) expect(record.first_party).toBe(true);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('never replaces a recorded owner', () => {
    fc.assert(
      fc.property(fc.array(claim, { maxLength: 8 }), fc.constantFrom(standard, dev), (history, lock) => {
        let owners: NamespaceOwners = {};
        for (const c of history) {
          const next = lock.claim(c, owners).unwrapOr(owners);
          for (const id of Object.keys(owners)) expect(next[id]).toEqual(owners[id]);
          owners = next;
        }
      }),
      { numRuns: 300 },
    );
  });
});
