import { ERROR_CODES, type HostErrorCode } from './registry.js';

/** Optional fields of a {@link HostError} beyond its code and message. */
export interface HostErrorFields {
  /** Structured, JSON-serializable facts about the failure. */
  readonly details?: Readonly<Record<string, unknown>>;
  /** Overrides the registry's default retryability. */
  readonly retryable?: boolean;
  /** A positive delay before retrying, in milliseconds. */
  readonly retry_after_ms?: number;
  /** The code the plugin itself reported, when the host translated it. */
  readonly source_error_code?: string;
  /** The underlying error. */
  readonly cause?: unknown;
  /** Overrides the registry hint with a more specific one. */
  readonly hint?: string;
}

// Messages quote plugin output and manifest text; a control character there
// could drive the terminal of whoever reads the message. Tab and newline stay.
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

function printable(message: string): string {
  return message.replace(UNPRINTABLE, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * The one error type of the library. Every expected failure is returned as a
 * `HostError` inside an `err` Result, never thrown. Control characters other
 * than tab and newline in the message are escaped as `\xNN`.
 */
export class HostError extends Error {
  /** The stable code; match on this, never on the message. */
  readonly code: HostErrorCode;
  /** What to do about it (from the registry unless overridden). */
  readonly hint: string;
  /** Whether the same request may be retried unchanged. */
  readonly retryable: boolean;
  /** A positive delay before retrying, in milliseconds, when known. */
  readonly retry_after_ms: number | undefined;
  /** The plugin's own error code, when the host translated one. */
  readonly source_error_code: string | undefined;
  /** Structured facts about the failure. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: HostErrorCode, message: string, fields: HostErrorFields = {}) {
    super(printable(message), fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = 'HostError';
    const info = ERROR_CODES[code];
    this.code = code;
    this.hint = fields.hint ?? info.hint;
    this.retryable = fields.retryable ?? info.retryable;
    this.retry_after_ms = fields.retry_after_ms;
    this.source_error_code = fields.source_error_code;
    this.details = fields.details ?? {};
  }

  /** A plain object for logs and `--json` output (no stack, no cause object). */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      code: this.code,
      message: this.message,
      hint: this.hint,
      retryable: this.retryable,
    };
    if (this.retry_after_ms !== undefined) out.retry_after_ms = this.retry_after_ms;
    if (this.source_error_code !== undefined) out.source_error_code = this.source_error_code;
    if (Object.keys(this.details).length > 0) out.details = this.details;
    return out;
  }
}

/** Shorthand for `new HostError(...)`. */
export function hostError(code: HostErrorCode, message: string, fields?: HostErrorFields): HostError {
  return new HostError(code, message, fields);
}

/**
 * The same failure with more facts: `extra` is merged over the details, and
 * the code, message, hint and retryability are kept; the original becomes the
 * cause. `retry_after_ms` and `source_error_code` are not carried over.
 */
export function withDetails(error: HostError, extra: Readonly<Record<string, unknown>>): HostError {
  return new HostError(error.code, error.message, {
    details: { ...error.details, ...extra },
    cause: error,
    hint: error.hint,
    retryable: error.retryable,
  });
}

/**
 * The same failure with some of what it says replaced: the code,
 * retryability, `retry_after_ms` and `source_error_code` are kept, and so is
 * the cause unless `dropCause` (a cause that may quote what was replaced).
 */
export function reworded(
  error: HostError,
  changes: { readonly message?: string; readonly details?: Readonly<Record<string, unknown>>; readonly hint?: string; readonly dropCause?: boolean },
): HostError {
  return new HostError(error.code, changes.message ?? error.message, {
    details: changes.details ?? error.details,
    retryable: error.retryable,
    ...(error.retry_after_ms === undefined ? {} : { retry_after_ms: error.retry_after_ms }),
    ...(error.source_error_code === undefined ? {} : { source_error_code: error.source_error_code }),
    ...(error.cause === undefined || changes.dropCause === true ? {} : { cause: error.cause }),
    hint: changes.hint ?? error.hint,
  });
}

/**
 * A `HOST_INTERNAL_ERROR`: the host broke one of its own invariants (code of
 * ours threw where it should have returned a Result). `cause` is what was
 * thrown; its message is kept in the error's message.
 */
export function internalError(message: string, cause?: unknown): HostError {
  return new HostError('HOST_INTERNAL_ERROR', message, cause === undefined ? {} : { cause });
}

/** Whether a value is a {@link HostError}. */
export function isHostError(value: unknown): value is HostError {
  return value instanceof HostError;
}
