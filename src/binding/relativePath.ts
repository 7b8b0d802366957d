/**
 * The manifest's executable is a path relative to the install root, written
 * with `/`. It is normalized once, at install, and the normalized form is
 * what the lock records and what every later check re-validates.
 */
import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { untrusted } from './untrusted.js';

/** The executable path as the lock records it: `/`-separated, no `.` or empty segments. */
export function normalizeExecutablePath(raw: string): Result<string, HostError> {
  if (raw.length === 0 || raw.includes('\0')) {
    return err(untrusted('invalid_path', 'The executable path is empty or contains a NUL byte.', { path: raw }));
  }
  if (raw.startsWith('/') || raw.startsWith('\\') || /^[A-Za-z]:/.test(raw)) {
    return err(untrusted('absolute_path', `The executable path "${raw}" is absolute; it must be relative to the install root.`, { path: raw }));
  }
  if (raw.includes('\\')) {
    return err(untrusted('invalid_path', `The executable path "${raw}" contains a backslash; use "/" between segments.`, { path: raw }));
  }
  const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) {
    return err(untrusted('path_traversal', `The executable path "${raw}" contains "..".`, { path: raw }));
  }
  if (segments.length === 0) {
    return err(untrusted('invalid_path', `The executable path "${raw}" names no file.`, { path: raw }));
  }
  return ok(segments.join('/'));
}
