import { posix } from 'node:path';

/**
 * Where a symbolic link found in a package points, relative to the package
 * root, or `undefined` when the target leaves the package: an absolute
 * target (`/…`, `\…`, `C:…`), a NUL or backslash in it, or `..` segments that
 * climb above the root. Decided on the text alone: links are never followed,
 * so where the target would lead on this machine does not matter.
 *
 * @param linkSegments - The link's own path below the root, by segment.
 * @param target - The link's target text, as stored.
 */
export function linkTargetInside(linkSegments: readonly string[], target: string): string | undefined {
  if (target === '' || target.includes('\0') || target.includes('\\') || target.startsWith('/') || /^[A-Za-z]:/.test(target)) return undefined;
  const resolved = posix.normalize(posix.join(...linkSegments.slice(0, -1), target));
  if (resolved === '..' || resolved.startsWith('../')) return undefined;
  return resolved;
}
