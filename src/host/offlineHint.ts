/**
 * A hint for a call that failed because its plugin has no network. A server
 * that needs a web API fails its calls with its own words ("fetch failed",
 * "getaddrinfo ENOTFOUND api.example.com"); with the host default (no
 * network, as every npm server without a manifest gets) that is the sandbox,
 * not the service, and the remedy is a grant, which the plugin's words do not
 * say.
 */
import offline from '../../etc/offline-failures.json' with { type: 'json' };
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { HostError } from '../errors/HostError.js';

const FAILURE_CODES: ReadonlySet<string> = new Set(['PLUGIN_TOOL_ERROR', 'PLUGIN_INTERNAL_ERROR']);

const OFFLINE_HINT =
  'The plugin has no network in its sandbox (the host default) and its failure reads like a network one: if the tool must reach a service, install it again with a grant of the network (CLI --grant-network) or of the destinations it needs (--grant-egress host:port).';

/**
 * `error` with {@link OFFLINE_HINT} in front of its hint when it is a tool or
 * plugin failure of a plugin without network or egress destinations whose
 * message or tool result names a network failure (etc/offline-failures.json);
 * else `error` unchanged.
 */
export function withOfflineHint(error: HostError, plugin: InstalledPlugin): HostError {
  const capabilities = plugin.descriptor?.capabilities;
  if (!FAILURE_CODES.has(error.code) || capabilities === undefined || capabilities.network || (capabilities.egress ?? []).length > 0) return error;
  const said = `${error.message}\n${JSON.stringify(error.details['result'] ?? '')}`;
  if (!offline.patterns.some((pattern) => said.includes(pattern))) return error;
  return new HostError(error.code, error.message, {
    details: error.details,
    retryable: error.retryable,
    ...(error.retry_after_ms === undefined ? {} : { retry_after_ms: error.retry_after_ms }),
    ...(error.source_error_code === undefined ? {} : { source_error_code: error.source_error_code }),
    ...(error.cause === undefined ? {} : { cause: error.cause }),
    hint: `${OFFLINE_HINT} ${error.hint}`,
  });
}
