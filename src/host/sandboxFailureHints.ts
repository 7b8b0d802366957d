/**
 * Hints for calls that failed because of the plugin's sandbox rather than its
 * service. A published server says what went wrong in its own words ("fetch
 * failed", "getaddrinfo ENOTFOUND api.example.com", "EROFS: read-only file
 * system, open '<its package>/dist/memory.jsonl'"); under the host default (no
 * network, only the data directory writable, as every npm server without a
 * manifest gets) the remedy is a grant or an argument, which those words do
 * not say.
 */
import { realpathSync } from 'node:fs';
import hints from '../../etc/sandbox-failure-hints.json' with { type: 'json' };
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { reworded, type HostError } from '../errors/HostError.js';
import { refusedWriteWithin } from '../installer/installRootWrites.js';
import { namesFailedPath, PATH_HINT_CODES, sandboxPathHints, sandboxViewOf, type PathHints } from '../installer/sandboxPathHints.js';
import { readsLikeNetworkFailure } from '../sandbox/networkFailureWords.js';
import type { EnforcedPolicy } from '../sandbox/SandboxSpawner.js';

const FAILURE_CODES: ReadonlySet<string> = new Set(hints.failureCodes);
const MISSING_PROGRAM = hints.missingProgramPatterns.map((pattern) => new RegExp(pattern));

// The program a shell or Node could not find, by its name (mcp-ripgrep@0.4.0: "/bin/sh: 1: rg: not found").
function missingProgram(said: string): string | undefined {
  for (const pattern of MISSING_PROGRAM) {
    const name = pattern.exec(said)?.[1];
    if (name !== undefined) return name;
  }
  return undefined;
}

/** What the plugin said of its failure: its message, its tool result and, for a crash, its stderr tail. */
function saidBy(error: HostError): string {
  const tail = error.details['stderr_tail'];
  return `${error.message}\n${JSON.stringify(error.details['result'] ?? '')}\n${typeof tail === 'string' ? tail : ''}`;
}

/** The install root as the lock names it and as the sandbox mounts it (its real path, when a link leads there). */
function installRoots(root: string): string[] {
  try {
    const real = realpathSync(root);
    return real === root ? [root] : [root, real];
  } catch {
    return [root];
  }
}

/** The hint for what the plugin's failure says, if the sandbox explains it, and the install-root path it wrote to, if that is the cause. */
function sandboxHint(error: HostError, plugin: InstalledPlugin): { readonly hint: string; readonly written?: string } | undefined {
  const said = saidBy(error);
  const capabilities = plugin.descriptor?.capabilities;
  const offline = capabilities !== undefined && !capabilities.network && (capabilities.egress ?? []).length === 0;
  if (offline && readsLikeNetworkFailure(said)) return { hint: hints.offlineHint };
  const root = plugin.lock.binding.install_root;
  // The same words the introspection reads (Node's EROFS/EACCES, Python's Errno 30/13): a write at a call or a crash
  // names the path as a write at start does.
  const written = refusedWriteWithin(said, installRoots(root));
  if (written !== undefined) return { hint: hints.readOnlyHint.replaceAll('{path}', written), written };
  if (said.includes(root) && hints.readOnlyPatterns.some((pattern) => said.includes(pattern))) return { hint: hints.readOnlyHint.replaceAll('{path}', root) };
  const sharedTemp = refusedWriteWithin(said, hints.sharedTempFolders);
  if (sharedTemp !== undefined) return { hint: hints.sharedTempWriteHint.replaceAll('{path}', sharedTemp) };
  const program = missingProgram(said);
  if (program !== undefined) return { hint: hints.missingProgramHint.replaceAll('{program}', program) };
  return undefined;
}

/** What the failure's words (its message, result and stderr tail) say of host paths the plugin's sandbox does not show. */
function pathHints(error: HostError, plugin: InstalledPlugin, policy: () => EnforcedPolicy | null): PathHints | undefined {
  if (!PATH_HINT_CODES.has(error.code)) return undefined;
  const said = saidBy(error);
  // Most failures name no path: the policy (the plugin's whole sandbox layout) is worked out only for one that does.
  if (!namesFailedPath(said)) return undefined;
  const enforced = policy();
  return enforced === null ? undefined : sandboxPathHints(said, sandboxViewOf(enforced), plugin.descriptor?.capabilities?.network === true);
}

/**
 * `error` with a hint naming the remedy in front of its own when it is a tool
 * or plugin failure the sandbox explains (etc/sandbox-failure-hints.json): a
 * network failure of a plugin without network or egress destinations, a
 * write refused inside its read-only install root (then named in
 * `details.install_root_write`), or one refused in the machine's shared
 * temporary folder (`/tmp` by name, not TMPDIR), or a program it runs that
 * is not on its PATH, also when a crash's stderr tail says so; else `error`
 * unchanged.
 * With `policy` (the plugin's enforced sandbox, asked only for a failure
 * that names a path), also a call or start that failed on a host path the
 * sandbox does not show (etc/sandbox-path-hints.json): a Unix socket, whose
 * hint then replaces the network one (an egress grant never carries it), or
 * a file that exists on the host.
 */
export function withSandboxHint(error: HostError, plugin: InstalledPlugin, policy?: () => EnforcedPolicy | null): HostError {
  const paths = policy === undefined ? undefined : pathHints(error, plugin, policy);
  const found = !FAILURE_CODES.has(error.code) || paths?.socket === true ? undefined : sandboxHint(error, plugin);
  if (found === undefined && paths === undefined) return error;
  return reworded(error, {
    hint: `${paths?.hint ?? ''}${found === undefined ? '' : `${found.hint} `}${error.hint}`,
    ...(found?.written === undefined ? {} : { details: { ...error.details, install_root_write: found.written } }),
  });
}
