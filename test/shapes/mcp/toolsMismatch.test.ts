import { describe, expect, it } from 'vitest';
import { toolsMismatch } from '../../../src/shapes/mcp/toolsMismatch.js';

describe('toolsMismatch', () => {
  it('accepts the same set in any order', () => {
    expect(toolsMismatch(['a', 'b'], ['b', 'a'])).toBeUndefined();
  });

  it('names undeclared and missing tools, sorted, under PLUGIN_TOOLS_MISMATCH', () => {
    const error = toolsMismatch(['search', 'book', 'cancel'], ['zeta', 'search', 'alpha']);
    expect(error?.code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect(error?.details).toEqual({ undeclared: ['alpha', 'zeta'], missing: ['book', 'cancel'] });
    expect(error?.message).toBe('plugin lists tools its manifest does not declare (alpha, zeta) and does not list declared tools (book, cancel)');
  });

  it('compares unprefixed names exactly (a host prefix is a mismatch)', () => {
    expect(toolsMismatch(['hello'], ['plug.hello.hello'])?.details).toEqual({ undeclared: ['plug.hello.hello'], missing: ['hello'] });
  });
});
