/**
 * Keeping the secret values the host knows out of the errors of calls. A
 * plugin's tool error is its own text: a server that puts its API key in
 * the error it returns (server-google-maps quotes the request URL, key and
 * all) would hand it to the application's logs and every gateway client.
 */
import { reworded, type HostError } from '../errors/HostError.js';
import { PARSER_QUOTE_END, redactJsonStrings, type SecretRedactor } from './knownSecrets.js';

/**
 * `details` redacted, and its `raw_line` (a plugin's line the host copied
 * up to a bound, `raw_line_truncated` when it cut it) with the first
 * characters of a secret the cut fell in replaced too.
 */
function detailsWithoutSecrets(details: Readonly<Record<string, unknown>>, redactor: SecretRedactor): Readonly<Record<string, unknown>> {
  let redacted = redactJsonStrings(details, redactor) as Readonly<Record<string, unknown>>;
  const reason = redacted.reason;
  if (typeof reason === 'string') {
    const quoted = redactor.redactCutBefore(reason, PARSER_QUOTE_END);
    if (quoted !== reason) redacted = { ...redacted, reason: quoted };
  }
  const line = redacted.raw_line;
  if (redacted.raw_line_truncated !== true || typeof line !== 'string') return redacted;
  const cut = redactor.redactCutEnd(line);
  return cut === line ? redacted : { ...redacted, raw_line: cut };
}

/**
 * `error` with every known secret in its message and details replaced by
 * `[redacted]` (and a secret's first characters where the host cut a
 * plugin's line short inside it, or a parser's quote of the line ends), or `error` itself when nothing was (or
 * nothing is known). A redacted error leaves out its cause, which may quote
 * the same text.
 */
export function errorWithoutSecrets(error: HostError, redactor: SecretRedactor): HostError {
  if (redactor.empty) return error;
  const message = redactor.redactCutBefore(error.message, PARSER_QUOTE_END);
  const details = detailsWithoutSecrets(error.details, redactor);
  if (message === error.message && details === error.details) return error;
  return reworded(error, { message, details, dropCause: true });
}
