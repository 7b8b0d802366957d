import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CatalogEncoder, type EncodedFile } from '../../src/catalog/CatalogEncoder.js';

const bytesOf = (encoded: EncodedFile): Buffer => {
  const bytes = Buffer.concat(encoded.chunks as Uint8Array[]);
  expect(bytes.byteLength).toBe(encoded.byteLength);
  return bytes;
};
const expected = (file: unknown): Buffer => Buffer.from(`${JSON.stringify(file)}\n`);

/** Any JSON text, including non-ASCII and lone surrogates (which JSON.stringify escapes). */
const anyString = fc.string({ unit: 'binary', maxLength: 12 });
const entry = fc.oneof(
  fc.dictionary(anyString, fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }), { maxKeys: 5 }),
  fc.array(fc.jsonValue({ stringUnit: 'binary', maxDepth: 2 }), { maxLength: 4 }),
  fc.jsonValue({ stringUnit: 'binary', maxDepth: 0 }),
);

describe('CatalogEncoder', () => {
  it('encodes every generation exactly as JSON.stringify + newline while entries are shared between generations', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { minLength: 1, maxLength: 12 }),
        fc.array(
          fc.record({
            stamp: anyString,
            list: fc.array(fc.nat(), { maxLength: 10 }),
            map: fc.array(fc.tuple(anyString, fc.nat()), { maxLength: 10 }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        (pool, generations) => {
          const encoder = new CatalogEncoder();
          for (const g of generations) {
            const pick = (i: number): unknown => pool[i % pool.length];
            const file = {
              version: 1,
              stamp: g.stamp,
              list: g.list.map(pick),
              map: Object.fromEntries(g.map.map(([key, i]) => [key, pick(i)])),
              empty: {},
            };
            expect(bytesOf(encoder.encode('f', file)).equals(expected(file))).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('caches an entry written again in the next generation, and reuses those bytes after that', () => {
    const encoder = new CatalogEncoder();
    const kept = { plugin_id: 'kept', note: 'é ✓' };
    const generations = [{ plugins: { kept } }, { plugins: { kept, a: { n: 1 } } }, { plugins: { kept, a: { n: 1 }, b: { n: 2 } } }];
    const encoded = generations.map((file) => encoder.encode('f', file));
    const buffersOf = (e: EncodedFile): Set<ArrayBufferLike> => new Set(e.chunks.map((c) => c.buffer));
    const shared = (x: EncodedFile, y: EncodedFile): boolean => [...buffersOf(y)].some((b) => buffersOf(x).has(b));
    expect(shared(encoded[0]!, encoded[1]!)).toBe(false);
    expect(shared(encoded[1]!, encoded[2]!)).toBe(true);
    encoded.forEach((e, i) => expect(bytesOf(e).equals(expected(generations[i]))).toBe(true));
  });

  it('compares each file only with its own previous generation', () => {
    const encoder = new CatalogEncoder();
    const entry = { n: 1 };
    const encoded = [encoder.encode('a', { m: { entry } }), encoder.encode('b', { m: { entry } }), encoder.encode('a', { m: { entry } })];
    const buffersOf = (e: EncodedFile): Set<ArrayBufferLike> => new Set(e.chunks.map((c) => c.buffer));
    expect([...buffersOf(encoded[1]!)].some((b) => buffersOf(encoded[0]!).has(b))).toBe(false);
    for (const e of encoded) expect(bytesOf(e).toString()).toBe('{"m":{"entry":{"n":1}}}\n');
  });

  it('re-encodes an entry met under another member name, or moved between an object and an array', () => {
    const encoder = new CatalogEncoder();
    const shared = { a: 1 };
    for (const file of [{ m: { x: shared } }, { m: { y: shared } }, { l: [shared], m: { x: shared } }, { l: [shared, shared] }]) {
      expect(bytesOf(encoder.encode('f', file)).equals(expected(file))).toBe(true);
    }
  });

  it('leaves out what JSON.stringify leaves out, and writes null for it in arrays', () => {
    const encoder = new CatalogEncoder();
    const file = { gone: undefined, fn: () => 1, kept: 1, m: { u: undefined, f: () => 2, v: 3 }, l: [undefined, () => 4, 5], only: { u: undefined } };
    expect(bytesOf(encoder.encode('f', file)).toString()).toBe(`${JSON.stringify(file)}\n`);
    expect(bytesOf(encoder.encode('f', { a: undefined })).toString()).toBe('{}\n');
    const kept = { n: 1 };
    for (let generation = 0; generation < 3; generation++) {
      expect(bytesOf(encoder.encode('g', { m: { kept, u: undefined }, l: [kept, undefined] })).toString()).toBe('{"m":{"kept":{"n":1}},"l":[{"n":1},null]}\n');
    }
  });

  it('defers to JSON.stringify for values with toJSON or a class prototype', () => {
    const encoder = new CatalogEncoder();
    class Point {
      constructor(readonly x: number) {}
    }
    const files = [
      { at: { when: new Date(0) } },
      { m: { when: new Date(0) } },
      { l: [new Date(0)] },
      { m: { p: new Point(1) } },
      { custom: { toJSON: (key: string) => `key=${key}` } },
      { m: { c: { toJSON: (key: string) => `key=${key}` } } },
    ];
    for (const file of files) expect(bytesOf(encoder.encode('f', file)).equals(expected(file))).toBe(true);
  });
});

describe('CatalogEncoder, first encoding of a file read from disk', () => {
  /** Text a hand or another tool may have written: each form parses to the same content as the canonical text. */
  const textForms = ['canonical', 'spaced', 'number-form', 'escaped', 'digit-key'] as const;
  const asciiString = fc.string({ unit: fc.constantFrom('a', 'b', 'z', '-', '.', '/', ' ', '{', '}', '[', ']', ',', ':', '"', '\\', 'é', '0', '7'), maxLength: 8 });
  const value = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
  const record = fc.dictionary(asciiString, fc.oneof(fc.dictionary(asciiString, value, { maxKeys: 4 }), fc.array(value, { maxLength: 3 })), { maxKeys: 8 });
  const list = fc.array(fc.dictionary(asciiString, value, { maxKeys: 4 }), { maxLength: 8 });

  function writtenAs(form: (typeof textForms)[number], content: object): string {
    const canonical = JSON.stringify(content);
    switch (form) {
      case 'canonical':
        return `${canonical}\n`;
      case 'spaced':
        return `${JSON.stringify(content, null, 1)}\n`;
      case 'number-form':
        return `${canonical.replace(/:(\d+)([,}\]])/, ':$1.0$2')}\n`;
      case 'escaped':
        return `${canonical.replace(/"([a-z])/, (_, letter: string) => `"\\u00${letter.charCodeAt(0).toString(16)}`)}\n`;
      case 'digit-key':
        return `${canonical.replace(/\{"/, '{"7":1,"')}\n`;
    }
  }

  it('writes exactly a fresh encode of the next generation, whatever form the file it read was in, and copies kept entries of a canonical file instead of stringifying them', () => {
    fc.assert(
      fc.property(record, list, fc.constantFrom(...textForms), fc.array(fc.nat(), { maxLength: 6 }), (m, l, form, edits) => {
        const text = writtenAs(form, { version: 1, m, l });
        if (!Buffer.from(text).equals(Buffer.from(text, 'latin1'))) return;
        const read = JSON.parse(text) as { version: number; m: Record<string, object>; l: object[] };
        // The next generation keeps most entries as the very objects read, drops, replaces or adds a few.
        const nextM: Record<string, object> = { ...read.m };
        const nextL = [...read.l];
        const keys = Object.keys(nextM);
        for (const e of edits) {
          if (e % 3 === 0 && keys.length > 0) delete nextM[keys[e % keys.length]!];
          else if (e % 3 === 1 && nextL.length > 0) nextL.splice(e % nextL.length, 1);
          else nextM[`added-${e}`] = { e };
        }
        const next = { version: 2, m: nextM, l: [...nextL, { added: true }] };
        const kept = new Set<unknown>([...Object.values(read.m).slice(1), ...read.l.slice(1)]);
        const stringified: unknown[] = [];
        const stringify = JSON.stringify;
        JSON.stringify = ((v: unknown, ...rest: []) => {
          stringified.push(v);
          return stringify(v, ...rest);
        }) as typeof JSON.stringify;
        let encoded: EncodedFile;
        try {
          encoded = new CatalogEncoder().encode('f', next, { bytes: Buffer.from(text, 'latin1'), data: read });
        } finally {
          JSON.stringify = stringify;
        }
        expect(bytesOf(encoded).equals(expected(next))).toBe(true);
        if (form === 'canonical' && !text.includes('\\') && !/"\d[^"]*":/.test(text)) {
          expect(stringified).not.toContain(next);
          expect(stringified.filter((v) => kept.has(v))).toEqual([]);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('takes a kept entry from the text it read, not from stringifying the object again', () => {
    // A text that disagrees with its content on purpose: the bytes written show where they came from.
    const read = { m: { a: { n: 1 }, b: { n: 2 } }, l: [{ i: 0 }, { i: 1 }] };
    const text = '{"m":{"a":{"n":1},"b":{"n":20}},"l":[{"i":0},{"i":10}]}\n';
    const next = { m: { ...read.m, c: { n: 3 } }, l: [...read.l, { i: 2 }] };
    const encoded = new CatalogEncoder().encode('f', next, { bytes: Buffer.from(text, 'latin1'), data: read });
    expect(bytesOf(encoded).toString()).toBe('{"m":{"a":{"n":1},"b":{"n":20},"c":{"n":3}},"l":[{"i":0},{"i":10},{"i":2}]}\n');
  });
});
