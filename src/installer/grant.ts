/**
 * The install-time grant: what sandbox powers an install gives a plugin.
 * A manifest that declares capabilities (GUM, Open Discovery) is the ceiling
 * and a grant may only narrow it; a source that declares nothing (an MCP
 * Bundle, an npm package without a manifest) starts from the host default in
 * etc/default-grant.json and gets exactly what the grant adds.
 */
import { err, ok, type Result } from 'neverthrow';
import defaultGrant from '../../etc/default-grant.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import { CLIENT_REQUEST_KINDS, isClientRequestKind } from '../manifest/clientRequestKinds.js';
import type { ClientRequestKind, DeclaredCapabilities, NormalizedManifest, PluginGrant } from '../manifest/model.js';
import { writeDirComponents } from '../sandbox/writeDir.js';
import { egressPolicy, uncoveredDestinations } from '../egress/destinations.js';
import type { EnvDenylist } from '../env/EnvDenylist.js';

/** The capabilities a source that declares none runs with when nothing is granted: no network, no writable dir beyond the data dir, no env. */
export const DEFAULT_CAPABILITIES: DeclaredCapabilities = Object.freeze({
  network: defaultGrant.network,
  fs_write_dir: defaultGrant.fs_write_dir,
  env_allow: Object.freeze([...defaultGrant.env_allow]),
});

const GRANT_FIELDS: ReadonlySet<string> = new Set(['network', 'fs_write_dir', 'env_allow', 'egress', 'client_requests']);

function invalidGrant(field: string, problem: string): HostError {
  return hostError('HOST_INVALID_OPTIONS', `option grant${field === '' ? '' : `.${field}`} ${problem}`, { details: { option: `grant${field === '' ? '' : `.${field}`}` } });
}

const isStringList = (value: unknown): value is readonly string[] => Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '');

/** Checks a grant's own form (known fields, value types), whatever the manifest declares. */
export function checkGrant(grant: unknown): Result<PluginGrant, HostError> {
  if (typeof grant !== 'object' || grant === null || Array.isArray(grant)) return err(invalidGrant('', 'must be an object'));
  const fields = grant as Readonly<Record<string, unknown>>;
  const unknown = Object.keys(fields).find((key) => !GRANT_FIELDS.has(key));
  if (unknown !== undefined) return err(invalidGrant(unknown, `is not a grant field (${[...GRANT_FIELDS].join(', ')})`));
  if (fields['network'] !== undefined && typeof fields['network'] !== 'boolean') return err(invalidGrant('network', 'must be a boolean'));
  if (fields['fs_write_dir'] !== undefined && typeof fields['fs_write_dir'] !== 'string') return err(invalidGrant('fs_write_dir', 'must be a string'));
  for (const list of ['env_allow', 'egress', 'client_requests'] as const) {
    if (fields[list] !== undefined && !isStringList(fields[list])) return err(invalidGrant(list, 'must be a list of non-empty strings'));
  }
  const unknownKind = ((fields['client_requests'] ?? []) as readonly string[]).findIndex((kind) => !isClientRequestKind(kind));
  if (unknownKind >= 0) {
    const kind = (fields['client_requests'] as readonly string[])[unknownKind];
    return err(
      hostError('PLUGIN_CLIENT_REQUESTS_INVALID', `grant.client_requests names ${JSON.stringify(kind)}, which is not one of ${CLIENT_REQUEST_KINDS.join(', ')}`, {
        details: { pointer: `/grant/client_requests/${unknownKind}` },
      }),
    );
  }
  return ok(fields as PluginGrant);
}

/**
 * The env names a grant asks the host to pass (`env_allow`, `--grant-env`),
 * checked against the host's denylist before anything of the source runs (an
 * npm server's or a bundle's introspection start is the first thing that
 * would): a denylisted name fails with PLUGIN_ENV_PROHIBITED in the contract's
 * canonical form, `details.pointer` `/grant/env_allow`, and a hint saying what
 * to do instead. Dropping the name silently at every start left a server that
 * could never start, and a user granting the name again.
 *
 * @param plugin - The plugin's id, or, before it is known (an npm tarball not yet read), the source as given, which
 *   the message names in its place.
 */
export function checkGrantedEnv(plugin: { readonly id: string } | { readonly source: string }, grant: PluginGrant | undefined, denylist: EnvDenylist): Result<void, HostError> {
  const names = grant?.env_allow ?? [];
  if (names.length === 0) return ok(undefined);
  const checked = 'id' in plugin ? denylist.check(plugin.id, names, 'env_allow') : denylist.check(plugin.source, names, 'env_allow', null);
  return checked.mapErr((error) =>
    hostError(error.code, error.message, { details: { ...error.details, pointer: '/grant/env_allow' }, hint: error.hint }),
  );
}

/** Whether the manifest's capabilities are the source's own declaration rather than the host default. */
export function declaresCapabilities(manifest: Pick<NormalizedManifest, 'capabilities_source'>): boolean {
  return manifest.capabilities_source !== 'host_default';
}

/** The remedy of a PLUGIN_GRANT_EXCEEDS_DECLARATION, naming the grant field at fault. */
export function grantExceedsHint(field: string): string {
  return `Narrow grant.${field} to what the manifest's declared_capabilities allow, or leave grant.${field} out to keep the declaration.`;
}

function exceeds(pluginId: string, field: keyof PluginGrant, granted: unknown, declared: unknown, why: string): HostError {
  return hostError('PLUGIN_GRANT_EXCEEDS_DECLARATION', `the grant for '${pluginId}' asks for more than its manifest declares: ${field} ${why}`, {
    details: { plugin_id: pluginId, field, granted, declared },
    hint: grantExceedsHint(field),
  });
}

/** The grant's own fields only, lists copied: what the lock records. */
export function recordedGrant(grant: PluginGrant): PluginGrant {
  return {
    ...(grant.network === undefined ? {} : { network: grant.network }),
    ...(grant.fs_write_dir === undefined ? {} : { fs_write_dir: grant.fs_write_dir }),
    ...(grant.env_allow === undefined ? {} : { env_allow: [...grant.env_allow] }),
    ...(grant.egress === undefined ? {} : { egress: [...grant.egress] }),
    ...(grant.client_requests === undefined ? {} : { client_requests: [...grant.client_requests] }),
  };
}

/** Whether two grants give the same powers (both absent counts as the same). */
export function sameGrant(a: PluginGrant | undefined, b: PluginGrant | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const x = recordedGrant(a);
  const y = recordedGrant(b);
  const sameList = (l?: readonly string[], r?: readonly string[]): boolean =>
    l === undefined || r === undefined ? l === r : l.length === r.length && [...l].sort().every((v, i) => v === [...r].sort()[i]);
  return (
    x.network === y.network &&
    x.fs_write_dir === y.fs_write_dir &&
    sameList(x.env_allow, y.env_allow) &&
    sameList(x.egress, y.egress) &&
    sameList(x.client_requests, y.client_requests)
  );
}

/** The granted destination list, checked (PLUGIN_EGRESS_DESTINATION_INVALID at `/grant/egress/<i>`), as a capabilities field. */
function grantedEgress(grant: PluginGrant): Result<{ egress?: readonly string[] }, HostError> {
  if (grant.egress === undefined || grant.egress.length === 0) return ok({});
  return egressPolicy(grant.egress, '/grant/egress').map((policy) => ({ egress: [...policy.entries] }));
}

/**
 * The destinations a declaring plugin gets: its declared list, or the
 * granted one when the declaration covers it (the whole network covers
 * every list; a declared list covers a granted destination it allows).
 */
function narrowEgress(pluginId: string, declared: DeclaredCapabilities, grant: PluginGrant): Result<{ egress?: readonly string[] }, HostError> {
  const declaredList = declared.egress ?? [];
  if (grant.egress === undefined) return ok(declaredList.length === 0 ? {} : { egress: declaredList });
  if (grant.egress.length === 0) return ok({});
  const granted = egressPolicy(grant.egress, '/grant/egress');
  if (granted.isErr()) return err(granted.error);
  const list = { egress: [...granted.value.entries] };
  if (declared.network) return ok(list);
  const outer = egressPolicy(declaredList, '/declared_capabilities/egress');
  if (outer.isErr()) return err(outer.error);
  const uncovered = uncoveredDestinations(granted.value, outer.value);
  if (uncovered.length === 0) return ok(list);
  return err(exceeds(pluginId, 'egress', uncovered, declaredList, `names ${uncovered.join(', ')}, which the declared destinations do not cover`));
}

/** The client_requests field of granted capabilities: absent when there are none. */
function clientRequestsField(kinds: readonly ClientRequestKind[] | undefined): { client_requests?: readonly ClientRequestKind[] } {
  return kinds === undefined || kinds.length === 0 ? {} : { client_requests: [...new Set(kinds)] };
}

/** Whether `inner` names `outer` or a directory below it (both already checked relative paths). */
function isWithin(inner: readonly string[], outer: readonly string[]): boolean {
  return inner.length >= outer.length && outer.every((part, i) => inner[i] === part);
}

function narrowWriteDir(pluginId: string, declared: string, granted: string): Result<string, HostError> {
  const outer = writeDirComponents(declared);
  const inner = writeDirComponents(granted);
  if (inner.isErr()) return err(inner.error);
  if (outer.isErr()) return err(outer.error);
  // "" names the data dir, the floor every plugin writes; a declared "" has nothing below it to grant.
  if (inner.value.length === 0 || (outer.value.length > 0 && isWithin(inner.value, outer.value))) return ok(granted);
  return err(exceeds(pluginId, 'fs_write_dir', granted, declared, `${JSON.stringify(granted)} is not ${JSON.stringify(declared)} or a directory inside it`));
}

/**
 * The capabilities an install gives the plugin: the declaration narrowed by
 * the grant, or for a source that declares nothing, the default widened by
 * it. Asking a declaring manifest for more fails with
 * PLUGIN_GRANT_EXCEEDS_DECLARATION (`details.field` names the field); a
 * malformed grant or write dir fails with its own code.
 */
export function grantedCapabilities(manifest: Pick<NormalizedManifest, 'plugin_id' | 'capabilities' | 'capabilities_source'>, grant: PluginGrant | undefined): Result<DeclaredCapabilities, HostError> {
  if (grant === undefined) return ok(manifest.capabilities);
  const form = checkGrant(grant);
  if (form.isErr()) return err(form.error);
  const id = manifest.plugin_id;
  if (!declaresCapabilities(manifest)) {
    const fsWriteDir = grant.fs_write_dir ?? manifest.capabilities.fs_write_dir;
    const checked = writeDirComponents(fsWriteDir);
    if (checked.isErr()) return err(checked.error);
    const egress = grantedEgress(grant);
    if (egress.isErr()) return err(egress.error);
    return ok({
      network: grant.network ?? manifest.capabilities.network,
      fs_write_dir: fsWriteDir,
      env_allow: [...new Set(grant.env_allow ?? manifest.capabilities.env_allow)],
      ...egress.value,
      ...clientRequestsField(grant.client_requests ?? manifest.capabilities.client_requests),
    });
  }
  const declared = manifest.capabilities;
  if (grant.network === true && !declared.network) return err(exceeds(id, 'network', true, false, 'is not declared'));
  const egress = narrowEgress(id, declared, grant);
  if (egress.isErr()) return err(egress.error);
  const undeclared = (grant.env_allow ?? []).filter((name) => !declared.env_allow.includes(name));
  if (undeclared.length > 0) return err(exceeds(id, 'env_allow', undeclared, declared.env_allow, `names ${undeclared.join(', ')}, which are not declared`));
  const fsWriteDir = grant.fs_write_dir === undefined ? ok(declared.fs_write_dir) : narrowWriteDir(id, declared.fs_write_dir, grant.fs_write_dir);
  if (fsWriteDir.isErr()) return err(fsWriteDir.error);
  const declaredRequests = declared.client_requests ?? [];
  const undeclaredRequests = (grant.client_requests ?? []).filter((kind) => !declaredRequests.includes(kind));
  if (undeclaredRequests.length > 0) {
    return err(exceeds(id, 'client_requests', undeclaredRequests, declaredRequests, `names ${undeclaredRequests.join(', ')}, which are not declared`));
  }
  return ok({
    // A destination list granted to a plugin declaring the whole network narrows it to those destinations.
    network: grant.network ?? (grant.egress !== undefined && grant.egress.length > 0 ? false : declared.network),
    fs_write_dir: fsWriteDir.value,
    env_allow: grant.env_allow === undefined ? declared.env_allow : [...new Set(grant.env_allow)],
    ...egress.value,
    ...clientRequestsField(grant.client_requests ?? declared.client_requests),
  });
}
