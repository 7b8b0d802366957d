import { describe, expect, it } from 'vitest';
import { resolveRelativeDates } from '../../src/host/relativeDates.js';

describe('canary relative date specifiers', () => {
  const now = Date.UTC(2026, 10, 25, 21, 0, 0);
  it('resolves +Nd and +Nw anywhere in the arguments, leaving other values alone', () => {
    expect(resolveRelativeDates({ depart: '+7d', back: ['+2w', 'SFO', 3], nested: { x: '+0d', y: '+7x' } }, now)).toEqual({
      depart: '2026-12-02', back: ['2026-12-09', 'SFO', 3], nested: { x: '2026-11-25', y: '+7x' },
    });
  });
  it('does not let a __proto__ key change the prototype of the result', () => {
    const out = resolveRelativeDates(JSON.parse('{"__proto__":{"polluted":true}}'), now) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
