/**
 * The host's log records without the secret values it knows. Plugins' text
 * reaches the application's logger in many places (a stdout line the host
 * drops, quoted in the record's details; a failed call's message; a canary's
 * error), and an application ships its logs further than any plugin output.
 */
import type { Logger } from '../ports/ports.js';
import { PARSER_QUOTE_END, redactJsonStrings, type KnownSecrets } from './knownSecrets.js';

/**
 * `logger` with each record's message and fields (every string and object
 * key, as in log events) passed through the redactor `known` has at the
 * time of the record: values learnt at a later launch are redacted from
 * later records.
 */
export function loggerWithoutSecrets(logger: Logger, known: KnownSecrets): Logger {
  const level =
    (write: (fields: Record<string, unknown>, message: string) => void) =>
    (fields: Record<string, unknown>, message: string): void => {
      const redactor = known.redactor;
      if (redactor.empty) return write(fields, message);
      // A message may quote a parser's error on a plugin line (a failed call's message), which ends its quote with PARSER_QUOTE_END.
      write(redactJsonStrings(fields, redactor) as Record<string, unknown>, redactor.redactCutBefore(message, PARSER_QUOTE_END));
    };
  return {
    debug: level((fields, message) => logger.debug(fields, message)),
    info: level((fields, message) => logger.info(fields, message)),
    warn: level((fields, message) => logger.warn(fields, message)),
    error: level((fields, message) => logger.error(fields, message)),
  };
}
