/**
 * Whether a staged package fits below its install root. Entries are checked
 * against the staging directory as they are created, but the install root's
 * path is longer by as much as the plugin id and version (which the package
 * chooses) make it: a tree renamed there could hold paths longer than the
 * system takes, which nothing could open, pin or delete (Node's recursive
 * remove fails with ENAMETOOLONG), so a failed install, and the collection
 * of leftovers after it, would leave them behind for good.
 */
import pathLimits from '../../etc/path-limits.json' with { type: 'json' };
import type { HostError } from '../errors/HostError.js';
import { archiveInvalid } from './refusal.js';

/** The longest path, in bytes, this platform's system calls take (etc/path-limits.json). */
export const MAX_PATH_BYTES: number = (pathLimits.maxPathBytes as Readonly<Record<string, number | undefined>>)[process.platform] ?? pathLimits.fallbackMaxPathBytes;

/**
 * `PLUGIN_ARCHIVE_INVALID` (`path_too_long`) when `installRoot`, a `/` and
 * the package's longest entry name make a path longer than
 * {@link MAX_PATH_BYTES}; `undefined` when it fits or the length is unknown.
 */
export function installPathRefusal(installRoot: string, longestEntryBytes: number | undefined): HostError | undefined {
  if (longestEntryBytes === undefined) return undefined;
  const total = Buffer.byteLength(installRoot) + 1 + longestEntryBytes;
  if (total <= MAX_PATH_BYTES) return undefined;
  return archiveInvalid(
    'path_too_long',
    undefined,
    `the package's longest entry name (${longestEntryBytes} bytes) would make a path of ${total} bytes below its install root, over the ${MAX_PATH_BYTES} this system takes`,
    { max: MAX_PATH_BYTES, path_bytes: total, install_root: installRoot },
  );
}
