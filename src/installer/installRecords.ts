/**
 * What an install records in the catalog for one validated manifest: the
 * lock entry, the initial state, one variant per tool and the plugin
 * descriptor. Pure; the Installer publishes the result in one transaction.
 */
import type { ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import type { PluginRecords } from '../catalog/catalogContents.js';
import type { CatalogVariant, PluginDescriptor, PluginStateRecord } from '../catalog/catalogTypes.js';
import { definedProfiles, effectiveProfile } from '../manifest/outputProfiles.js';
import { recordedGrant } from './grant.js';
import { DERIVED_REF_SUFFIXES } from '../manifest/schemaRefs.js';
import type { DeclaredCapabilities, ManifestTool, NormalizedManifest, PluginGrant } from '../manifest/model.js';
import type { StagedPackage } from './openPackageSource.js';

/** The catalog ids of one tool. */
export interface ToolIds {
  /** `op_id` as declared (TOML form) or `plug.<plugin_id>.<tool>`. */
  readonly op_id: string;
  /** `variant_id` as declared or `<op_id>@<version>`. */
  readonly variant_id: string;
}

/** The ids a tool is recorded under. */
export function toolIds(manifest: NormalizedManifest, tool: ManifestTool): ToolIds {
  const opId = tool.op_id ?? `plug.${manifest.plugin_id}.${tool.name}`;
  return { op_id: opId, variant_id: tool.variant_id ?? `${opId}@${manifest.version}` };
}

/** The served schema digests of one tool: exactly `<schema_ref>.request` and `<schema_ref>.response`. */
function schemaHashesOf(manifest: NormalizedManifest, tool: ManifestTool): Record<string, string> {
  if (tool.schema_ref === undefined) return {};
  const refs = new Set(DERIVED_REF_SUFFIXES.map((suffix) => `${tool.schema_ref}.${suffix}`));
  return Object.fromEntries(manifest.schemas.filter((s) => refs.has(s.ref)).map((s) => [s.ref, s.digest]));
}

/**
 * A tool's output profile binding: the name, the definition in force (the
 * manifest's own, merged with its base, else a built-in), recorded so calls
 * never re-read the manifest, and the paths where stripping nulls is safe.
 */
function profileBindingOf(manifest: NormalizedManifest, tool: ManifestTool): Partial<CatalogVariant> {
  if (tool.output_profile === undefined) return {};
  const definition = effectiveProfile(tool.output_profile, definedProfiles(manifest.raw));
  return {
    output_profile: tool.output_profile,
    ...(definition === undefined ? {} : { output_profile_definition: definition }),
    ...(tool.null_elision_safe_fields.length === 0 ? {} : { null_elision_safe_fields: [...tool.null_elision_safe_fields] }),
  };
}

/** What an install gives the plugin: the capabilities it runs with, and the grant they came from when the caller gave one. */
export interface InstallGrant {
  /** The declaration (or host default) as the grant narrowed or widened it. */
  readonly capabilities: DeclaredCapabilities;
  /** The grant as given, recorded in the lock. */
  readonly grant?: PluginGrant;
}

/** The plugin-level facts the runtime needs, recorded so that a tampered manifest file cannot change them. */
function describePlugin(m: NormalizedManifest, capabilities: DeclaredCapabilities): PluginDescriptor {
  return {
    plugin_id: m.plugin_id,
    name: m.name,
    version: m.version,
    shape: m.shape,
    form: m.form,
    ...(m.description === undefined ? {} : { description: m.description }),
    ...(m.namespace_owner === undefined ? {} : { namespace_owner: m.namespace_owner }),
    ...(m.tos === undefined ? {} : { tos: m.tos }),
    ...(m.risk === undefined ? {} : { risk: m.risk }),
    capabilities: {
      network: capabilities.network,
      fs_write_dir: capabilities.fs_write_dir,
      env_allow: [...capabilities.env_allow],
      ...(capabilities.egress === undefined ? {} : { egress: [...capabilities.egress] }),
      ...(capabilities.client_requests === undefined ? {} : { client_requests: [...capabilities.client_requests] }),
    },
    ...(m.capabilities_source === undefined ? {} : { capabilities_source: m.capabilities_source }),
    needs_user_creds: [...m.requirements.needs_user_creds],
    credential_descriptors: m.requirements.credential_descriptors.map((d) => ({ ...d })),
    ...(m.requirements.canary === undefined ? {} : { canary: { ...m.requirements.canary } }),
    ...(m.requirements.auth_strategy === undefined ? {} : { auth_strategy: m.requirements.auth_strategy }),
    ...(m.requirements.auth_components === undefined ? {} : { auth_components: m.requirements.auth_components.map((c) => ({ ...c })) }),
    ...(m.launch === undefined ? {} : { launch: { env: { ...m.launch.env }, settings: { ...m.launch.settings }, missing_settings: [...m.launch.missing_settings] } }),
  };
}

/** Everything one install writes to the three catalog files. */
export function pluginRecords(
  manifest: NormalizedManifest,
  binding: ExecutableBindingRecord,
  staged: Pick<StagedPackage, 'source' | 'digest' | 'signature'>,
  status: PluginStateRecord['status'],
  now: string,
  granted: InstallGrant = { capabilities: manifest.capabilities },
): PluginRecords {
  const id = manifest.plugin_id;
  const variants = manifest.tools.map((tool): CatalogVariant => {
    const ids = toolIds(manifest, tool);
    return {
      ...ids,
      plugin_id: id,
      tool_name: tool.tool_name ?? tool.name,
      risk_class: tool.risk_class,
      confirmation_policy: tool.confirmation_policy,
      schema_hashes: schemaHashesOf(manifest, tool),
      ...(tool.description === undefined ? {} : { description: tool.description }),
      ...(tool.backend_kind === undefined ? {} : { backend_kind: tool.backend_kind }),
      ...profileBindingOf(manifest, tool),
      ...(tool.raw_result_allowed === true && tool.token_budget_exception !== undefined ? { token_budget_exception: { ...tool.token_budget_exception } } : {}),
    };
  });
  return {
    lock: {
      plugin_id: id,
      version: manifest.version,
      ...(manifest.namespace_owner === undefined ? {} : { namespace_owner: manifest.namespace_owner }),
      package: {
        source: `${staged.source.kind}:${staged.source.path}`,
        ref: manifest.package?.ref ?? manifest.version,
        checksum: staged.digest ?? '',
        ...(staged.signature === undefined ? {} : { signer: staged.signature.keyFingerprint }),
        ...(staged.source.registry === undefined ? {} : { registry: staged.source.registry }),
        ...(staged.source.bin === undefined ? {} : { bin: staged.source.bin }),
      },
      binding,
      ...(granted.grant === undefined ? {} : { grant: recordedGrant(granted.grant) }),
    },
    state: {
      status,
      installed_at: now,
      activated_at: null,
      retry_count: 0,
      next_retry_at: null,
      quarantined_at: null,
      quarantine_reason: null,
      last_error_code: null,
      canary: { status: 'never_run', last_run_at: null },
    },
    variants,
    descriptor: describePlugin(manifest, granted.capabilities),
  };
}
