import { err, ok, type Result } from 'neverthrow';
import packageLimits from '../../etc/package-limits.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';

/** Size and count limits applied while a package is staged. */
export interface PackageLimits {
  /** Largest archive file accepted, in bytes (checked while it is read). */
  readonly maxArchiveBytes: number;
  /** Largest total of file bytes written into the staging tree, counted as they stream. */
  readonly maxExtractedBytes: number;
  /** Most entries (files and directories) a package may hold. */
  readonly maxEntries: number;
}

/**
 * The default limits (etc/package-limits.json): 256 MiB archive, 256 MiB
 * extracted, 50,000 entries. Sized for published servers with their
 * dependency trees (about 5,000 files and 17–35 MB each), with room to spare.
 */
export const DEFAULT_PACKAGE_LIMITS: PackageLimits = Object.freeze({
  maxArchiveBytes: packageLimits.maxArchiveBytes,
  maxExtractedBytes: packageLimits.maxExtractedBytes,
  maxEntries: packageLimits.maxEntries,
});

/**
 * How much raw tar data (headers, padding, PAX records) one entry may add on
 * top of its file bytes before the uncompressed stream counts as a bomb.
 */
export const TAR_OVERHEAD_PER_ENTRY = 4096;

/** The uncompressed tar stream cap that follows from the limits. */
export function tarStreamCap(limits: PackageLimits): number {
  return limits.maxExtractedBytes + limits.maxEntries * TAR_OVERHEAD_PER_ENTRY + 1024 * 1024;
}

/** Merges caller overrides over the defaults, refusing non-positive or non-integer values. */
export function resolveLimits(overrides: Partial<PackageLimits> | undefined): Result<PackageLimits, HostError> {
  const limits = { ...DEFAULT_PACKAGE_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      return err(
        hostError('HOST_INVALID_OPTIONS', `package limit ${name} must be a positive integer, got ${String(value)}`, {
          details: { option: `limits.${name}` },
        }),
      );
    }
  }
  return ok(limits);
}
