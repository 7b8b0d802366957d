/**
 * Pure helpers over catalog content, for transaction mutators and readers.
 * None of them touches the disk; each returns new objects.
 */
import { isAbsolute } from 'node:path';
import type {
  CatalogContents,
  CatalogSnapshot,
  CatalogVariant,
  LockedPlugin,
  NamespaceOwnerEntry,
  PluginDescriptor,
  PluginStateRecord,
} from './catalogTypes.js';

/** Everything the catalog knows about one installed plugin. */
export interface InstalledPlugin {
  /** The profile it is installed in. */
  readonly profile: string;
  /** The plugin id. */
  readonly plugin_id: string;
  /** Its `plugins.lock` entry (package and executable binding). */
  readonly lock: LockedPlugin;
  /** Its `plugin-state.json` entry, if any. */
  readonly state: PluginStateRecord | undefined;
  /** Its `plugin-catalog.json` variants. */
  readonly variants: readonly CatalogVariant[];
  /** Its `plugin-catalog.json` descriptor, if one was recorded. */
  readonly descriptor: PluginDescriptor | undefined;
}

/** What an install records for one plugin. */
export interface PluginRecords {
  /** The `plugins.lock` entry. */
  readonly lock: LockedPlugin;
  /** The `plugin-state.json` entry. */
  readonly state: PluginStateRecord;
  /** The plugin's variants (each must carry the plugin's id). */
  readonly variants: readonly CatalogVariant[];
  /** The plugin-level descriptor; without one, a previously recorded descriptor is dropped. */
  readonly descriptor?: PluginDescriptor;
}

/**
 * Adds or replaces one plugin in all three files at once. The first
 * namespace owner recorded for the plugin id is kept; it is added here only
 * when none is recorded yet (ownership rules themselves belong to NamespaceLock).
 */
export function putPlugin(contents: CatalogContents, records: PluginRecords): CatalogContents {
  const id = records.lock.plugin_id;
  const owner = records.lock.namespace_owner;
  const owners =
    owner !== undefined && contents.namespace_owners[id] === undefined
      ? withMember(contents.namespace_owners, id, { namespace_owner: owner, first_recorded_at: records.state.installed_at })
      : contents.namespace_owners;
  return {
    variants: [...contents.variants.filter((v) => v.plugin_id !== id), ...records.variants],
    descriptors: records.descriptor ? withMember(contents.descriptors, id, records.descriptor) : without(contents.descriptors, id),
    plugins: withMember(contents.plugins, id, records.lock),
    namespace_owners: owners,
    states: withMember(contents.states, id, records.state),
  };
}

/** Sets an own, enumerable member; `__proto__` too, which an assignment would take as the prototype. */
function setMember<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

/**
 * `{ ...record, [key]: value }`, built member by member: a catalog's records
 * hold a member per plugin, and copying a thousand-member record this way
 * costs about half of spreading it.
 */
function withMember<T>(record: Readonly<Record<string, T>>, key: string, value: T): Record<string, T> {
  const copy: Record<string, T> = {};
  for (const name of Object.keys(record)) setMember(copy, name, record[name] as T);
  setMember(copy, key, value);
  return copy;
}

/** `record` without `key`, built like {@link withMember}. */
function without<T>(record: Readonly<Record<string, T>>, key: string): Record<string, T> {
  const copy: Record<string, T> = {};
  for (const name of Object.keys(record)) if (name !== key) setMember(copy, name, record[name] as T);
  return copy;
}

/**
 * The package name of a lock row's npm registry source (`npm:<name>@<version>`,
 * a scoped name keeping its leading `@`); undefined for every other source,
 * a local tarball (`npm:<absolute path>`) included.
 */
export function registryPackageName(source: string): string | undefined {
  if (!source.startsWith('npm:')) return undefined;
  const spec = source.slice('npm:'.length);
  if (isAbsolute(spec)) return undefined;
  const at = spec.lastIndexOf('@');
  return at > 0 ? spec.slice(0, at) : spec;
}

// The bin an earlier remove kept is replaced by the one this remove's install ran with, or by none.
function ownerWithoutBin(owner: NamespaceOwnerEntry): NamespaceOwnerEntry {
  const { bin: _replaced, ...rest } = owner;
  return rest;
}

/** Removes one plugin from all three files; its namespace owner stays recorded. */
export function removePlugin(contents: CatalogContents, pluginId: string): CatalogContents {
  const signer = Object.hasOwn(contents.plugins, pluginId) ? contents.plugins[pluginId]?.package.signer : undefined;
  const registry = Object.hasOwn(contents.plugins, pluginId) ? contents.plugins[pluginId]?.package.registry : undefined;
  const bin = Object.hasOwn(contents.plugins, pluginId) ? contents.plugins[pluginId]?.package.bin : undefined;
  const source = Object.hasOwn(contents.plugins, pluginId) ? contents.plugins[pluginId]?.package.source : undefined;
  const packageName = registry !== undefined && source !== undefined ? registryPackageName(source) : undefined;
  const capabilities = Object.hasOwn(contents.descriptors, pluginId) ? contents.descriptors[pluginId]?.capabilities : undefined;
  const credentials = Object.hasOwn(contents.descriptors, pluginId) ? (contents.descriptors[pluginId]?.needs_user_creds ?? []) : [];
  const owner = Object.hasOwn(contents.namespace_owners, pluginId) ? contents.namespace_owners[pluginId] : undefined;
  const tools = contents.variants
    .filter((v) => v.plugin_id === pluginId)
    .map((v) => ({ op_id: v.op_id, name: v.tool_name, risk_class: v.risk_class, confirmation_policy: v.confirmation_policy }));
  return {
    variants: contents.variants.filter((v) => v.plugin_id !== pluginId),
    descriptors: without(contents.descriptors, pluginId),
    plugins: without(contents.plugins, pluginId),
    // The key that signed it and the powers and tool risks it was accepted with stay with the owner, as its data and credentials
    // stay: the next install is held to the key, and asked again when it would get more powers or easier-to-call tools.
    namespace_owners:
      owner === undefined || (signer === undefined && capabilities === undefined && registry === undefined && bin === undefined && owner.bin === undefined)
        ? contents.namespace_owners
        : withMember(contents.namespace_owners, pluginId, {
            ...ownerWithoutBin(owner),
            // The bin chosen for it stays too, as an upgrade keeps it: a reinstall naming none runs the same server, not the default bin.
            ...(bin === undefined ? {} : { bin }),
            ...(signer === undefined ? {} : { signer }),
            // The registry and package name stay too: the same name from another registry, or another name claiming
            // this id and owner, is another publisher's package.
            ...(registry === undefined ? {} : { registry }),
            ...(packageName === undefined ? {} : { package_name: packageName }),
            ...(capabilities === undefined ? {} : { accepted_capabilities: capabilities, accepted_credentials: [...credentials], accepted_tools: tools }),
          }),
    states: without(contents.states, pluginId),
  };
}

/** Replaces one plugin's state record (e.g. quarantine); unchanged content if it is not installed. */
export function updatePluginState(
  contents: CatalogContents,
  pluginId: string,
  update: (state: PluginStateRecord) => PluginStateRecord,
): CatalogContents {
  const state = contents.states[pluginId];
  if (state === undefined || contents.plugins[pluginId] === undefined) return contents;
  return { ...contents, states: withMember(contents.states, pluginId, update(state)) };
}

/** Every installed plugin of a snapshot, sorted by id. */
export function listPlugins(snapshot: CatalogSnapshot): InstalledPlugin[] {
  const { contents } = snapshot;
  const variantsByPlugin = new Map<string, CatalogVariant[]>();
  for (const variant of contents.variants) {
    const list = variantsByPlugin.get(variant.plugin_id);
    if (list) list.push(variant);
    else variantsByPlugin.set(variant.plugin_id, [variant]);
  }
  return Object.keys(contents.plugins)
    .sort()
    .map((id) => ({
      profile: snapshot.profile,
      plugin_id: id,
      lock: contents.plugins[id]!,
      state: contents.states[id],
      variants: variantsByPlugin.get(id) ?? [],
      descriptor: contents.descriptors[id],
    }));
}

/**
 * One plugin, looked up by (profile, plugin id). A key naming another
 * profile finds nothing: lookups never cross profiles.
 */
export function lookupPlugin(snapshot: CatalogSnapshot, key: { readonly profile: string; readonly plugin_id: string }): InstalledPlugin | undefined {
  if (key.profile !== snapshot.profile) return undefined;
  const lock = Object.prototype.hasOwnProperty.call(snapshot.contents.plugins, key.plugin_id) ? snapshot.contents.plugins[key.plugin_id] : undefined;
  if (lock === undefined) return undefined;
  return {
    profile: snapshot.profile,
    plugin_id: key.plugin_id,
    lock,
    state: snapshot.contents.states[key.plugin_id],
    variants: snapshot.contents.variants.filter((v) => v.plugin_id === key.plugin_id),
    descriptor: snapshot.contents.descriptors[key.plugin_id],
  };
}
