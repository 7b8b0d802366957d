import { isAbsolute, join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';

/**
 * The host directory a plugin may write, from its declared `fs_write_dir`:
 * `""` is the plugin's data directory itself, a relative path a subtree of
 * it. Absolute paths and paths that climb out (`..`) are refused with
 * PLUGIN_FS_WRITE_OUTSIDE_SANDBOX, at install time and again before a spawn.
 *
 * @param dataDir - The host-managed data directory of the plugin (absolute).
 * @param fsWriteDir - The manifest's `declared_capabilities.fs_write_dir`.
 */
export function resolveWriteDir(dataDir: string, fsWriteDir: string): Result<string, HostError> {
  return writeDirComponents(fsWriteDir).map((components) => (components.length === 0 ? dataDir : join(dataDir, ...components)));
}

/**
 * The directory names from the data directory down to the writable
 * directory named by `fs_write_dir` (`[]` for the data directory itself),
 * refused like {@link resolveWriteDir}. The host creates and opens them one
 * at a time without following links (`openPluginDirectories`).
 *
 * @param fsWriteDir - The manifest's `declared_capabilities.fs_write_dir`.
 */
export function writeDirComponents(fsWriteDir: string): Result<readonly string[], HostError> {
  const refuse = (why: string): Result<readonly string[], HostError> =>
    err(hostError('PLUGIN_FS_WRITE_OUTSIDE_SANDBOX', `fs_write_dir ${JSON.stringify(fsWriteDir)} ${why}.`, { details: { fs_write_dir: fsWriteDir } }));
  if (fsWriteDir === '') return ok([]);
  if (fsWriteDir.includes('\0')) return refuse('contains a NUL character');
  if (isAbsolute(fsWriteDir) || /^[A-Za-z]:/.test(fsWriteDir) || fsWriteDir.startsWith('\\')) return refuse('is absolute; use a path relative to the plugin data directory');
  const parts = fsWriteDir.split(/[\\/]+/);
  if (parts.includes('..')) return refuse('climbs out of the plugin data directory');
  return ok(parts.filter((p) => p !== '' && p !== '.'));
}
