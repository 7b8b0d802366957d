/**
 * The catalog's `date-time` check is a fast path for the host's own
 * timestamps (toISOString form) in front of ajv-formats' full check, so that
 * a fresh open of a large profile is not dominated by it. It must accept and
 * refuse exactly what ajv-formats' full `date-time` does, including dates that
 * are well formed but do not exist, and a catalog file carrying one must
 * still be refused at open.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import { putPlugin } from '../../src/catalog/catalogContents.js';
import { isDateTime } from '../../src/catalog/dateTime.js';
import { pluginRecords } from './helpers/catalogFixtures.js';

const reference = (fullFormats['date-time'] as { validate: (text: string) => boolean }).validate;

const EDGES = [
  '2026-05-19T00:00:00.000Z',
  '2024-02-29T12:00:00.000Z',
  '2023-02-29T12:00:00.000Z',
  '2000-02-29T00:00:00.000Z',
  '1900-02-29T00:00:00.000Z',
  '2026-04-31T00:00:00.000Z',
  '2026-12-31T23:59:59.999Z',
  '2026-12-31T23:59:60.000Z',
  '2026-12-31T22:59:60.000Z',
  '2026-12-31T24:00:00.000Z',
  '2026-13-01T00:00:00.000Z',
  '2026-00-10T00:00:00.000Z',
  '2026-01-00T00:00:00.000Z',
  '2026-08-31T00:00:00.000Z',
  '2026-09-31T00:00:00.000Z',
  '2026-05-19T00:60:00.000Z',
  '2026-05-19t00:00:00.000z',
  '2026-05-19T02:00:00+02:00',
  '2026-05-19 02:00:00Z',
  '2026-05-19T02:00:00',
  '2026-05-19',
  '',
];

/** A toISOString-shaped string whose fields range past their valid values. */
const instantShaped = fc
  .tuple(
    fc.integer({ min: 0, max: 9999 }),
    fc.integer({ min: 0, max: 19 }),
    fc.integer({ min: 0, max: 39 }),
    fc.integer({ min: 0, max: 29 }),
    fc.integer({ min: 0, max: 69 }),
    fc.integer({ min: 0, max: 69 }),
    fc.integer({ min: 0, max: 999 }),
  )
  .map(([y, mo, d, h, mi, s, ms]) => {
    const pad = (n: number, w: number): string => String(n).padStart(w, '0');
    return `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}.${pad(ms, 3)}Z`;
  });

describe('catalog date-time format', () => {
  it('agrees with ajv-formats full date-time on edge cases', () => {
    for (const text of EDGES) expect(isDateTime(text), text).toBe(reference(text));
  });

  it('agrees with ajv-formats full date-time on instant-shaped and arbitrary strings', () => {
    fc.assert(fc.property(fc.oneof(instantShaped, fc.string()), (text) => isDateTime(text) === reference(text)), { numRuns: 20_000 });
  });
});

describe('a catalog file with a date that does not exist', () => {
  let base: string | undefined;
  afterEach(() => {
    if (base !== undefined) rmSync(base, { recursive: true, force: true });
  });

  it('is refused at open with CATALOG_CORRUPT naming the field, in the host’s own timestamp form', async () => {
    base = mkdtempSync(join(tmpdir(), 'catalog-datetime-'));
    const dir = join(base, 'work');
    const store = (await CatalogStore.open({ profileDir: dir, profile: 'work' }))._unsafeUnwrap();
    (await store.transaction((c) => putPlugin(c, pluginRecords('alpha'))))._unsafeUnwrap();
    const path = join(dir, 'plugin-state.json');
    const text = readFileSync(path, 'utf8');
    expect(text).toContain('"installed_at":"2026-05-19T00:00:00.000Z"');
    writeFileSync(path, text.replace('"installed_at":"2026-05-19T00:00:00.000Z"', '"installed_at":"2026-02-30T00:00:00.000Z"'));
    const opened = await CatalogStore.open({ profileDir: dir, profile: 'work' });
    expect(opened.isErr()).toBe(true);
    expect(opened._unsafeUnwrapErr().code).toBe('CATALOG_CORRUPT');
    expect(opened._unsafeUnwrapErr().message).toContain('/plugins/alpha/installed_at');
  });
});
