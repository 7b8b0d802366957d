/**
 * `uniqueItems`, `enum` and `format: url` are checked in linear time in every
 * Ajv that validates what a plugin or a caller sent (review R14 F1, F2, F3's
 * enum): the same verdicts as Ajv's and ajv-formats' own on generated cases,
 * and the work counted (property reads through getters, the strings ajv-formats'
 * url regex is given, the worker's
 * deadline), not timed.
 */
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { describe, expect, it } from 'vitest';
import { CanaryArgumentCheck } from '../../src/host/canaryArguments.js';
import { validateOffThread } from '../../src/manifest/answerValidation.js';
import { withLinearKeywords } from '../../src/manifest/linearKeywords.js';
import { outputSchemaValidators } from '../../src/shapes/mcp/outputSchemaValidators.js';

/** A seeded generator, so a failing case can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

function jsonValue(next: () => number, depth = 0): unknown {
  const pick = Math.floor(next() * (depth > 2 ? 5 : 7));
  switch (pick) {
    case 0: return Math.floor(next() * 3);
    case 1: return ['a', 'b', '1', ''][Math.floor(next() * 4)];
    case 2: return [null, true, false, 1.5, -0][Math.floor(next() * 5)];
    case 3: return Math.floor(next() * 2) === 0 ? 0 : 'x';
    case 4: return null;
    case 5: return Array.from({ length: Math.floor(next() * 3) }, () => jsonValue(next, depth + 1));
    default: {
      // Keys in varying order: equal objects with their keys in another order are duplicates.
      const keys = ['p', 'q', 'r'].filter(() => next() < 0.6);
      if (next() < 0.5) keys.reverse();
      return Object.fromEntries(keys.map((key) => [key, jsonValue(next, depth + 1)]));
    }
  }
}

const stock = (Class: typeof Ajv | typeof Ajv2020) => {
  const ajv = new Class({ strict: false, validateSchema: false });
  formats.default(ajv);
  return ajv;
};

describe('the same verdicts as Ajv', () => {
  for (const [name, Class] of [['draft-07', Ajv], ['2020-12', Ajv2020]] as const) {
    it(`uniqueItems and enum (${name})`, () => {
      const theirs = stock(Class);
      const ours = withLinearKeywords(new Class({ strict: false, validateSchema: false }));
      const next = random(7);
      let invalid = 0;
      for (const items of [undefined, { type: 'object' }, { type: 'array' }, { type: 'integer' }, { type: ['string', 'number'] }]) {
        const schema = { type: 'array', uniqueItems: true, ...(items === undefined ? {} : { items }) };
        const [a, b] = [theirs.compile(schema), ours.compile(schema)];
        for (let n = 0; n < 400; n++) {
          const data = Array.from({ length: Math.floor(next() * 6) }, () => jsonValue(next));
          const verdict = a(data);
          expect(b(data), JSON.stringify([schema, data])).toBe(verdict);
          if (verdict) continue;
          invalid++;
          // Without a scalar item type Ajv compares pairs: the same pair is named.
          if (items === undefined || items.type === 'object' || items.type === 'array') expect(b.errors![0]).toEqual(a.errors![0]);
        }
      }
      for (let n = 0; n < 200; n++) {
        const schema = { enum: Array.from({ length: 1 + Math.floor(next() * 5) }, () => jsonValue(next)) };
        const [a, b] = [theirs.compile(schema), ours.compile(schema)];
        for (let m = 0; m < 10; m++) {
          const data = m < 3 ? structuredClone(schema.enum[m % schema.enum.length]) : jsonValue(next);
          const verdict = a(data);
          expect(b(data), JSON.stringify([schema, data])).toBe(verdict);
          if (!verdict) expect(b.errors![0]).toEqual(a.errors![0]);
        }
      }
      expect(invalid).toBeGreaterThan(100);
    });
  }

  it("format url: ajv-formats' regex on generated strings", () => {
    const regex = fullFormats.url as RegExp;
    const check = withLinearKeywords(new Ajv({ strict: false })).compile({ type: 'string', format: 'url' });
    const pieces = ['http://', 'https://', 'ftp://', 'a', 'b', 'xn--b', '-', '.', '@', ':', '/', ' ', '\u3000', '1', '10.', '192.168.', '1.2.3.4', 'com', '80', '8080', 'é', 'x.io', '.io', '?q', '#f', 'HTTP://', '172.16.', '255'];
    const next = random(11);
    let valid = 0;
    for (let n = 0; n < 20_000; n++) {
      let text = n % 3 === 0 ? '' : pieces[Math.floor(next() * 3)]!;
      const length = Math.floor(next() * 9);
      for (let k = 0; k < length; k++) text += pieces[Math.floor(next() * pieces.length)];
      const verdict = regex.test(text);
      if (verdict) valid++;
      expect(check(text), JSON.stringify(text)).toBe(verdict);
    }
    for (const text of ['http://user:pw@example.com:8080/a@b c', 'http://user:pw@example.com:8080/a@b', 'http://a@b@c.com', 'http://@c.com', 'http://a b@c.com', 'https://10.1.2.3', 'https://11.1.2.3/x', 'ftp://a.b.c.de/', 'http://a/b@c.com']) {
      expect(check(text), text).toBe(regex.test(text));
    }
    expect(valid).toBeGreaterThan(200);
  });
});

/** `n` objects whose one property counts its reads: what Ajv's deep equal and the canonical text read. */
function counted(n: number): { readonly items: object[]; readonly reads: () => number } {
  let reads = 0;
  const items = Array.from({ length: n }, (_, i) => Object.defineProperty({}, 'v', { enumerable: true, get: () => (reads++, i) }));
  return { items, reads: () => reads };
}

describe('the work is linear in the value', () => {
  it("uniqueItems on the output validator: each element read a bounded number of times (Ajv's pair loop read each n times)", () => {
    const validate = outputSchemaValidators.getValidator<unknown>({ type: 'object', properties: { a: { type: 'array', uniqueItems: true } } } as never);
    const { items, reads } = counted(2000);
    expect(validate({ a: items }).valid).toBe(true);
    expect(reads()).toBeLessThanOrEqual(2 * 2000);
    const duplicate = validate({ a: [{ x: [1, { y: 2, z: 3 }] }, 5, { x: [1, { z: 3, y: 2 }] }] });
    expect(duplicate.errorMessage).toBe('data/a must NOT have duplicate items (items ## 0 and 2 are identical)');
  });

  it("enum of objects in a tool's input schema: each argument read a bounded number of times, not once per entry", () => {
    const entries = Array.from({ length: 2000 }, (_, i) => ({ v: i + 0.5 }));
    const tools = [{ name: 't', inputSchema: { type: 'object', properties: { a: { type: 'array', items: { enum: entries } } } } }];
    const { items, reads } = counted(300);
    const outcome = new CanaryArgumentCheck().check('p', tools as never, 't', { a: items });
    expect(outcome.refused?.details).toMatchObject({ pointer: '/a/0', schema_error: 'must be equal to one of the allowed values' });
    expect(reads()).toBeLessThanOrEqual(2 * 300);
    expect(new CanaryArgumentCheck().check('p', tools as never, 't', { a: [{ v: 1999.5 }, { v: 0.5 }] })).toEqual({});
  });

  it("format url on the host's thread (output and input schemas): ajv-formats' backtracking regex never sees the whole string", () => {
    const regex = fullFormats.url as RegExp;
    const lengths: number[] = [];
    // Ajv calls the RegExp object ajv-formats registered: an own `test` on it sees every string it is given.
    Object.defineProperty(regex, 'test', { configurable: true, value: (text: string) => (lengths.push(text.length), RegExp.prototype.test.call(regex, text)) });
    try {
      const hostile = `http://${':'.repeat(3000)}`;
      const output = outputSchemaValidators.getValidator<unknown>({ type: 'object', properties: { u: { type: 'string', format: 'url' }, n: { const: 'linear-url' } } } as never);
      expect(output({ u: hostile }).valid).toBe(false);
      expect(output({ u: 'https://user:pw@example.com:8080/a/b?c' }).valid).toBe(true);
      const tools = [{ name: 't', inputSchema: { type: 'object', properties: { u: { type: 'string', format: 'url' } } } }];
      expect(new CanaryArgumentCheck().check('p', tools as never, 't', { u: hostile }).refused?.details).toMatchObject({ pointer: '/u' });
      expect(Math.max(0, ...lengths)).toBeLessThan(100);
    } finally {
      delete (regex as { test?: unknown }).test;
    }
  });

  it('the validation worker runs the same checks: a hostile url and a 1 MB uniqueItems array are answered, not cut at the deadline', async () => {
    // ajv-formats' regex needs ~100 s for this string (quadratic; 80,000 characters took 7.6 s): past the 10 s deadline.
    const url = JSON.stringify({ type: 'object', properties: { u: { type: 'string', format: 'url' } } });
    const hostile = await validateOffThread({ dialect: 'output', schemaText: url, value: { u: `http://${':'.repeat(300_000)}` }, owner: 'test' });
    expect(hostile).toMatchObject({ kind: 'invalid', pointer: '/u', message: 'data/u must match format "url"' });
    const fine = await validateOffThread({ dialect: 'output', schemaText: url, value: { u: `http://user:pw@example.com/${':@'.repeat(150_000)}` }, owner: 'test' });
    expect(fine.kind).toBe('valid');
    // Ajv's pair loop: 57 s for 160,000 elements.
    const unique = JSON.stringify({ type: 'array', uniqueItems: true });
    const numbers = Array.from({ length: 160_000 }, (_, i) => i);
    expect((await validateOffThread({ dialect: 'response', schemaText: unique, value: numbers, owner: 'test' })).kind).toBe('valid');
    const twice = await validateOffThread({ dialect: 'response', schemaText: unique, value: [...numbers, 7], owner: 'test' });
    expect(twice).toMatchObject({ kind: 'invalid', pointer: '', message: 'must NOT have duplicate items (items ## 7 and 160000 are identical)' });
  }, 60_000);
});
