/**
 * The bounded pattern engine gives every pattern JavaScript's meaning: a
 * pattern RE2 runs (rewritten where RE2 reads `.` or `\s` differently) and
 * one it cannot (run by V8 on the worker) answer as V8's RegExp with Ajv's
 * `u` flag does, on strings chosen where the two dialects differ.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { PatternBudgetExceeded, untrustedPatternEngine, withPatternBudget } from '../../src/manifest/untrustedPatterns.js';

const PATTERNS = [
  '^.$', '^a.c$', '^\\s$', '^[\\s]$', '^[a\\s]+$', '^\\S+$', '^[^\\s]+$', 'a$', '^a', '^\\w+$', '^\\d{2,4}$', '\\bword\\b',
  '^\\u00e9+$', '^\\u{1F600}$', '^\\p{L}+$', '^[^]$', '^x[]?$', '^(?:ab|cd)*$', '^[a-z]{2,}$', '^\\.\\*$',
  // RE2 cannot run these: V8 does, on the worker.
  '^(?!\\.)[a-z.]+$', '^(?<=a)b', '^(a)\\1$', '^[a-z]{1001}$',
];
const STRINGS = ['a', 'b', '\r', '\n', '\u2028', '\u00a0', '\u3000', '\ufeff', ' ', 'abc', 'a\rc', 'a\nc', 'a\n', 'éé', '😀', 'ab cd', 'word', 'a word here', '12', '12345', '.x', 'x.', 'aa', '.*', 'x', 'abcd', ''];

describe('the bounded pattern engine matches as V8 does', () => {
  it('every pattern, on strings where RE2 and JavaScript read patterns differently', () => {
    const ajv = new Ajv({ strict: false, code: { regExp: untrustedPatternEngine } });
    for (const pattern of PATTERNS) {
      const check = ajv.compile({ type: 'string', pattern });
      const native = new RegExp(pattern, 'u');
      for (const text of STRINGS) {
        expect([pattern, text, withPatternBudget(() => check(text))]).toEqual([pattern, text, native.test(text)]);
      }
    }
  });

  it('a pattern JavaScript refuses is refused at compile, as before', () => {
    const ajv = new Ajv({ strict: false, code: { regExp: untrustedPatternEngine } });
    expect(() => ajv.compile({ type: 'string', pattern: '(?i)a' })).toThrow(SyntaxError);
  });

  it('patternProperties keys run through the engine too, and one validation shares one budget', () => {
    const ajv = new Ajv({ strict: false, allErrors: true, code: { regExp: untrustedPatternEngine } });
    const check = ajv.compile({ type: 'object', patternProperties: { '^(?=a)(a+)+$': { type: 'string' } }, additionalProperties: false });
    expect(withPatternBudget(() => check({ aaa: 's' }))).toBe(true);
    expect(withPatternBudget(() => check({ b: 's' }))).toBe(false);
    const evil = { [`${'a'.repeat(40)}!`]: 's', [`${'a'.repeat(41)}!`]: 's' };
    expect(() => withPatternBudget(() => check(evil))).toThrow(PatternBudgetExceeded);
  });
});
