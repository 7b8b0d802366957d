/**
 * The validation worker of src/manifest/answerValidation.ts gives the same
 * verdicts and texts as the host's thread (the output validator of
 * outputSchemaValidators.ts, the response check's Ajv 2020), runs patterns
 * RE2 can express in RE2 as the thread does, and the size check that routes
 * an answer there stops early.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { answerLargerThan, offThreadValidationState, validateOffThread } from '../../src/manifest/answerValidation.js';
import { untrustedPatternEngine } from '../../src/manifest/untrustedPatterns.js';
import { outputSchemaValidators } from '../../src/shapes/mcp/outputSchemaValidators.js';

const LIMIT = pluginAnswerLimits.offThreadValidationBytes;

describe('answerLargerThan', () => {
  it('follows the JSON size of the answer around the threshold', () => {
    for (const value of [{ s: 'x'.repeat(LIMIT - 20) }, { a: Array(LIMIT / 4).fill(0) }, { o: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`key${i}`, i])) }, 'x', null, [[[]]]]) {
      const bytes = JSON.stringify(value).length;
      // The estimate may differ from the text by a number's digits and a comma; never by a factor.
      const over = answerLargerThan(value, LIMIT);
      if (bytes > LIMIT * 2) expect(over).toBe(true);
      if (bytes * 2 < LIMIT) expect(over).toBe(false);
    }
    expect(answerLargerThan({ s: 'x'.repeat(LIMIT) }, LIMIT)).toBe(true);
    expect(answerLargerThan({ a: Array(LIMIT).fill({}) }, LIMIT)).toBe(true);
  });
});

describe('validateOffThread', () => {
  const schema = { type: 'object', properties: { n: { type: 'number' }, s: { type: 'string', pattern: '^(a+)+$' }, e: { type: 'string', format: 'email' } }, required: ['n'] };
  const text = JSON.stringify(schema);

  it('gives the output validator its verdicts and error text', async () => {
    const thread = outputSchemaValidators.getValidator<unknown>(schema as never);
    for (const value of [{ n: 1, s: 'aaa', e: 'a@b.example' }, { n: 'one', e: 'not an email' }, {}, { n: 1, s: `${'a'.repeat(40)}!` }]) {
      const here = thread(value);
      const there = await validateOffThread({ dialect: 'output', schemaText: text, value, owner: 'test' });
      expect(there.kind).toBe(here.valid ? 'valid' : 'invalid');
      if (there.kind === 'invalid') expect(there.message).toBe(here.errorMessage);
    }
  });

  it("gives the response check's first error and pointer", async () => {
    const ajv = new Ajv2020({ strict: false, addUsedSchema: false, code: { regExp: untrustedPatternEngine } });
    formats.default(ajv);
    const check = ajv.compile(schema);
    for (const value of [{ n: 1 }, { n: 1, e: 'nope' }, { n: 2, s: 'b' }]) {
      const valid = check(value);
      const there = await validateOffThread({ dialect: 'response', schemaText: text, value, owner: 'test' });
      if (valid) expect(there.kind).toBe('valid');
      else expect(there).toMatchObject({ kind: 'invalid', pointer: check.errors![0]!.instancePath, message: check.errors![0]!.message });
    }
  });

  it('runs a pattern RE2 can express in RE2 (V8 would backtrack for ever on this string), and cuts one it cannot at the deadline', async () => {
    // 2^40 steps on V8's engine: answered at all means RE2 ran it.
    const linear = await validateOffThread({ dialect: 'output', schemaText: text, value: { n: 1, s: `${'a'.repeat(40)}!` }, owner: 'test' });
    expect(linear.kind).toBe('invalid');
    const before = offThreadValidationState().timedOut;
    const lookahead = JSON.stringify({ type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)(a+)+$' } } });
    const cut = await validateOffThread({ dialect: 'output', schemaText: lookahead, value: { s: `${'a'.repeat(40)}!` }, owner: 'test' });
    expect(cut.kind).toBe('timeout');
    expect(offThreadValidationState()).toMatchObject({ busy: 0, waiting: 0, timedOut: before + 1 });
  }, 60_000);
});
