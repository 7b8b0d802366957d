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
import { HostError } from '../errors/HostError.js';

const FAILURE_CODES: ReadonlySet<string> = new Set(['PLUGIN_TOOL_ERROR', 'PLUGIN_INTERNAL_ERROR']);

const OFFLINE_HINT =
  'The plugin has no network in its sandbox (the host default) and its failure reads like a network one: if the tool must reach a service, install it again with a grant of the network (CLI --grant-network) or of the destinations it needs (--grant-egress host:port).';

const READ_ONLY_HINT =
  'The plugin tried to write inside its install root, which is read-only in the sandbox (the files the install pinned); the one directory it may write is its data directory (its HOME). Point it there with the argument or environment variable it reads for that path: an argument with ${data_dir} (CLI --arg), or a host variable passed with --grant-env NAME.';

/** The hint for what the plugin's failure says, if the sandbox explains it. */
function sandboxHint(error: HostError, plugin: InstalledPlugin): string | undefined {
  const said = `${error.message}\n${JSON.stringify(error.details['result'] ?? '')}`;
  const capabilities = plugin.descriptor?.capabilities;
  const offline = capabilities !== undefined && !capabilities.network && (capabilities.egress ?? []).length === 0;
  if (offline && hints.networkPatterns.some((pattern) => said.includes(pattern))) return OFFLINE_HINT;
  const root = plugin.lock.binding.install_root;
  if (said.includes(root) && hints.readOnlyPatterns.some((pattern) => said.includes(pattern))) return READ_ONLY_HINT;
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
  return new HostError(error.code, error.message, {
    details: error.details,
    retryable: error.retryable,
    ...(error.retry_after_ms === undefined ? {} : { retry_after_ms: error.retry_after_ms }),
    ...(error.source_error_code === undefined ? {} : { source_error_code: error.source_error_code }),
    ...(error.cause === undefined ? {} : { cause: error.cause }),
    hint: `${hint} ${error.hint}`,
  });
}
