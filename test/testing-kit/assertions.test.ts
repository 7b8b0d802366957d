import { AssertionError } from 'node:assert';
import { err, ok } from 'neverthrow';
import { describe, expect, it } from 'vitest';
import { hostError } from '../../src/index.js';
import { expectHostError, expectOk } from '../../src/testing/index.js';

describe('expectOk', () => {
  it('returns the value of a success', () => {
    expect(expectOk(ok(42))).toBe(42);
  });

  it('throws an AssertionError naming the code and message of a failure', () => {
    const thrown = (() => {
      try {
        expectOk(err(hostError('PLUGIN_TIMEOUT', 'too slow')));
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(AssertionError);
    expect(thrown).toMatchObject({ message: 'expected success, got PLUGIN_TIMEOUT: too slow', actual: 'PLUGIN_TIMEOUT', expected: 'ok' });
  });
});

describe('expectHostError', () => {
  it('returns the error when the code matches', () => {
    const error = hostError('PLUGIN_CRASHED', 'gone');
    expect(expectHostError(err(error), 'PLUGIN_CRASHED')).toBe(error);
  });

  it('throws when the result succeeded', () => {
    expect(() => expectHostError(ok('fine'), 'PLUGIN_CRASHED')).toThrow('expected PLUGIN_CRASHED, but the result succeeded');
  });

  it('throws naming both codes when another code came back', () => {
    expect(() => expectHostError(err(hostError('PLUGIN_TIMEOUT', 'slow')), 'PLUGIN_CRASHED')).toThrow('expected PLUGIN_CRASHED, got PLUGIN_TIMEOUT: slow');
  });
});
