/**
 * How the host answers its plugins' requests to their client (sampling,
 * elicitation, roots): the session settings of a plugin, from what its
 * install recorded and the host's callbacks, and what each call adds (its
 * own callbacks and its op id). The answering itself lives with the MCP
 * session (src/shapes/mcp/clientRequests.ts).
 */
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { ClientRequestKind } from '../manifest/model.js';
import type { ClientRequestHandlers, ClientRequestReport, ClientRequestSettings } from '../shapes/mcp/clientRequests.js';
import type { CallOptions } from '../shapes/PluginSession.js';
import type { HostConfig } from './hostConfig.js';

export type {
  ClientRequestContext,
  ClientRequestHandlers,
  ElicitationCallback,
  RootsCallback,
  SamplingCallback,
} from '../shapes/mcp/clientRequests.js';

/** The client requests an installed plugin may send: its declaration as the install grant left it. */
export function declaredClientRequests(plugin: InstalledPlugin): readonly ClientRequestKind[] {
  return plugin.descriptor?.capabilities?.client_requests ?? [];
}

/** A plugin session's client-request settings, or undefined when the plugin declares none (nothing is advertised or answered). */
export function clientRequestSettings(
  plugin: InstalledPlugin,
  config: HostConfig,
  onReport: (report: ClientRequestReport) => void,
): ClientRequestSettings | undefined {
  const kinds = declaredClientRequests(plugin);
  if (kinds.length === 0) return undefined;
  return { pluginId: plugin.plugin_id, kinds, handlers: config.clientRequests, timeoutMs: config.clientRequestTimeoutMs, onReport };
}

/**
 * A call's session options with who answers its plugin's client requests:
 * the call's own callbacks (else the host's) and its op id. A plugin that
 * declares none gets `budget` itself, so ordinary calls allocate nothing more.
 */
export function withClientRequests(budget: CallOptions, plugin: InstalledPlugin, handlers: ClientRequestHandlers | undefined, opId: string): CallOptions {
  if (declaredClientRequests(plugin).length === 0) return budget;
  return { ...budget, clientRequests: { ...(handlers === undefined ? {} : { handlers }), opId } };
}
