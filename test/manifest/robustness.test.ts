/**
 * Bad input of any kind yields a Result: never a throw, never a hang, never
 * a polluted prototype. Property-based with fast-check, plus the named
 * extremes of the issue (not UTF-8, 10 MB, 10,000 levels deep, prototype
 * keys, numbers where strings belong).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { validateHandshakeManifest } from '../../src/manifest/handshake.js';
import type { ManifestForm } from '../../src/manifest/model.js';
import type { Violation } from '../../src/manifest/violations.js';
import { gumJson, gumTomlText, pairs } from './helpers.js';

const runs = Number(process.env.FUZZ_RUNS ?? 300);
const FORMS: ReadonlyArray<ManifestForm | undefined> = ['gum-json', 'gum-toml', 'open-discovery', undefined];
const validators = [new ManifestValidator(), new ManifestValidator({ preset: 'gum' })];
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

function assertPristinePrototypes(): void {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.getPrototypeOf({})).toBe(Object.prototype);
}

afterEach(assertPristinePrototypes);

function textResultOf(input: string | Uint8Array, form: ManifestForm | undefined): { ok: boolean; codes: string[] } {
  const results = validators.map((v) => v.validateText(input, form === undefined ? {} : { form }));
  return {
    ok: results.every((r) => r.isOk()),
    codes: results.flatMap((r) => (r.isErr() ? [r.error.code] : [])),
  };
}

const violationsOf = (input: string | Uint8Array, form?: ManifestForm): readonly Violation[] =>
  new ManifestValidator().inspectText(input, form === undefined ? {} : { form })._unsafeUnwrap().violations;

describe('robustness: arbitrary input gives a Result, never a throw', () => {
  it('arbitrary bytes, every form', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), fc.constantFrom(...FORMS), (bytes, form) => {
        textResultOf(bytes, form);
      }),
      { numRuns: runs },
    );
  });

  it('arbitrary unicode text, every form', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 2048 }), fc.constantFrom(...FORMS), (text, form) => {
        textResultOf(text, form);
      }),
      { numRuns: runs },
    );
  });

  it('texts made of manifest syntax fragments (brackets, quotes, keys, escapes)', () => {
    const fragment = fc.constantFrom('{', '}', '[', ']', '"', "'", '"""', ',', ':', '=', '\\', '\n', '[[tools]]', '[plugin]', 'a.b', '__proto__', 'constructor', '1', 'true', '#', ' ');
    fc.assert(
      fc.property(fc.array(fragment, { maxLength: 200 }), fc.constantFrom(...FORMS), (parts, form) => {
        textResultOf(parts.join(''), form);
      }),
      { numRuns: runs },
    );
  });

  it('arbitrary values of any JavaScript type as a parsed document', () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true, withDate: true, withTypedArray: true, withSparseArray: true }), fc.constantFrom<ManifestForm>('gum-json', 'gum-toml', 'open-discovery'), (value, form) => {
        for (const v of validators) v.validateValue(value, form);
        validateHandshakeManifest(value);
      }),
      { numRuns: runs },
    );
  });

  it('a valid manifest with any one field replaced by any JSON value', () => {
    const keys = Object.keys(gumJson());
    fc.assert(
      fc.property(fc.constantFrom(...keys), fc.jsonValue(), (key, value) => {
        const doc = gumJson();
        doc[key] = value;
        const result = new ManifestValidator().validateValue(doc, 'gum-json');
        if (result.isErr()) expect((result.error.details.violations as Violation[]).length).toBeGreaterThan(0);
      }),
      { numRuns: runs },
    );
  });

  it('JSON texts whose objects carry __proto__, constructor or prototype keys are rejected at those keys', () => {
    const key = fc.constantFrom('__proto__', 'constructor', 'prototype');
    fc.assert(
      fc.property(key, fc.jsonValue(), fc.constantFrom('', 'declared_capabilities', 'advertised_tools/0'), (bad, value, where) => {
        const doc = gumJson() as Record<string, any>;
        const text = JSON.stringify(doc).replace(
          where === '' ? /^\{/ : where === 'declared_capabilities' ? /"declared_capabilities":\{/ : /"advertised_tools":\[\{/,
          (m) => `${m}${JSON.stringify(bad)}:${JSON.stringify(value)},`,
        );
        const violations = violationsOf(text, 'gum-json');
        const pointer = where === '' ? `/${bad}` : `/${where}/${bad}`;
        expect(pairs(violations)).toContainEqual(['PLUGIN_MANIFEST_INVALID', pointer]);
      }),
      { numRuns: runs },
    );
  });

  it('numbers where strings belong are reported at their pointer', () => {
    const stringFields = ['plugin_id', 'name', 'version', 'namespace_owner', 'executable'];
    fc.assert(
      fc.property(fc.constantFrom(...stringFields), fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })), (key, n) => {
        const doc = gumJson();
        doc[key] = n;
        const error = new ManifestValidator().validateValue(doc, 'gum-json')._unsafeUnwrapErr();
        expect(pairs(error.details.violations as Violation[])).toContainEqual(['PLUGIN_MANIFEST_INVALID', `/${key}`]);
      }),
      { numRuns: runs },
    );
  });
});

describe('robustness: named extremes', () => {
  it('rejects bytes that are not UTF-8', () => {
    for (const bytes of [[0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x7b, 0x22, 0xe2, 0x82, 0x22, 0x7d]]) {
      const violations = violationsOf(new Uint8Array(bytes));
      expect(violations.map((v) => [v.code, v.pointer, v.message])).toEqual([['PLUGIN_MANIFEST_INVALID', '', 'manifest is not valid UTF-8']]);
    }
  });

  it('accepts a UTF-8 byte order mark', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(gumJson()))]);
    expect(new ManifestValidator().validateText(bytes).isOk()).toBe(true);
  });

  it('rejects a 10 MB manifest, as bytes and as text, without parsing it', () => {
    const big = `{"name":"${'x'.repeat(10 * 1024 * 1024)}"}`;
    for (const input of [big, Buffer.from(big)]) {
      const [v] = violationsOf(input);
      expect(v?.message).toBe('manifest is over the 1048576-byte limit');
    }
    expect(new ManifestValidator({ maxBytes: 64 }).inspectText(JSON.stringify(gumJson()))._unsafeUnwrap().violations[0]?.message).toBe('manifest is over the 64-byte limit');
  });

  it('rejects JSON nested 10,000 deep before parsing it', () => {
    for (const [open, close] of [['[', ']'], ['{"a":', '}']] as const) {
      const text = `{"manifest_schema_version":1,"x":${open.repeat(10_000)}1${close.repeat(10_000)}}`;
      expect(violationsOf(text, 'gum-json').map((v) => v.message)).toEqual(['manifest nests deeper than 64 levels']);
    }
  });

  it('does not count brackets inside JSON strings as nesting', () => {
    const doc = gumJson();
    doc.description = '['.repeat(10_000) + '\\"{'.repeat(100);
    expect(new ManifestValidator().validateText(JSON.stringify(doc)).isOk()).toBe(true);
  });

  it('rejects TOML nested 10,000 deep: inline arrays, inline tables, dotted keys and table headers', () => {
    const deep = [
      `a = ${'['.repeat(10_000)}1${']'.repeat(10_000)}`,
      `a = ${'{ b = '.repeat(10_000)}1${' }'.repeat(10_000)}`,
      `${Array.from({ length: 10_000 }, () => 'k').join('.')} = 1`,
      `[${Array.from({ length: 10_000 }, () => 't').join('.')}]\nv = 1`,
    ];
    for (const text of deep) {
      const violations = violationsOf(text, 'gum-toml');
      expect(violations).toHaveLength(1);
      expect(violations[0]).toMatchObject({ code: 'PLUGIN_MANIFEST_INVALID', stage: 'parse' });
    }
  });

  it('rejects prototype keys in TOML tables without touching any prototype', () => {
    for (const line of ['__proto__ = { polluted = true }', 'constructor.prototype.polluted = true', '[__proto__]\npolluted = true']) {
      const text = gumTomlText().replace('[package]', `${line.startsWith('[') ? '' : '[plugin.extra]\n'}${line}\n\n[package]`);
      const violations = violationsOf(text, 'gum-toml');
      expect(violations.some((v) => v.stage === 'parse' && /__proto__|constructor/.test(v.pointer))).toBe(true);
    }
  });

  it('never throws from validateFile on a directory, a missing file or a file of random bytes', async () => {
    const v = new ManifestValidator();
    expect((await v.validateFile(import.meta.dirname))._unsafeUnwrapErr().code).toBe('PLUGIN_MANIFEST_INVALID');
    expect((await v.validateFile('/nonexistent/manifest.json'))._unsafeUnwrapErr().code).toBe('PLUGIN_MANIFEST_NOT_FOUND');
  });
});
