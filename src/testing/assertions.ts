import { AssertionError } from 'node:assert';
import type { Result } from 'neverthrow';
import type { HostError, HostErrorCode } from '../index.js';

const describe = (error: HostError): string => `${error.code}: ${error.message}`;

/**
 * The value of an `ok` result; throws an `AssertionError` naming the host
 * error's code and message otherwise. Meant for test suites, where a thrown
 * assertion is the way to fail.
 */
export function expectOk<T>(result: Result<T, HostError>): T {
  if (result.isOk()) return result.value;
  throw new AssertionError({ message: `expected success, got ${describe(result.error)}`, actual: result.error.code, expected: 'ok', operator: 'expectOk' });
}

/**
 * The `HostError` of a failed result, after checking its stable code; throws
 * an `AssertionError` when the result succeeded or failed with another code.
 */
export function expectHostError<T>(result: Result<T, HostError>, code: HostErrorCode): HostError {
  if (result.isOk()) {
    throw new AssertionError({ message: `expected ${code}, but the result succeeded`, actual: 'ok', expected: code, operator: 'expectHostError' });
  }
  if (result.error.code !== code) {
    throw new AssertionError({ message: `expected ${code}, got ${describe(result.error)}`, actual: result.error.code, expected: code, operator: 'expectHostError' });
  }
  return result.error;
}
