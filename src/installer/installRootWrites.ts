/**
 * A server that fails because it writes into its own package directory.
 * Some published servers copy or create files next to their code at start
 * (gitnexus copies a native file into its own package folder); the install
 * root is read-only in the sandbox, so the start dies with EROFS (bubblewrap's
 * read-only bind) or EACCES (Landlock), and nothing the user grants changes it.
 * Without this the failure was blamed on whatever else looked wrong (a Node
 * outside the package's engines.node range).
 */
import { isAbsolute, normalize } from 'node:path';
import { reworded, type HostError } from '../errors/HostError.js';
import { isWithin } from '../sandbox/SandboxLayout.js';
import hints from '../../etc/sandbox-failure-hints.json' with { type: 'json' };

const WRITE_PATTERNS = hints.installRootWritePatterns.map((pattern) => new RegExp(pattern, 'g'));

/**
 * The first path inside one of `roots` that `text` (a failure's message and
 * stderr) says a write to was refused, or undefined.
 *
 * @param roots - The folders asked about: the install root as the host names it and as the sandbox mounts it (its
 *   real path), or the machine's shared temporary folders.
 */
export function refusedWriteWithin(text: string, roots: readonly string[]): string | undefined {
  for (const pattern of WRITE_PATTERNS) {
    for (const match of text.matchAll(pattern)) {
      // copyfile names its source first: the destination, when there is one, is the path written (a copy out of the tree is no write to it).
      const path = match.slice(1).findLast((group) => group !== undefined);
      if (path === undefined || !isAbsolute(path)) continue;
      const normalized = normalize(path);
      if (roots.some((root) => isWithin(normalized, root))) return normalized;
    }
  }
  return undefined;
}

/**
 * `error` (a failed introspection start) with `details.install_root_write`
 * and a hint that begins by saying the server writes into its own read-only
 * package directory, when its message or stderr tail says so; else undefined.
 */
export function withInstallRootWrite(error: HostError, roots: readonly string[]): HostError | undefined {
  const tail = error.details['stderr_tail'];
  const path = refusedWriteWithin(`${error.message}\n${typeof tail === 'string' ? tail : ''}`, roots);
  if (path === undefined) return undefined;
  return reworded(error, {
    details: { ...error.details, install_root_write: path },
    hint: `${hints.installRootWriteHint.replaceAll('{path}', path)} ${error.hint}`,
  });
}
