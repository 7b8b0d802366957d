/**
 * The pure steps of manifest validation, in the order the GUM contract
 * fixes: schema-version placement, the Shape 2 gate, structure, namespace
 * owner presence, credential descriptors, schema refs (schemaRefs.ts) and
 * strip-nulls safety. Each takes the parsed document and returns its
 * violations; none throws, none assumes the document is well formed.
 */
import {
  isRecord,
  own,
  ownString,
  ownStrings,
  toolEntries,
  toolNameOf,
} from './access.js';
import type { ManifestForm, OutputProfileFacts, ManifestShape } from './model.js';
import { parseDestination } from '../egress/destinations.js';
import { EnvDenylist, prohibitedEnvMessage } from '../env/EnvDenylist.js';
import { reservedNamespacePreset } from '../namespace/NamespaceLock.js';
import { ajvViolations, type CompiledSchema } from './schemas.js';
import { pointerOf, violation, type Violation } from './violations.js';

/**
 * declared_capabilities.egress of a GUM manifest: each destination must be
 * `host[:port]`, `*.suffix[:port]` or an IP literal (IPv6 in brackets) →
 * PLUGIN_EGRESS_DESTINATION_INVALID at the entry's pointer. The schema
 * checked the list's shape already.
 */
export function checkEgressDestinations(doc: unknown, form: ManifestForm): Violation[] {
  if (form === 'open-discovery') return [];
  const list = own(own(doc, 'declared_capabilities'), 'egress');
  if (!Array.isArray(list)) return [];
  return list.flatMap((entry: unknown, index) => {
    if (typeof entry !== 'string') return [];
    const rule = parseDestination(entry);
    return rule.isOk() ? [] : [violation('structure', 'PLUGIN_EGRESS_DESTINATION_INVALID', pointerOf('declared_capabilities', 'egress', index), `egress destination ${JSON.stringify(entry)} ${rule.error}`)];
  });
}

/** Who publishes the plugin: first-party bundled plugins get the contract's two exemptions. */
export interface TrustOptions {
  /** Bundled first-party plugin: may omit namespace_owner and a (JSON or TOML) top-level manifest_schema_version. */
  readonly firstParty: boolean;
}

/** The one schema version this host reads. */
export const SUPPORTED_MANIFEST_SCHEMA_VERSION = 1;

/**
 * manifest_schema_version: missing on a third-party manifest, not exactly 1,
 * or (TOML) nested inside `[plugin]` → PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED.
 * Open Discovery manifests carry no schema version.
 */
export function checkSchemaVersionPlacement(doc: unknown, form: ManifestForm, trust: TrustOptions): Violation[] {
  if (form === 'open-discovery' || !isRecord(doc)) return [];
  const out: Violation[] = [];
  const code = 'PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED';
  if (form === 'gum-toml' && own(own(doc, 'plugin'), 'manifest_schema_version') !== undefined) {
    out.push(
      violation('schema_version', code, '/plugin/manifest_schema_version', 'manifest_schema_version must be a top-level key, a sibling of [plugin], never inside it'),
    );
  }
  const version = own(doc, 'manifest_schema_version');
  if (version === undefined) {
    // A version nested inside [plugin] is reported as misplaced, not also as missing.
    if (!trust.firstParty && out.length === 0) {
      out.push(
        violation('schema_version', code, '/manifest_schema_version', 'manifest_schema_version is missing; third-party manifests must declare manifest_schema_version = 1 at the top level'),
      );
    }
  } else if (version !== SUPPORTED_MANIFEST_SCHEMA_VERSION) {
    out.push(
      violation('schema_version', code, '/manifest_schema_version', `manifest_schema_version ${JSON.stringify(version)} is not supported; this host reads ${SUPPORTED_MANIFEST_SCHEMA_VERSION}`),
    );
  }
  return out;
}

/** Which shapes a host runs, and whether the plugin is first-party. */
export interface ShapeGateOptions extends TrustOptions {
  /** Shapes accepted; `grpc-subprocess` only ever passes for first-party plugins. */
  readonly allowedShapes: readonly ManifestShape[];
}

/** Whether the host accepts `shape`; `grpc-subprocess` only from a first party. */
function shapeAccepted(shape: string, options: ShapeGateOptions): boolean {
  return options.allowedShapes.includes(shape as ManifestShape) && (shape !== 'grpc-subprocess' || options.firstParty);
}

/**
 * The Shape 2 gate and shape support: `grpc-subprocess` or any `grpc-plugin`
 * tool from a third party, or a shape the host does not accept →
 * PLUGIN_SHAPE_UNSUPPORTED. Runs right after parsing, before structure, so
 * it wins over PLUGIN_BINDING_INVALID.
 */
export function checkShapeGate(doc: unknown, form: ManifestForm, options: ShapeGateOptions): Violation[] {
  const code = 'PLUGIN_SHAPE_UNSUPPORTED';
  if (form === 'open-discovery') {
    return shapeAccepted('esm-module', options)
      ? []
      : [violation('shape', code, '', 'Open Discovery plugins run as shape "esm-module", which this host does not accept')];
  }
  const out: Violation[] = [];
  const shapePointer = form === 'gum-toml' ? '/plugin/shape' : '/shape';
  const shape = ownString(form === 'gum-toml' ? own(doc, 'plugin') : doc, 'shape');
  if (shape === 'grpc-subprocess' && !options.firstParty) {
    out.push(violation('shape', code, shapePointer, 'third-party Shape 2 (grpc-subprocess) manifests are not accepted; use shape "mcp-plugin"'));
  } else if (shape !== undefined && shape !== '' && !shapeAccepted(shape, options)) {
    out.push(
      violation('shape', code, shapePointer, `shape ${JSON.stringify(shape)} is not supported; this host accepts ${options.allowedShapes.map((s) => JSON.stringify(s)).join(', ')}`),
    );
  }
  if (form === 'gum-toml') {
    for (const { at, tool } of toolEntries(doc, form)) {
      if (ownString(tool, 'backend_kind') === 'grpc-plugin' && !shapeAccepted('grpc-subprocess', options)) {
        out.push(
          violation('shape', code, pointerOf(...at, 'backend_kind'), options.firstParty
            ? 'backend_kind "grpc-plugin" needs shape "grpc-subprocess", which this host does not accept'
            : 'third-party Shape 2 tool bindings (backend_kind "grpc-plugin") are not accepted'),
        );
      }
    }
  }
  return out;
}

/** Full structural validation: the compiled JSON Schema, then the rules a schema cannot express. */
export function checkStructure(doc: unknown, form: ManifestForm, schema: CompiledSchema): Violation[] {
  const out = schema(doc) ? [] : ajvViolations(form, schema.errors);
  return [...out, ...checkToolSemantics(doc, form), ...(form === 'open-discovery' ? checkOpenDiscoveryIdentity(doc) : [])];
}

/** An unprefixed tool name, as the GUM schemas define it. */
const TOOL_NAME = /^(?!plug\.)[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** Records `value` of a tool's `field` in `seen`, reporting it to `out` when an earlier tool had it. */
function noteUniqueId(out: Violation[], seen: Set<string>, field: string, value: string | undefined, at: readonly (string | number)[]): void {
  if (value === undefined) return;
  if (seen.has(value)) out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', pointerOf(...at, field), `duplicate ${field} ${JSON.stringify(value)}`));
  seen.add(value);
}

/**
 * Tool rules across records: unique names (and op/variant ids), a
 * high_stakes_write policy only on write tools, a canary naming a declared tool.
 */
export function checkToolSemantics(doc: unknown, form: ManifestForm): Violation[] {
  const out: Violation[] = [];
  const opIds = new Set<string>();
  const variantIds = new Set<string>();
  const names = new Set<string>();
  let unnamed = false;
  for (const { at, tool } of toolEntries(doc, form)) {
    const { key, name } = toolNameOf(tool, form);
    unnamed ||= name === undefined || !TOOL_NAME.test(name);
    if (name !== undefined) {
      if (names.has(name)) {
        out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', pointerOf(...at, key), `duplicate tool name ${JSON.stringify(name)}`));
      }
      names.add(name);
    }
    if (form === 'gum-toml') {
      noteUniqueId(out, opIds, 'op_id', ownString(tool, 'op_id'), at);
      noteUniqueId(out, variantIds, 'variant_id', ownString(tool, 'variant_id'), at);
    }
    const risk = ownString(tool, 'risk_class');
    if (ownString(tool, 'confirmation_policy') === 'high_stakes_write' && risk !== undefined && risk !== 'write') {
      out.push(
        violation('structure', 'PLUGIN_MANIFEST_INVALID', pointerOf(...at, 'confirmation_policy'), `confirmation_policy "high_stakes_write" is valid only for risk_class "write", not ${JSON.stringify(risk)}`),
      );
    }
  }
  const canaryTool = ownString(own(own(doc, 'requirements'), 'canary'), 'tool');
  // A tool without a well-formed name is already reported; judging the canary against the rest would blame it wrongly.
  if (!unnamed && canaryTool !== undefined && canaryTool !== '' && !names.has(canaryTool)) {
    out.push(
      violation('structure', 'PLUGIN_MANIFEST_INVALID', '/requirements/canary/tool', `canary calls ${JSON.stringify(canaryTool)}, which is not a declared tool`),
    );
  }
  return out;
}

const PLUGIN_ID = /^[a-z][a-z0-9-]{0,63}$/;

/** The plugin id an Open Discovery name becomes: lowercased, `_` → `-`; `undefined` when that is not a valid id. */
export function pluginIdFromOpenDiscoveryName(name: string): string | undefined {
  const id = name.toLowerCase().replace(/_/g, '-');
  return PLUGIN_ID.test(id) ? id : undefined;
}

const UNSAFE_RELATIVE = /^(?:[/\\]|[A-Za-z]:)|(?:^|[/\\])\.\.(?:[/\\]|$)|[\u0000-\u001f\u007f]/;

/** Whether a path is relative, stays inside its root and has no control characters. */
export function isSafeRelativePath(path: string): boolean {
  return path !== '' && !UNSAFE_RELATIVE.test(path);
}

/**
 * Open Discovery identity rules that hold whatever draft-07 schema a host
 * configures: the name must become a plugin id, the entry must stay inside
 * the plugin root, dependencies must not name the plugin itself.
 */
export function checkOpenDiscoveryIdentity(doc: unknown): Violation[] {
  const out: Violation[] = [];
  const name = ownString(doc, 'name');
  const id = name === undefined ? undefined : pluginIdFromOpenDiscoveryName(name);
  if (name !== undefined && id === undefined) {
    out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', '/name', `name ${JSON.stringify(name)} cannot become a plugin id (lowercased, "_" → "-", must match ${PLUGIN_ID.source})`));
  }
  const entry = ownString(doc, 'entry');
  if (entry !== undefined && !isSafeRelativePath(entry)) {
    out.push(violation('structure', 'PLUGIN_ENTRY_INVALID', '/entry', `entry ${JSON.stringify(entry)} must be a relative path inside the plugin root`));
  }
  for (const { index, value } of ownStrings(doc, 'dependencies')) {
    if (id !== undefined && pluginIdFromOpenDiscoveryName(value) === id) {
      out.push(violation('structure', 'PLUGIN_DEPENDENCY_CYCLE', pointerOf('dependencies', index), 'a plugin cannot depend on itself'));
    }
  }
  return out;
}

/**
 * namespace_owner presence: required on third-party GUM manifests →
 * PLUGIN_NAMESPACE_CONFLICT. Reserved prefixes and ownership in the lock
 * belong to NamespaceLock.
 */
export function checkNamespaceOwnerPresence(doc: unknown, form: ManifestForm, trust: TrustOptions): Violation[] {
  if (form === 'open-discovery' || trust.firstParty) return [];
  const holder = form === 'gum-toml' ? own(doc, 'plugin') : doc;
  if (!isRecord(holder) || own(holder, 'namespace_owner') !== undefined) return [];
  const pointer = form === 'gum-toml' ? '/plugin/namespace_owner' : '/namespace_owner';
  return [violation('namespace', 'PLUGIN_NAMESPACE_CONFLICT', pointer, 'namespace_owner is required for third-party plugins (reverse-DNS or registry identity)')];
}

// GUM's own rules, shipped as its presets in etc/; a host's preset adds to them for its own installs only.
const gumEnvRules = new EnvDenylist({ preset: 'gum' });
const gumReservedPrefixes = reservedNamespacePreset('gum');
const gumContractViolations = new WeakSet<Violation>();

/**
 * Whether a violation of {@link checkGumContractRules} repeats what the
 * host's own checks found (same stage and code): an installing host's
 * denylist and reserved prefixes cover GUM's under the `gum` preset, and one
 * refusal per rule is enough.
 */
export function repeatsHostCheck(found: Violation, hostViolations: readonly Violation[]): boolean {
  return gumContractViolations.has(found) && hostViolations.some((h) => h.stage === found.stage && h.code === found.code);
}

/**
 * The GUM contract's own refusals for a GUM-form manifest, whatever preset
 * the host runs under, so that `validate` passes only what GUM itself
 * accepts: an env_allow or needs_user_creds name on GUM's denylist →
 * PLUGIN_ENV_PROHIBITED, and a third-party plugin_id under a reserved
 * first-party prefix → PLUGIN_NAMESPACE_CONFLICT.
 */
export function checkGumContractRules(doc: unknown, form: ManifestForm, trust: TrustOptions): Violation[] {
  if (form === 'open-discovery') return [];
  const out: Violation[] = [];
  // The TOML form names the plugin id `[plugin].name`.
  const [idHolder, idKey] = form === 'gum-toml' ? [own(doc, 'plugin'), 'name'] : [doc, 'plugin_id'];
  const pluginId = ownString(idHolder, idKey);
  const reserved = pluginId === undefined || trust.firstParty ? undefined : gumReservedPrefixes.find((p) => pluginId === p || pluginId.startsWith(`${p}-`));
  if (pluginId !== undefined && reserved !== undefined) {
    const pointer = form === 'gum-toml' ? '/plugin/name' : '/plugin_id';
    out.push(violation('namespace', 'PLUGIN_NAMESPACE_CONFLICT', pointer, `plugin_id '${pluginId}' falls under the GUM contract's reserved first-party prefix '${reserved}'`));
  }
  for (const [section, field] of [
    ['declared_capabilities', 'env_allow'],
    ['requirements', 'needs_user_creds'],
  ] as const) {
    for (const { index, value } of ownStrings(own(doc, section), field)) {
      // A name the host added to the seed's list that a user may store for a plugin is a credential the contract accepts.
      if (gumEnvRules.ruleIn(field, value) !== undefined) {
        out.push(violation('env', 'PLUGIN_ENV_PROHIBITED', pointerOf(section, field, index), prohibitedEnvMessage(field, value, pluginId ?? '')));
      }
    }
  }
  for (const found of out) gumContractViolations.add(found);
  return out;
}

/**
 * Credential descriptors: exactly one per needs_user_creds entry, matched by
 * `env`. Missing, duplicate or extra → PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID.
 */
export function checkCredentialDescriptors(doc: unknown, form: ManifestForm): Violation[] {
  if (form === 'open-discovery') return [];
  const code = 'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID';
  const requirements = own(doc, 'requirements');
  const needs = ownStrings(requirements, 'needs_user_creds');
  const needed = new Set(needs.map((n) => n.value));
  const descriptors = own(requirements, 'credential_descriptors');
  const out: Violation[] = [];
  if (needs.length > 0 && descriptors === undefined) {
    return [violation('credentials', code, '/requirements/credential_descriptors', `needs_user_creds lists ${needs.length} credential(s) but credential_descriptors is missing; declare one descriptor per entry`)];
  }
  const described = new Set<string>();
  const aliases = new Set<string>();
  if (Array.isArray(descriptors)) {
    descriptors.forEach((descriptor: unknown, index) => {
      const env = ownString(descriptor, 'env');
      if (env !== undefined) {
        const at = pointerOf('requirements', 'credential_descriptors', index, 'env');
        if (described.has(env)) out.push(violation('credentials', code, at, `duplicate credential descriptor for ${env}`));
        else if (!needed.has(env)) out.push(violation('credentials', code, at, `credential descriptor for ${env}, which needs_user_creds does not list`));
        described.add(env);
      }
      const alias = ownString(descriptor, 'alias');
      if (alias !== undefined) {
        if (aliases.has(alias)) {
          out.push(violation('credentials', code, pointerOf('requirements', 'credential_descriptors', index, 'alias'), `duplicate credential alias ${JSON.stringify(alias)}`));
        }
        aliases.add(alias);
      }
    });
  }
  for (const { index, value } of needs) {
    if (!described.has(value)) {
      out.push(violation('credentials', code, pointerOf('requirements', 'needs_user_creds', index), `no credential descriptor for ${value}`));
    }
  }
  return out;
}

/**
 * The auth taxonomy, as one consistent declaration: `none` declares no
 * credentials or components; `secrets` (the default with credentials)
 * declares no components; `compound` declares components, a secret
 * component per credential descriptor (by alias) so setup collects every
 * one, and a canary, since only a live canary proves the stored subject
 * reaches the declared accounts; `plugin_managed` takes no
 * google_access_token (the plugin owns its auth). Mismatches →
 * PLUGIN_AUTH_INVALID.
 */
export function checkAuthTaxonomy(doc: unknown, form: ManifestForm): Violation[] {
  if (form === 'open-discovery') return [];
  const code = 'PLUGIN_AUTH_INVALID';
  const requirements = own(doc, 'requirements');
  const strategy = ownString(requirements, 'auth_strategy');
  const componentsValue = own(requirements, 'auth_components');
  const components = Array.isArray(componentsValue) ? componentsValue : [];
  // Most manifests declare neither: nothing below applies to them.
  if (strategy === undefined) {
    return components.length > 0 ? [violation('credentials', code, pointerOf('requirements', 'auth_components'), 'auth_components needs auth_strategy "compound" or "plugin_managed"')] : [];
  }
  const needs = ownStrings(requirements, 'needs_user_creds');
  const descriptors = own(requirements, 'credential_descriptors');
  const aliases = new Set((Array.isArray(descriptors) ? descriptors : []).map((d: unknown) => ownString(d, 'alias')).filter((a): a is string => a !== undefined));
  const at = (...parts: (string | number)[]): string => pointerOf('requirements', ...parts);
  const out: Violation[] = [];
  if (strategy === 'none' && needs.length > 0) out.push(violation('credentials', code, at('auth_strategy'), `auth_strategy "none" with ${needs.length} needs_user_creds entr(ies)`));
  if ((strategy === 'none' || strategy === 'secrets') && components.length > 0) {
    out.push(violation('credentials', code, at('auth_components'), `auth_strategy "${strategy}" takes no auth_components; use "compound"`));
  }
  if (strategy === 'secrets' && needs.length === 0) out.push(violation('credentials', code, at('auth_strategy'), 'auth_strategy "secrets" without needs_user_creds'));
  if (strategy === 'compound') {
    if (components.length === 0) out.push(violation('credentials', code, at('auth_components'), 'auth_strategy "compound" declares no auth_components'));
    if (own(requirements, 'canary') === undefined) {
      out.push(violation('credentials', code, at('canary'), 'auth_strategy "compound" needs a canary: only a live canary proves the credentials reach the declared accounts'));
    }
  }
  const covered = new Set<string>();
  components.forEach((component: unknown, index) => {
    const kind = ownString(component, 'kind');
    const credential = ownString(component, 'credential');
    if (kind === 'secret') {
      if (credential === undefined || !aliases.has(credential)) {
        out.push(violation('credentials', code, at('auth_components', index, 'credential'), 'a secret component must name the alias of one of the credential_descriptors'));
      } else covered.add(credential);
    } else if (credential !== undefined) {
      out.push(violation('credentials', code, at('auth_components', index, 'credential'), `a ${kind ?? 'non-secret'} component names no credential`));
    }
    if (kind === 'google_access_token' && strategy === 'plugin_managed') {
      out.push(violation('credentials', code, at('auth_components', index, 'kind'), 'a plugin_managed plugin owns its auth and takes no google_access_token'));
    }
  });
  if (strategy === 'compound') {
    for (const alias of aliases) {
      if (!covered.has(alias)) out.push(violation('credentials', code, at('credential_descriptors'), `credential ${JSON.stringify(alias)} has no secret auth component`));
    }
  }
  return out;
}

/** Looks up an output profile the manifest does not ship (host built-ins, profile files). */
export type OutputProfileResolver = (name: string) => OutputProfileFacts | undefined;

function profileFacts(doc: unknown, name: string, resolve: OutputProfileResolver | undefined): OutputProfileFacts | undefined {
  const shipped = own(own(doc, 'output_profiles'), name);
  if (isRecord(shipped)) {
    const keep = ownStrings(shipped, 'keep_fields').map((k) => k.value);
    return { strip_nulls: own(shipped, 'strip_nulls') === true, keep_fields: keep };
  }
  return resolve?.(name);
}

/**
 * strip_nulls safety: a tool whose output profile strips nulls must declare
 * null_elision_safe_fields covering every field the profile keeps (or `"*"`);
 * a profile that keeps every field needs `"*"`. Otherwise
 * PROFILE_STRIP_NULLS_UNSAFE. Profiles the manifest does not ship and the
 * resolver does not know are not judged here.
 */
export function checkStripNullsSafety(doc: unknown, form: ManifestForm, resolve?: OutputProfileResolver): Violation[] {
  const code = 'PROFILE_STRIP_NULLS_UNSAFE';
  const out: Violation[] = [];
  for (const { at, tool } of toolEntries(doc, form)) {
    const profile = ownString(tool, 'output_profile');
    if (profile === undefined) continue;
    const facts = profileFacts(doc, profile, resolve);
    if (facts?.strip_nulls !== true) continue;
    const pointer = pointerOf(...at, 'null_elision_safe_fields');
    const safe = new Set(ownStrings(tool, 'null_elision_safe_fields').map((s) => s.value));
    if (safe.has('*')) continue;
    if (safe.size === 0) {
      out.push(violation('strip_nulls', code, pointer, `output profile ${JSON.stringify(profile)} strips nulls but the tool declares no null_elision_safe_fields`));
      continue;
    }
    const keep = facts.keep_fields ?? [];
    if (keep.length === 0) {
      out.push(violation('strip_nulls', code, pointer, `output profile ${JSON.stringify(profile)} strips nulls from every field; only "*" covers that`));
      continue;
    }
    const uncovered = keep.filter((field) => !safe.has(field));
    if (uncovered.length > 0) {
      out.push(violation('strip_nulls', code, pointer, `output profile ${JSON.stringify(profile)} may elide ${uncovered.map((f) => JSON.stringify(f)).join(', ')}, not covered by null_elision_safe_fields`));
    }
  }
  return out;
}

/** Narrows a document to a record, reporting anything else as a parse violation. */
export function checkDocumentIsObject(doc: unknown, form: ManifestForm): Violation[] {
  return isRecord(doc) ? [] : [violation('parse', 'PLUGIN_MANIFEST_INVALID', '', `a ${form === 'gum-toml' ? 'TOML' : 'JSON'} manifest must be an object, not ${Array.isArray(doc) ? 'an array' : doc === null ? 'null' : typeof doc}`)];
}
