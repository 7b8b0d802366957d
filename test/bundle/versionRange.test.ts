/** The npm-style ranges of MCPB `compatibility.runtimes`, against interpreter versions. */
import { describe, expect, it } from 'vitest';
import { satisfiesRange } from '../../src/bundle/versionRange.js';

describe('satisfiesRange', () => {
  it.each([
    ['v20.20.2', '>=18.0.0', true],
    ['v20.20.2', '>=22', false],
    ['3.11.2', '>=3.8 <4', true],
    ['3.11.2', '^3.12', false],
    ['3.12.1', '^3.12', true],
    ['v20.1.0', '18.x || 20.x', true],
    ['v21.0.0', '18.x || 20.x', false],
    ['v20.1.0', '~20.1.0', true],
    ['v20.2.0', '~20.1', false],
    ['v20.1.0', '*', true],
    ['v20.1.0', '>= 18', true],
    ['v20.1.0', '<=20', true],
    ['v21.0.0', '<=20', false],
    ['v20.1.0', '>20', false],
    ['v21.0.0', '>20', true],
    ['v20.1.0', '18.0.0 - 20.5', true],
    ['0.2.5', '^0.2.3', true],
    ['0.3.0', '^0.2.3', false],
  ])('%s in %s is %s', (version, range, expected) => {
    expect(satisfiesRange(version, range)).toBe(expected);
  });

  it('cannot judge an unreadable version or range', () => {
    expect(satisfiesRange('x', '>=1')).toBeUndefined();
    expect(satisfiesRange('v20.0.0', '>=abc')).toBeUndefined();
  });
});
