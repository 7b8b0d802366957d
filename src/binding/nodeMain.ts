/**
 * How a pinned Node interpreter is made to evaluate only the verified bytes
 * of a plugin's main module. Two ways, chosen once at install from the
 * interpreter's version (the interpreter is pinned by digest, so the choice
 * cannot go stale):
 *
 * - `integrity_policy` (Node 20.11+ and 21.3+, before policies were removed
 *   in 22): Node is given a policy naming the main module's URL with its
 *   SHA-256, and checks the digest of the very buffer it is about to compile;
 *   other modules load as usual. No extra thread, but Node consults the
 *   policy for every module it loads (about +32 ms on a large server's
 *   start). Under bubblewrap the same interpreters need no policy: the
 *   sandbox mounts the verified copy at the main module's own path (see
 *   {@link mountedMainOptions}); the policy stays for launchers that
 *   cannot mount (Seatbelt, unsandboxed).
 * - `in_thread_hook` (Node 22.15+, 23.5+): a module-loader hook serves the
 *   main module's source from the descriptor of the verified copy (see
 *   nodeLoader.ts), in the main thread, for about 2 ms.
 * - `loader_hook` (every other Node from 20.6): the same hook on Node's
 *   loader worker thread, which adds 20–30 ms to every start.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nodeVersionOf, type InterpreterVersionProbe } from './interpreterVersion.js';

/** How a Node interpreter is made to evaluate only the verified main module. */
export type NodeMainLoading = 'integrity_policy' | 'in_thread_hook' | 'loader_hook';

const VERSION = /^v(\d+)\.(\d+)\.\d+/;

/** The loading method for a Node version string such as `v20.20.2`. */
export function nodeMainLoadingFor(version: string): NodeMainLoading {
  const match = VERSION.exec(version.trim());
  if (!match) return 'loader_hook';
  const major = Number(match[1]);
  const minor = Number(match[2]);
  // The policy needs --disable-warning (20.11, 21.3) to keep plugins' stderr free of its warning.
  if ((major === 20 && minor >= 11) || (major === 21 && minor >= 3)) return 'integrity_policy';
  if ((major === 22 && minor >= 15) || (major === 23 && minor >= 5) || major >= 24) return 'in_thread_hook';
  return 'loader_hook';
}

/**
 * Picks the loading method for the interpreter at `path` from its version
 * (see interpreterVersion.ts: the host's own Node is never run, any other
 * only inside the sandbox through `probe`, and a file not named like Node
 * never). Anything unexpected, and no answer, picks `loader_hook`, which
 * works on every Node that can run plugins at all.
 */
export async function probeNodeMainLoading(path: string, probe?: InterpreterVersionProbe): Promise<NodeMainLoading> {
  const version = await nodeVersionOf(path, probe);
  return version === undefined ? 'loader_hook' : nodeMainLoadingFor(`v${version}`);
}

/**
 * The CommonJS preload that makes Node resolve the main script to exactly
 * its path, with no extension or directory fallback. It sits next to this
 * module both in the sources and in the built package.
 */
export const NODE_MAIN_GUARD = fileURLToPath(new URL('./nodeMainGuard.cjs', import.meta.url));

/**
 * The policy text for a main module at `scriptPath` pinned to `sha256Hex`.
 * The main module's URL must match exactly; every other `file:` and `data:`
 * module keeps loading without a digest, as it would without a policy.
 */
export function integrityPolicy(scriptPath: string, sha256Hex: string): string {
  const integrity = `sha256-${Buffer.from(sha256Hex, 'hex').toString('base64')}`;
  return JSON.stringify({
    resources: { [pathToFileURL(scriptPath).href]: { integrity, dependencies: true } },
    scopes: { 'file:': { integrity: true, dependencies: true }, 'data:': { integrity: true, dependencies: true } },
  });
}

/**
 * The Node options that apply the policy read from `policyPath`. The main
 * module is resolved to exactly its path (the guard) and keeps that path as
 * its URL even if a link were swapped in (`--preserve-symlinks-main`), so
 * the policy entry is the one that applies to it. The sandbox must let the
 * child read the guard.
 */
export function integrityPolicyOptions(policyPath: string, guardPath: string = NODE_MAIN_GUARD): string[] {
  return ['--preserve-symlinks-main', '--disable-warning=ExperimentalWarning', `--experimental-policy=${policyPath}`, '--require', guardPath];
}

/**
 * The Node options for a main module whose verified bytes the sandbox
 * mounts read-only at the module's own path: no policy. That path is a file
 * holding exactly those bytes, or the sandbox refused to start (a missing
 * file or a directory there cannot take the mount), so Node's extension and
 * directory fallbacks, which the guard blocks under the policy, never come
 * into play; the guard is preloaded all the same, for `require()`'s global
 * folders without HOME (see nodeGlobalPaths.ts), so the sandbox must let the
 * child read it. The main module keeps its path as its URL even if a link
 * was swapped in, so its relative imports resolve from there.
 */
export function mountedMainOptions(guardPath: string = NODE_MAIN_GUARD): string[] {
  return ['--preserve-symlinks-main', '--require', guardPath];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Node checks a CommonJS main module's digest on its text decoded as UTF-8,
 * so bytes that are not valid UTF-8 never match their own digest; such a
 * script gets the loader hook instead of the policy.
 */
export function nodeMainLoadingForScript(interpreterMethod: NodeMainLoading, script: Uint8Array): NodeMainLoading {
  if (interpreterMethod !== 'integrity_policy') return interpreterMethod;
  try {
    utf8.decode(script);
    return interpreterMethod;
  } catch {
    return 'loader_hook';
  }
}
