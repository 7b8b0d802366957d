/**
 * Whether the three files of a generation name the same plugins. A
 * transaction always writes all three from one content, so they can differ
 * only when a file was edited, restored or replaced on its own. A plugin
 * missing from `plugins.lock` would be invisible (lists read the lock), one
 * missing from the state or the catalog would run without its books or its
 * recorded facts; so the store reports the difference instead.
 */
import { hostError, type HostError } from '../errors/HostError.js';
import { fileName, type CatalogFileKind } from './catalogFiles.js';
import type { CatalogContents } from './catalogTypes.js';

/** For each plugin not named by all three files: the files that do not name it. */
export function pluginsMissingFromFiles(contents: CatalogContents): Record<string, CatalogFileKind[]> {
  const inCatalog = new Set<string>(Object.keys(contents.descriptors));
  for (const variant of contents.variants) inCatalog.add(variant.plugin_id);
  const named: Record<CatalogFileKind, ReadonlySet<string>> = {
    catalog: inCatalog,
    lock: new Set(Object.keys(contents.plugins)),
    state: new Set(Object.keys(contents.states)),
  };
  const missing: Record<string, CatalogFileKind[]> = {};
  for (const id of [...new Set([...named.catalog, ...named.lock, ...named.state])].sort()) {
    const absent = (Object.keys(named) as CatalogFileKind[]).filter((kind) => !named[kind].has(id));
    if (absent.length > 0) missing[id] = absent;
  }
  return missing;
}

/** Whether the three files name the same plugins; checked at every open, so without building the report of what differs. */
function nameSamePlugins(contents: CatalogContents): boolean {
  const { plugins, states, descriptors } = contents;
  const ids = Object.keys(plugins);
  if (Object.keys(states).length !== ids.length) return false;
  const inCatalog = new Set<string>(Object.keys(descriptors));
  for (const variant of contents.variants) inCatalog.add(variant.plugin_id);
  if (inCatalog.size !== ids.length) return false;
  for (const id of ids) if (!Object.hasOwn(states, id) || !inCatalog.has(id)) return false;
  return true;
}

/** `CATALOG_INCONSISTENT` for a profile whose files do not name the same plugins, or `undefined`. */
export function inconsistencyError(dir: string, contents: CatalogContents): HostError | undefined {
  if (nameSamePlugins(contents)) return undefined;
  const missing = pluginsMissingFromFiles(contents);
  const ids = Object.keys(missing);
  if (ids.length === 0) return undefined;
  const described = ids.map((id) => `'${id}' is missing from ${missing[id]!.map(fileName).join(' and ')}`).join('; ');
  return hostError('CATALOG_INCONSISTENT', `The catalog files in ${dir} do not name the same plugins: ${described}. They were left in place.`, {
    details: { dir, plugins: missing },
  });
}
