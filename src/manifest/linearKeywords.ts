/**
 * Keywords whose own work Ajv makes super-linear in the value, replaced by
 * linear checks of the same verdicts in every Ajv instance that validates
 * data a plugin or a caller sent against a schema the project did not write
 * (review R14): output schemas (outputSchemaValidators.ts), manifest request
 * and response schemas (callSchemas.ts, canaryArguments.ts) and the answer
 * validation worker (answerValidation.ts).
 *
 * - `uniqueItems`: Ajv compares every pair of elements whenever `items` names
 *   no scalar type (a 1 MB array: 57 s). Here each element is bucketed by a
 *   canonical JSON text (object keys sorted) and a hit confirmed with Ajv's
 *   own deep `equal`: one pass. The error is Ajv's (keyword `uniqueItems`,
 *   params `i` and `j`, the last duplicate and the one before it).
 * - `enum`: Ajv tests each value against every entry in turn (5,000 entries x
 *   a 1 MB answer: 5 s of hits). Here primitives are looked up in a Set and
 *   objects and arrays by the same canonical text, confirmed with `equal`.
 * - `format: url`: ajv-formats' regex backtracks quadratically in V8 over its
 *   optional `user@` part (80 KB: 7.6 s). Here the `user@` split is chosen
 *   in one pass and only the host and port part, which holds no `@` or `/`,
 *   goes through ajv-formats' own regex for it (taken from its source, so
 *   the verdicts stay ajv-formats'); the heads tried are disjoint, so the
 *   regex sees each character at most once.
 *
 * The code is one source text run in two places: here (compiled with
 * `new Function` once) and inside the validation worker, which is eval'd
 * CommonJS and cannot import this module.
 */

import type { Ajv } from 'ajv';
import equalModule from 'ajv/dist/runtime/equal.js';
import formats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';

/** Ajv's `equal` (fast-deep-equal), what its own `uniqueItems`/`enum` compare with. */
export type DeepEqual = (a: unknown, b: unknown) => boolean;

/**
 * The body of `(ajv, equal, urlRegex) => void`: replaces the keywords above
 * in `ajv` (after ajv-formats was added to it). `urlRegex` is ajv-formats'
 * `fullFormats.url`.
 */
export const LINEAR_KEYWORDS_SOURCE = String.raw`
  // A text equal for two JSON values exactly when Ajv's deep equal holds (key order ignored, -0 and 0 alike).
  const canonical = (value) => {
    if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
    if (Array.isArray(value)) return '[' + value.map(canonical).join(',') + ']';
    return '{' + Object.keys(value).sort().map((key) => JSON.stringify(key) + ':' + canonical(value[key])).join(',') + '}';
  };
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: true,
    compile(schema) {
      if (schema !== true) return () => true;
      const validate = (data) => {
        // canonical text -> indices of the distinct values with it (one unless two differ and share a text)
        const seen = new Map();
        let found;
        for (let i = 0; i < data.length; i++) {
          const key = canonical(data[i]);
          const bucket = seen.get(key);
          if (bucket === undefined) { seen.set(key, [i]); continue; }
          let k = bucket.length - 1;
          while (k >= 0 && !equal(data[bucket[k]], data[i])) k--;
          if (k < 0) { bucket.push(i); continue; }
          found = { i, j: bucket[k] };
          bucket[k] = i;
        }
        if (found === undefined) return true;
        validate.errors = [{ keyword: 'uniqueItems', params: found, message: 'must NOT have duplicate items (items ## ' + found.j + ' and ' + found.i + ' are identical)' }];
        return false;
      };
      return validate;
    },
  });
  ajv.removeKeyword('enum');
  ajv.addKeyword({
    keyword: 'enum',
    schemaType: 'array',
    errors: true,
    compile(schema) {
      const primitives = new Set();
      const composites = new Map();
      for (const entry of schema) {
        if (entry === null || typeof entry !== 'object') primitives.add(entry);
        else {
          const key = canonical(entry);
          composites.set(key, [...(composites.get(key) ?? []), entry]);
        }
      }
      const validate = (data) => {
        const hit = data === null || typeof data !== 'object'
          ? primitives.has(data)
          : composites.size > 0 && (composites.get(canonical(data)) ?? []).some((entry) => equal(entry, data));
        if (hit) return true;
        validate.errors = [{ keyword: 'enum', params: { allowedValues: schema }, message: 'must be equal to one of the allowed values' }];
        return false;
      };
      return validate;
    },
  });
  const before = '^(?:https?|ftp):\\/\\/(?:\\S+(?::\\S*)?@)?';
  const after = '(?:\\/[^\\s]*)?$';
  const source = urlRegex.source;
  if (!source.startsWith(before) || !source.endsWith(after)) throw new Error('ajv-formats url format is not the one linearKeywords.ts splits');
  const head = new RegExp('^' + source.slice(before.length, source.length - after.length) + '$', urlRegex.flags);
  const scheme = new RegExp('^(?:https?|ftp):\\/\\/', urlRegex.flags);
  const space = /\s/u;
  ajv.addFormat('url', (text) => {
    const start = scheme.exec(text);
    if (start === null) return false;
    const rest = text.slice(start[0].length);
    let firstSpace = -1;
    let lastSpace = -1;
    const ats = [];
    const slashes = [];
    for (let i = 0; i < rest.length; i++) {
      const c = rest[i];
      if (c === '@') ats.push(i);
      else if (c === '/') slashes.push(i);
      else if (space.test(c)) { if (firstSpace < 0) firstSpace = i; lastSpace = i; }
    }
    // Where the host may start: at 0 (no user part) or after an '@' with a non-empty user part free of white space.
    // The host and port hold no '@' or '/', so a head runs to the first '/' after it and must hold no '@'.
    let s = 0;
    for (let k = -1; k < ats.length; k++) {
      const from = k < 0 ? 0 : ats[k] + 1;
      if (k >= 0 && (ats[k] < 1 || (firstSpace >= 0 && firstSpace < ats[k]))) continue;
      while (s < slashes.length && slashes[s] < from) s++;
      const end = s < slashes.length ? slashes[s] : rest.length;
      if (k + 1 < ats.length && ats[k + 1] < end) continue;
      if (lastSpace >= end) continue;
      if (head.test(rest.slice(from, end))) return true;
    }
    return false;
  });
`;

/** Replaces `uniqueItems`, `enum` and the `url` format of `ajv` (ajv-formats already added) by their linear checks. */
// One source for this thread and the eval'd worker (see above); it is the project's own text, never a plugin's.
export const addLinearKeywords = new Function('ajv', 'equal', 'urlRegex', LINEAR_KEYWORDS_SOURCE) as (ajv: unknown, equal: DeepEqual, urlRegex: RegExp) => void;

// Both are CommonJS with a `default` export: under Node's ESM loader the default import is the exports object.
const pickDefault = <T>(module: unknown): T => ((module as { default?: T }).default ?? module) as T;

/** Ajv's deep equal, the one its own keywords use. */
const deepEqual = pickDefault<DeepEqual>(equalModule);

/**
 * `ajv`, with ajv-formats added, and `uniqueItems`, `enum` and `format: url`
 * replaced by their linear checks (see above). Call before compiling.
 */
export function withLinearKeywords<A extends Ajv>(ajv: A): A {
  formats.default(ajv);
  addLinearKeywords(ajv, deepEqual, fullFormats.url as RegExp);
  return ajv;
}
