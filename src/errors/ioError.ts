import { hostError, type HostError } from './HostError.js';

/**
 * The `details` of every `HOST_IO_ERROR`: always these keys and no others, so
 * a caller can read them without knowing which part of the host failed.
 */
export type IoErrorDetails = {
  /** What the host was doing, as a short capitalised phrase ("Reading", "Creating the profile directory"). */
  readonly operation: string;
  /** The path the user knows the file by; absent when the failure concerns no one path. */
  readonly path?: string;
  /** The Node error code (`ENOENT`, `EACCES`, …); absent when the cause carried none. */
  readonly errno?: string;
};

// Retrying unchanged cannot make a missing or forbidden path appear.
const PERMANENT_ERRNOS: ReadonlySet<string> = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'EPERM', 'EISDIR']);

/** The Node error code a thrown value carries (`ENOENT`, `EACCES`, …), if any. */
export function errnoOf(cause: unknown): string | undefined {
  const code = (cause as NodeJS.ErrnoException | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The one `HOST_IO_ERROR` builder. `path` must be the path the user knows
 * (the profile, the package directory they named), never a scratch or staging
 * path the host made up: the message names `path` and the error code only,
 * not the cause's own message, which Node fills with whatever path the system
 * call used. A cause without an error code (a thrown `Error` from a hook)
 * keeps its message, since it names no path of ours.
 */
export function ioError(operation: string, path: string | undefined, cause: unknown): HostError {
  const errno = errnoOf(cause);
  const subject = path === undefined ? operation : `${operation} ${path}`;
  const reason = errno !== undefined ? ` (${errno})` : `: ${cause instanceof Error ? cause.message : String(cause)}`;
  const details: IoErrorDetails = { operation, ...(path === undefined ? {} : { path }), ...(errno === undefined ? {} : { errno }) };
  return hostError('HOST_IO_ERROR', `${subject} failed${reason}`, {
    details,
    cause,
    ...(errno !== undefined && PERMANENT_ERRNOS.has(errno) ? { retryable: false } : {}),
  });
}
