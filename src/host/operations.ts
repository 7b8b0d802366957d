/**
 * Operation ids as a host sees them. Every operation is called as
 * `plug.<plugin_id>.<tool>`: JSON v1 manifests get that id from the
 * installer; the TOML contract form records `<plugin_id>.<operation>`, which
 * the host prefixes with `plug.` the same way, so both forms share one
 * namespace of callable ids.
 */
import type { CatalogVariant } from '../catalog/catalogTypes.js';
import { calledOpId } from '../manifest/model.js';

const OP_PLUGIN = /^plug\.([a-z][a-z0-9-]{0,63})\./;

/** The id a host calls a variant by. */
export function hostOpId(variant: CatalogVariant): string {
  return calledOpId(variant.plugin_id, variant.op_id);
}

/** Op ids {@link pluginIdOf} last read, to their plugin ids (null: none); emptied when it holds this many. */
const KNOWN_OP_IDS_MAX = 512;
/** Longer ids are not kept: a client may send any name, and the cache must stay small. */
const KNOWN_OP_ID_LENGTH_MAX = 256;
const knownOpIds = new Map<string, string | null>();

/** The plugin id named by an operation id, if it has the `plug.<plugin_id>.` form. */
export function pluginIdOf(opId: string): string | undefined {
  // A gateway asks on every call, mostly about the same few ids: a lookup, not a match array and a substring each time.
  const known = knownOpIds.get(opId);
  if (known !== undefined) return known ?? undefined;
  const pluginId = OP_PLUGIN.exec(opId)?.[1];
  if (opId.length <= KNOWN_OP_ID_LENGTH_MAX) {
    if (knownOpIds.size >= KNOWN_OP_IDS_MAX) knownOpIds.clear();
    knownOpIds.set(opId, pluginId ?? null);
  }
  return pluginId;
}

/** A plugin and one of its variants, as an operation id names them. */
export interface NamedOperation<P> {
  readonly plugin: P;
  readonly variant: CatalogVariant;
}

/**
 * Every operation id the plugins answer to, each to its plugin and variant:
 * the variant whose host id it is, in the plugin the id names (the first
 * such variant when several share an id). Built once per catalog snapshot,
 * so a call finds its operation with one lookup.
 */
export function operationIndex<P extends { readonly plugin_id: string; readonly variants: readonly CatalogVariant[] }>(
  plugins: Iterable<P>,
): ReadonlyMap<string, NamedOperation<P>> {
  const index = new Map<string, NamedOperation<P>>();
  for (const plugin of plugins) {
    for (const variant of plugin.variants) {
      const opId = hostOpId(variant);
      if (pluginIdOf(opId) === plugin.plugin_id && !index.has(opId)) index.set(opId, { plugin, variant });
    }
  }
  return index;
}
