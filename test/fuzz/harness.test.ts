/**
 * The harness itself: each guard fails when what it guards against happens,
 * so a fuzz run that passes means something.
 */
import { err, ok } from 'neverthrow';
import { afterEach, describe, expect, it } from 'vitest';
import { hostError } from '../../src/errors/HostError.js';
import { assertPristinePrototypes, expectHostError, expectResult, guardedCase } from './harness.js';

const polluted = Object.prototype as Record<string, unknown>;

afterEach(() => {
  delete polluted.fuzzPolluted;
  delete (Array.prototype as unknown as Record<string, unknown>).fuzzPolluted;
  assertPristinePrototypes();
});

describe('fuzz harness', () => {
  it('detects a key added to Object.prototype or Array.prototype', () => {
    polluted.fuzzPolluted = true;
    expect(() => assertPristinePrototypes()).toThrow(/Object\.prototype/);
    delete polluted.fuzzPolluted;
    (Array.prototype as unknown as Record<string, unknown>).fuzzPolluted = 1;
    expect(() => assertPristinePrototypes()).toThrow(/Array\.prototype/);
  });

  it('detects a replaced built-in method', () => {
    const original = Object.prototype.valueOf;
    let caught: unknown;
    Object.prototype.valueOf = () => 'x';
    try {
      assertPristinePrototypes();
    } catch (error) {
      caught = error;
    } finally {
      Object.prototype.valueOf = original;
    }
    expect(String(caught)).toMatch(/valueOf was replaced/);
  });

  it('fails a case that is slow twice, and passes the duration of a fast one', () => {
    const busy = (ms: number): void => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    expect(() => guardedCase(() => busy(30), () => {}, 5)()).toThrow(/over the 5 ms bound/);
    const seen: number[] = [];
    guardedCase(() => {}, (ms) => seen.push(ms))();
    expect(seen).toHaveLength(1);
  });

  it('runs the prototype check after the body', () => {
    const polluting = guardedCase(() => {
      polluted.fuzzPolluted = true;
    });
    expect(() => polluting()).toThrow(/Object\.prototype/);
  });

  it('accepts only Results whose error is a registered HostError', () => {
    expectResult(ok(1));
    expectResult(err(hostError('SERVICE_DOWN', 'down')), ['SERVICE_DOWN']);
    expect(() => expectResult(err(hostError('SERVICE_DOWN', 'down')), ['INVALID_ARGS'])).toThrow();
    expect(() => expectResult(err(new Error('plain')))).toThrow();
    expect(() => expectResult({ isErr: () => false } as never)).toThrow(/not a neverthrow Result/);
    expect(() => expectHostError({ code: 'SERVICE_DOWN', message: 'forged' })).toThrow();
  });
});
