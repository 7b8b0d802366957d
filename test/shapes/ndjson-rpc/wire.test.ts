import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseResponseLine } from '../../../src/shapes/ndjson-rpc/wire.js';

describe('parseResponseLine', () => {
  it('accepts exactly one of result and error, with a string or number id', () => {
    expect(parseResponseLine('{"id":1,"result":null}')).toEqual({ kind: 'response', response: { id: 1, result: null } });
    expect(parseResponseLine('{"id":"a","error":{"code":7,"message":"m","data":[1]}}')).toEqual({
      kind: 'response',
      response: { id: 'a', error: { code: 7, message: 'm', data: [1] } },
    });
  });

  it.each([
    ['{"id":1,"result":1,"error":{"code":1,"message":"m"}}', 1, /both/],
    ['{"id":1}', 1, /neither/],
    ['{"result":1}', undefined, /"id"/],
    ['{"id":{"x":1},"result":1}', undefined, /"id"/],
    ['{"id":1,"error":"boom"}', 1, /not an object/],
    ['{"id":1,"error":{"code":1.5,"message":"m"}}', 1, /integer/],
    ['{"id":1,"error":{"code":1}}', 1, /message/],
    ['[1,2]', undefined, /not a JSON object/],
    ['42', undefined, /not a JSON object/],
  ])('calls %s an invalid response', (line, id, reason) => {
    const parsed = parseResponseLine(line);
    expect(parsed.kind).toBe('invalid-response');
    if (parsed.kind === 'invalid-response') {
      expect(parsed.id).toBe(id);
      expect(parsed.reason).toMatch(reason);
    }
  });

  it('calls anything JSON.parse rejects invalid JSON (property)', () => {
    fc.assert(
      fc.property(fc.string(), (line) => {
        let parses = true;
        try {
          JSON.parse(line);
        } catch {
          parses = false;
        }
        expect(parseResponseLine(line).kind === 'invalid-json').toBe(!parses);
      }),
    );
  });
});
