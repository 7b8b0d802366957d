/**
 * The inventory as MCP resources: `<scheme>://plugins` and the
 * `<scheme>://plugin/{name}` template, where the scheme is the app name.
 */
import { errAsync, type ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import type { PluginInfo, PluginRow } from './inventory.js';

/** An MCP resource payload a host can serve for its inventory (`resources/read`). */
export interface InventoryResource {
  /** The resource's URI. */
  readonly uri: string;
  /** Always `application/json`. */
  readonly mimeType: 'application/json';
  /** The JSON text. */
  readonly text: string;
}

/** How a host advertises the inventory resources (`resources/list`, `resources/templates/list`). */
export interface InventoryResourceDescriptors {
  /** The fixed `plugins` resource. */
  readonly resources: readonly { readonly uri: string; readonly name: string; readonly description: string; readonly mimeType: 'application/json' }[];
  /** The `plugin/{name}` template. */
  readonly resourceTemplates: readonly {
    readonly uriTemplate: string;
    readonly name: string;
    readonly description: string;
    readonly mimeType: 'application/json';
  }[];
}

/** Where the inventory's views come from. */
export interface InventorySource {
  /** The `plugins` rows. */
  readonly list: () => ResultAsync<readonly PluginRow[], HostError>;
  /** One plugin's `plugin/{name}` view. */
  readonly info: (pluginId: string) => ResultAsync<PluginInfo, HostError>;
}

/** What a host's MCP server lists for the inventory under `scheme`. */
export function inventoryDescriptors(scheme: string): InventoryResourceDescriptors {
  return {
    resources: [{ uri: `${scheme}://plugins`, name: 'plugins', description: 'Installed plugins and their status', mimeType: 'application/json' }],
    resourceTemplates: [
      { uriTemplate: `${scheme}://plugin/{name}`, name: 'plugin', description: 'One installed plugin in detail', mimeType: 'application/json' },
    ],
  };
}

/** The inventory resource at `uri` (rows under `plugins`, or one plugin's view), or VARIANT_NOT_FOUND. */
export function readInventoryResource(uri: string, scheme: string, source: InventorySource): ResultAsync<InventoryResource, HostError> {
  const asResource = (value: unknown): InventoryResource => ({ uri, mimeType: 'application/json', text: JSON.stringify(value) });
  if (uri === `${scheme}://plugins`) return source.list().map((rows) => asResource({ plugins: rows }));
  const prefix = `${scheme}://plugin/`;
  const name = uri.startsWith(prefix) ? decodedName(uri.slice(prefix.length)) : undefined;
  if (name !== undefined) return source.info(name).map(asResource);
  return errAsync(hostError('VARIANT_NOT_FOUND', `no inventory resource at ${uri}`, { details: { uri } }));
}

/** A percent-encoded plugin name, decoded; undefined when its escapes are malformed (no plugin has that name). */
function decodedName(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
}
