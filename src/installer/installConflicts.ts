/**
 * What one plugin may not record because other installed plugins own it:
 * operation and variant ids, and served schema refs with another body. The
 * same rules run twice: on the snapshot an inspection reads (as violations,
 * so `inspect` lists them), and again under the profile lock inside the
 * install transaction (as an error), because another process may have
 * installed something in between.
 */
import type { CatalogVariant } from '../catalog/catalogTypes.js';
import { hostError, type HostError } from '../errors/HostError.js';
import { TOOLS_PATH } from '../manifest/access.js';
import type { NormalizedManifest } from '../manifest/model.js';
import { pointerOf, violation, type Violation } from '../manifest/violations.js';
import { toolIds } from './installRecords.js';

type IdKey = 'op_id' | 'variant_id';
const ID_KEYS: readonly IdKey[] = ['op_id', 'variant_id'];

/** Which plugin records each op id and variant id, leaving out `pluginId` itself (its own rows are replaced). */
function idsOfOthers(variants: readonly CatalogVariant[], pluginId: string): Record<IdKey, Map<string, string>> {
  const taken = { op_id: new Map<string, string>(), variant_id: new Map<string, string>() };
  for (const v of variants) {
    if (v.plugin_id === pluginId) continue;
    for (const key of ID_KEYS) taken[key].set(v[key], v.plugin_id);
  }
  return taken;
}

/**
 * The served-schema digests other plugins have installed. A plugin's own
 * earlier version is left out: an upgrade may change its own schemas.
 */
export function knownSchemaDigests(variants: readonly CatalogVariant[], ownPluginId: string | undefined): Map<string, string> {
  const known = new Map<string, string>();
  for (const variant of variants) {
    if (variant.plugin_id === ownPluginId) continue;
    for (const [ref, digest] of Object.entries(variant.schema_hashes)) known.set(ref, digest);
  }
  return known;
}

/**
 * Namespace violations of the ids a manifest would record. A declared
 * `op_id` (TOML form) must start with `<plugin_id>.`, since ownership is
 * checked on the plugin id; and no id may be one another installed plugin
 * records, or dispatch by id would be ambiguous.
 */
export function catalogIdViolations(manifest: NormalizedManifest, installed: readonly CatalogVariant[]): Violation[] {
  const taken = idsOfOthers(installed, manifest.plugin_id);
  const out: Violation[] = [];
  manifest.tools.forEach((tool, index) => {
    // A bundle's tools are its manifest.json's top-level `tools`.
    const at = [...(manifest.form === 'mcpb' ? ['tools'] : TOOLS_PATH[manifest.form]), index];
    const ids = toolIds(manifest, tool);
    if (tool.op_id !== undefined && !tool.op_id.startsWith(`${manifest.plugin_id}.`)) {
      out.push(
        violation('namespace', 'PLUGIN_NAMESPACE_CONFLICT', pointerOf(...at, 'op_id'), `op_id ${JSON.stringify(tool.op_id)} is outside the plugin's namespace; it must start with "${manifest.plugin_id}."`),
      );
    }
    for (const key of ID_KEYS) {
      const owner = taken[key].get(ids[key]);
      if (owner === undefined) continue;
      const pointer = pointerOf(...at, tool[key] === undefined ? 'name' : key);
      out.push(violation('namespace', 'PLUGIN_NAMESPACE_CONFLICT', pointer, `${key} ${JSON.stringify(ids[key])} is already recorded by plugin '${owner}'`));
    }
  });
  return out;
}

/**
 * The same id rules plus schema-ref collisions, checked on the content a
 * transaction is about to replace; the first conflict, or `undefined`.
 */
export function conflictUnderLock(pluginId: string, variants: readonly CatalogVariant[], current: readonly CatalogVariant[]): HostError | undefined {
  const taken = idsOfOthers(current, pluginId);
  const known = knownSchemaDigests(current, pluginId);
  for (const variant of variants) {
    for (const key of ID_KEYS) {
      const owner = taken[key].get(variant[key]);
      if (owner !== undefined) {
        return hostError('PLUGIN_NAMESPACE_CONFLICT', `${key} "${variant[key]}" was recorded by plugin '${owner}' while '${pluginId}' was being installed.`, {
          details: { plugin_id: pluginId, [key]: variant[key], recorded_by: owner },
        });
      }
    }
    for (const [ref, digest] of Object.entries(variant.schema_hashes)) {
      const installed = known.get(ref);
      if (installed !== undefined && installed !== digest) {
        return hostError('SCHEMA_REF_COLLISION', `Schema ref "${ref}" was installed with another body while '${pluginId}' was being installed.`, {
          details: { plugin_id: pluginId, ref, digest, installed_digest: installed },
        });
      }
    }
  }
  return undefined;
}
