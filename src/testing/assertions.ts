import { AssertionError } from 'node:assert';
import type { Result } from 'neverthrow';
import type { HostError, HostErrorCode } from '../index.js';

/** How many of the plugin's last stderr lines a failure message quotes. */
const STDERR_LINES = 20;

/**
 * `CODE: message`, followed by the plugin's last stderr lines when the error
 * carries them (a crash, a refused handshake): the cause a test failure needs.
 */
export function describeFailure(error: HostError): string {
  const tail = error.details.stderr_tail;
  const lines = typeof tail === 'string' ? tail.trimEnd().split('\n').slice(-STDERR_LINES) : [];
  const quoted = lines.length === 0 || lines.every((l) => l.trim() === '') ? '' : `\nplugin stderr (last lines):\n${lines.map((l) => `  ${l}`).join('\n')}`;
  return `${error.code}: ${error.message}${quoted}`;
}

/**
 * The value of an `ok` result; throws an `AssertionError` naming the host
 * error's code and message otherwise. Meant for test suites, where a thrown
 * assertion is the way to fail.
 */
export function expectOk<T>(result: Result<T, HostError>): T {
  if (result.isOk()) return result.value;
  throw new AssertionError({ message: `expected success, got ${describeFailure(result.error)}`, actual: result.error.code, expected: 'ok', operator: 'expectOk' });
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
    throw new AssertionError({ message: `expected ${code}, got ${describeFailure(result.error)}`, actual: result.error.code, expected: code, operator: 'expectHostError' });
  }
  return result.error;
}
