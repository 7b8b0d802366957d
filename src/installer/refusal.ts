import { hostError, isHostError, type HostError, type HostErrorFields } from '../errors/HostError.js';
import type { HostErrorCode } from '../errors/registry.js';
import { ioError } from '../errors/ioError.js';
import type { PackageLimits } from './limits.js';

/** Why an entry's name was refused (by `validateEntryName`, for archives and directories alike). */
export type EntryNameRefusalReason =
  | 'empty_name'
  | 'nul_character'
  | 'control_character'
  | 'backslash'
  | 'absolute_name'
  | 'colon'
  | 'reserved_name'
  | 'traversal'
  | 'empty_segment'
  | 'segment_too_long'
  | 'path_too_long';

/**
 * Why an archive or package entry was refused; stable strings carried in
 * `details.reason` of `PLUGIN_ARCHIVE_INVALID`.
 */
export type ArchiveRefusalReason =
  | EntryNameRefusalReason
  | 'symlink'
  | 'hardlink'
  | 'device'
  | 'fifo'
  | 'socket'
  | 'special_file'
  | 'unsupported_type'
  | 'duplicate'
  | 'conflict'
  | 'encrypted'
  | 'unsupported_compression'
  | 'header_mismatch'
  | 'limit'
  | 'malformed'
  | 'unknown_format'
  | 'not_a_file';

/**
 * Internal: a refusal raised deep inside a stream handler. It carries the
 * final `HostError`, so the boundary only has to unwrap it; anything else that
 * reaches the boundary is an I/O failure.
 */
export class Refusal extends Error {
  constructor(readonly error: HostError) {
    super(error.message);
  }
}

/** A `PLUGIN_ARCHIVE_INVALID` error naming the entry (when there is one) and the reason. */
export function archiveInvalid(
  reason: ArchiveRefusalReason,
  entry: string | undefined,
  message: string,
  extra: Readonly<Record<string, unknown>> = {},
): HostError {
  const details = entry === undefined ? { reason, ...extra } : { reason, entry, ...extra };
  const limit = reason === 'limit' && typeof extra['limit'] === 'string' ? extra['limit'] : undefined;
  return hostError('PLUGIN_ARCHIVE_INVALID', message, limit === undefined ? { details } : { details, hint: limitHint(limit) });
}

// The CLI's flag for a limit is its key in kebab case (maxExtractedBytes: --max-extracted-bytes, LIMIT_FLAGS in src/cli/args.ts); the
// hint names it because the CLI is where most installs of a large published server are refused (@colbymchenry/codegraph@1.6.1 vendors a
// Node runtime, over 256 MiB), and until session 32 it said the CLI had no such flag after install, validate and wrap had got one (56e6b66).
const cliLimitFlag = (limit: string): string => `--${limit.replace(/[A-Z]/g, (upper) => `-${upper.toLowerCase()}`)}`;

// A published package may be this large on purpose (mongodb-mcp-server@3.0.4's dependencies ship two bun builds, over 256 MiB), and nothing
// in the package can be changed by the person installing it: the remedy is the limit, which only they can judge.
const limitHint = (limit: string): string =>
  `The package is over the host's ${limit} (details.max). If you trust it to be this large (an npm server whose dependencies ship platform binaries), open the host with a higher packageLimits.${limit} (library option; CLI ${cliLimitFlag(limit)} on install, validate and wrap); otherwise repackage it within the limits.`;

/** Throws {@link archiveInvalid} as a {@link Refusal}. */
export function refuseEntry(
  reason: ArchiveRefusalReason,
  entry: string | undefined,
  message: string,
  extra: Readonly<Record<string, unknown>> = {},
): never {
  throw new Refusal(archiveInvalid(reason, entry, message, extra));
}

/** A `PLUGIN_ARCHIVE_INVALID` refusal for a limit that was hit. */
export function limitRefusal(limit: keyof PackageLimits, max: number, entry: string | undefined, message: string): Refusal {
  return new Refusal(archiveInvalid('limit', entry, message, { limit, max }));
}

/** Throws {@link limitRefusal}. */
export function refuseLimit(limit: keyof PackageLimits, max: number, entry: string | undefined, message: string): never {
  throw limitRefusal(limit, max, entry, message);
}

/** Throws a refusal with any code. */
export function refuse(code: HostErrorCode, message: string, fields: HostErrorFields = {}): never {
  throw new Refusal(hostError(code, message, fields));
}

/**
 * Maps whatever a staging step threw to the `HostError` the caller sees;
 * `path` is the path the user named (never the staging copy's).
 */
export function toHostError(cause: unknown, operation: string, path: string): HostError {
  if (cause instanceof Refusal) return cause.error;
  if (isHostError(cause)) return cause;
  return ioError(operation, path, cause);
}
