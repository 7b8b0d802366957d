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

describe('failure messages quote the plugin stderr the error carries', () => {
  it('expectOk and expectHostError add the last stderr lines under the code and message', () => {
    const crashed = hostError('PLUGIN_CRASHED', 'exited with code 3', { details: { stderr_tail: 'starting\nTypeError: boom\n    at main (server.mjs:4:9)\n' } });
    expect(() => expectOk(err(crashed))).toThrow(
      'expected success, got PLUGIN_CRASHED: exited with code 3\nplugin stderr (last lines):\n  starting\n  TypeError: boom\n      at main (server.mjs:4:9)',
    );
    expect(() => expectHostError(err(crashed), 'PLUGIN_TIMEOUT')).toThrow('plugin stderr (last lines):\n  starting\n  TypeError: boom');
  });

  it('an empty tail adds nothing', () => {
    expect(() => expectOk(err(hostError('PLUGIN_CRASHED', 'gone', { details: { stderr_tail: '\n' } })))).toThrow(/^expected success, got PLUGIN_CRASHED: gone$/);
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
