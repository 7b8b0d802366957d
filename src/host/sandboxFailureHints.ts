/**
 * Hints for calls that failed because of the plugin's sandbox rather than its
 * service. A published server says what went wrong in its own words ("fetch
 * failed", "getaddrinfo ENOTFOUND api.example.com", "EROFS: read-only file
 * system, open '<its package>/dist/memory.jsonl'"); under the host default (no
 * network, only the data directory writable, as every npm server without a
 * manifest gets) the remedy is a grant or an argument, which those words do
 * not say.
 */
import hints from '../../etc/sandbox-failure-hints.json' with { type: 'json' };
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { reworded, type HostError } from '../errors/HostError.js';

const FAILURE_CODES: ReadonlySet<string> = new Set(hints.failureCodes);

/** The hint for what the plugin's failure says, if the sandbox explains it. */
function sandboxHint(error: HostError, plugin: InstalledPlugin): string | undefined {
  const said = `${error.message}\n${JSON.stringify(error.details['result'] ?? '')}`;
  const capabilities = plugin.descriptor?.capabilities;
  const offline = capabilities !== undefined && !capabilities.network && (capabilities.egress ?? []).length === 0;
  if (offline && hints.networkPatterns.some((pattern) => said.includes(pattern))) return hints.offlineHint;
  const root = plugin.lock.binding.install_root;
  if (said.includes(root) && hints.readOnlyPatterns.some((pattern) => said.includes(pattern))) return hints.readOnlyHint;
  return undefined;
}

/**
 * `error` with a hint naming the remedy in front of its own when it is a tool
 * or plugin failure the sandbox explains (etc/sandbox-failure-hints.json): a
 * network failure of a plugin without network or egress destinations, or a
 * write refused inside its read-only install root; else `error` unchanged.
 */
export function withSandboxHint(error: HostError, plugin: InstalledPlugin): HostError {
  if (!FAILURE_CODES.has(error.code)) return error;
  const hint = sandboxHint(error, plugin);
  if (hint === undefined) return error;
  return reworded(error, { hint: `${hint} ${error.hint}` });
}
