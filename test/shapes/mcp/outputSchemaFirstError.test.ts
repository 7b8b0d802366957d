/**
 * An output schema's validation stops at the first violation (R14 F3): with
 * Ajv's `allErrors` a `required` of many names under `items` made one error
 * object per missing name per element, 4 million for a 4 KB answer (12 s of
 * the host's thread, ~1 GB), and a 48 KB answer ran the host out of heap. The
 * work is asserted through the errors made, not through time.
 */
import { describe, expect, it } from 'vitest';
import { validateOffThread } from '../../../src/manifest/answerValidation.js';
import { outputSchemaValidators } from '../../../src/shapes/mcp/outputSchemaValidators.js';

const names = Array.from({ length: 200 }, (_, i) => `n${i.toString(36)}`);
const schema = { type: 'object', properties: { a: { type: 'array', items: { required: names } } } };
const violations = (text: string): number => text.split('must have required property').length - 1;

describe('output schema validation reports the first violation only', () => {
  it("on the host's thread: one error for 200 missing names x 300 elements", () => {
    const validate = outputSchemaValidators.getValidator<unknown>(schema as never);
    const result = validate({ a: Array.from({ length: 300 }, () => ({})) });
    expect(result.valid).toBe(false);
    expect(result.errorMessage).toBe("data/a/0 must have required property 'n0'");
    expect(violations(result.errorMessage!)).toBe(1);
    // What is valid does not change.
    expect(validate({ a: [Object.fromEntries(names.map((name) => [name, 1]))] }).valid).toBe(true);
  });

  it("on the validation worker (the 'output' dialect): the same single error", async () => {
    const value = { a: Array.from({ length: 3000 }, () => ({})) };
    const verdict = await validateOffThread({ dialect: 'output', schemaText: JSON.stringify(schema), value, owner: 'test' });
    expect(verdict).toMatchObject({ kind: 'invalid', pointer: '/a/0', message: "data/a/0 must have required property 'n0'" });
  }, 60_000);
});
