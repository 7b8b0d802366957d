/**
 * Keeping the secret values the host knows out of the errors of calls. A
 * plugin's tool error is its own text: a server that puts its API key in
 * the error it returns (server-google-maps quotes the request URL, key and
 * all) would hand it to the application's logs and every gateway client.
 */
import { reworded, type HostError } from '../errors/HostError.js';
import { redactJsonStrings, type SecretRedactor } from './knownSecrets.js';

/**
 * `error` with every known secret in its message and details replaced by
 * `[redacted]`, or `error` itself when nothing was (or nothing is known).
 * A redacted error leaves out its cause, which may quote the same text.
 */
export function errorWithoutSecrets(error: HostError, redactor: SecretRedactor): HostError {
  if (redactor.empty) return error;
  const message = redactor.redact(error.message);
  const details = redactJsonStrings(error.details, redactor) as Readonly<Record<string, unknown>>;
  if (message === error.message && details === error.details) return error;
  return reworded(error, { message, details, dropCause: true });
}
