/**
 * Builds the normalized model from a document that passed every check.
 * Reads stay defensive: an Open Discovery schema may be replaced by a host,
 * so nothing here trusts a type the bundled schemas alone would guarantee.
 */
import { isRecord, own, ownBoolean, ownNumber, ownString, ownStrings, toolEntries, toolNameOf, type JsonRecord } from './access.js';
import { pluginIdFromOpenDiscoveryName } from './checks.js';
import { isClientRequestKind } from './clientRequestKinds.js';
import type {
  AuthComponent,
  AuthStrategy,
  BackendKind,
  CanarySpec,
  ConfirmationPolicy,
  CredentialDescriptor,
  DeclaredCapabilities,
  ManifestForm,
  ManifestRequirements,
  ManifestTool,
  NormalizedManifest,
  OutputProfileFacts,
  PackageSpec,
  PermissionHint,
  ManifestShape,
  RatePolicy,
  ResolvedSchema,
  RiskClass,
  TokenBudgetException,
} from './model.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Copies the defined entries of `fields` onto `target` (exactOptionalPropertyTypes-friendly). */
function withDefined<T extends object>(target: T, fields: { [K in keyof T]?: T[K] | undefined }): T {
  for (const key in fields) {
    const value = fields[key];
    if (value !== undefined) (target as Record<string, unknown>)[key] = value;
  }
  return target;
}

const strings = (record: unknown, key: string): string[] => ownStrings(record, key).map((s) => s.value);

function riskFromAnnotations(tool: JsonRecord): RiskClass {
  const annotations = own(tool, 'annotations');
  // Contradicting hints (read-only and destructive) take the more dangerous reading.
  if (ownBoolean(annotations, 'destructiveHint') === true) return 'destructive';
  if (ownBoolean(annotations, 'readOnlyHint') === true) return 'read';
  // MCP's default for destructiveHint is true: an unannotated tool may destroy.
  return ownBoolean(annotations, 'destructiveHint') === false ? 'write' : 'destructive';
}

function normalizeTool(tool: JsonRecord, form: ManifestForm): ManifestTool {
  const base: Mutable<ManifestTool> = {
    name: toolNameOf(tool, form).name ?? '',
    risk_class: form === 'open-discovery' ? riskFromAnnotations(tool) : (ownString(tool, 'risk_class') as RiskClass),
    confirmation_policy: (ownString(tool, 'confirmation_policy') as ConfirmationPolicy | undefined) ?? 'none',
    null_elision_safe_fields: strings(tool, 'null_elision_safe_fields'),
    capabilities: strings(tool, 'capabilities'),
    scopes: strings(tool, 'scopes'),
  };
  return withDefined(base, {
    description: ownString(tool, 'description'),
    op_id: ownString(tool, 'op_id'),
    variant_id: ownString(tool, 'variant_id'),
    backend_kind: ownString(tool, 'backend_kind') as BackendKind | undefined,
    interface_kind: ownString(tool, 'interface_kind'),
    tool_name: ownString(tool, 'tool_name'),
    rpc_service: ownString(tool, 'rpc_service'),
    rpc_method: ownString(tool, 'rpc_method'),
    schema_ref: ownString(tool, 'schema_ref'),
    output_profile: ownString(tool, 'output_profile'),
    raw_result_allowed: ownBoolean(tool, 'raw_result_allowed'),
    token_budget_exception: tokenBudgetOf(tool),
  });
}

function tokenBudgetOf(tool: unknown): TokenBudgetException | undefined {
  const budget = own(tool, 'token_budget_exception');
  const maxTokens = ownNumber(budget, 'max_tokens');
  const reason = ownString(budget, 'reason');
  return maxTokens === undefined || reason === undefined ? undefined : { max_tokens: maxTokens, reason };
}

function normalizeCapabilities(declared: unknown): DeclaredCapabilities {
  const egress = strings(declared, 'egress');
  const clientRequests = strings(declared, 'client_requests').filter(isClientRequestKind);
  return {
    network: ownBoolean(declared, 'network') ?? false,
    fs_write_dir: ownString(declared, 'fs_write_dir') ?? '',
    env_allow: strings(declared, 'env_allow'),
    ...(egress.length === 0 ? {} : { egress }),
    ...(clientRequests.length === 0 ? {} : { client_requests: clientRequests }),
  };
}

function normalizeRequirements(requirements: unknown): ManifestRequirements {
  const descriptors = own(requirements, 'credential_descriptors');
  const credential_descriptors: CredentialDescriptor[] = Array.isArray(descriptors)
    ? descriptors.filter(isRecord).map((d) => ({
        alias: ownString(d, 'alias') ?? '',
        env: ownString(d, 'env') ?? '',
        kind: ownString(d, 'kind') ?? '',
        display_name: ownString(d, 'display_name') ?? '',
        setup_hint: ownString(d, 'setup_hint') ?? '',
      }))
    : [];
  const canaryRecord = own(requirements, 'canary');
  const canaryTool = ownString(canaryRecord, 'tool');
  const canaryArgs = own(canaryRecord, 'args');
  const canary: CanarySpec | undefined =
    canaryTool === undefined ? undefined : { tool: canaryTool, arguments: isRecord(canaryArgs) ? canaryArgs : {} };
  const rateRecord = own(requirements, 'rate_policy');
  const rpm = ownNumber(rateRecord, 'requests_per_minute');
  const rate_policy: RatePolicy | undefined =
    rpm === undefined ? undefined : withDefined<RatePolicy>({ requests_per_minute: rpm }, { burst: ownNumber(rateRecord, 'burst') });
  const components = own(requirements, 'auth_components');
  const auth_components: AuthComponent[] | undefined = Array.isArray(components)
    ? components.filter(isRecord).map((c) =>
        withDefined<AuthComponent>(
          { id: ownString(c, 'id') ?? '', kind: (ownString(c, 'kind') ?? 'external') as AuthComponent['kind'], display_name: ownString(c, 'display_name') ?? '' },
          { credential: ownString(c, 'credential'), setup_hint: ownString(c, 'setup_hint') },
        ),
      )
    : undefined;
  return withDefined<ManifestRequirements>(
    { needs_user_creds: strings(requirements, 'needs_user_creds'), credential_descriptors },
    { canary, rate_policy, cache_ttl: ownNumber(requirements, 'cache_ttl'), auth_strategy: ownString(requirements, 'auth_strategy') as AuthStrategy | undefined, auth_components },
  );
}

function normalizeProfiles(doc: JsonRecord): Record<string, OutputProfileFacts> {
  const out: Record<string, OutputProfileFacts> = {};
  const profiles = own(doc, 'output_profiles');
  if (!isRecord(profiles)) return out;
  for (const [name, body] of Object.entries(profiles)) {
    const facts = withDefined<OutputProfileFacts>({}, { strip_nulls: ownBoolean(body, 'strip_nulls') });
    const keep = own(body, 'keep_fields') === undefined ? undefined : strings(body, 'keep_fields');
    Object.defineProperty(out, name, { value: withDefined(facts, { keep_fields: keep }), enumerable: true });
  }
  return out;
}

function normalizeGumJson(doc: JsonRecord, schemas: readonly ResolvedSchema[]): NormalizedManifest {
  const base: Mutable<NormalizedManifest> = {
    form: 'gum-json',
    plugin_id: ownString(doc, 'plugin_id') ?? '',
    name: ownString(doc, 'name') ?? '',
    version: ownString(doc, 'version') ?? '',
    shape: ownString(doc, 'shape') as ManifestShape,
    tools: toolEntries(doc, 'gum-json').map(({ tool }) => normalizeTool(tool, 'gum-json')),
    capabilities: normalizeCapabilities(own(doc, 'declared_capabilities')),
    requirements: normalizeRequirements(own(doc, 'requirements')),
    output_profiles: normalizeProfiles(doc),
    dependencies: [],
    schemas,
    raw: doc,
  };
  return withDefined(base, {
    description: ownString(doc, 'description'),
    namespace_owner: ownString(doc, 'namespace_owner'),
    executable: ownString(doc, 'executable'),
    tos: ownString(doc, 'tos'),
    risk: ownString(doc, 'risk'),
    license: ownString(doc, 'license'),
  });
}

function normalizeGumToml(doc: JsonRecord, schemas: readonly ResolvedSchema[]): NormalizedManifest {
  const plugin = own(doc, 'plugin');
  const pkg = own(doc, 'package');
  const id = ownString(plugin, 'name') ?? '';
  const packageSpec: PackageSpec = {
    source: ownString(pkg, 'source') ?? '',
    ref: ownString(pkg, 'ref') ?? '',
    checksum: ownString(pkg, 'checksum') ?? '',
  };
  const base: Mutable<NormalizedManifest> = {
    form: 'gum-toml',
    plugin_id: id,
    name: ownString(plugin, 'display_name') ?? id,
    version: ownString(plugin, 'version') ?? '',
    shape: ownString(plugin, 'shape') as ManifestShape,
    tools: toolEntries(doc, 'gum-toml').map(({ tool }) => normalizeTool(tool, 'gum-toml')),
    capabilities: normalizeCapabilities(own(doc, 'declared_capabilities')),
    requirements: normalizeRequirements(own(doc, 'requirements')),
    package: packageSpec,
    output_profiles: normalizeProfiles(doc),
    dependencies: [],
    schemas,
    raw: doc,
  };
  return withDefined(base, {
    description: ownString(plugin, 'description'),
    namespace_owner: ownString(plugin, 'namespace_owner'),
    executable: ownString(plugin, 'command'),
    tos: ownString(plugin, 'tos'),
    risk: ownString(plugin, 'risk'),
    license: ownString(plugin, 'license'),
  });
}

function names(capabilities: unknown, key: string): string[] {
  const list = own(capabilities, key);
  return Array.isArray(list) ? list.map((item: unknown) => ownString(item, 'name')).filter((n): n is string => n !== undefined) : [];
}

function normalizeOpenDiscovery(doc: JsonRecord): NormalizedManifest {
  const name = ownString(doc, 'name') ?? '';
  const metadata = own(doc, 'metadata');
  const capabilities = own(doc, 'capabilities');
  const permissionList = own(doc, 'permissions');
  const permissions: PermissionHint[] | undefined = Array.isArray(permissionList)
    ? permissionList
        .filter(isRecord)
        .flatMap((p) => {
          const id = ownString(p, 'id');
          return id === undefined ? [] : [withDefined<PermissionHint>({ id }, { reason: ownString(p, 'reason') })];
        })
    : undefined;
  // Open Discovery has no capability block for them: a permission hint named after the kind declares it.
  const clientRequests = [...new Set((permissions ?? []).map((p) => p.id))].filter(isClientRequestKind);
  const base: Mutable<NormalizedManifest> = {
    form: 'open-discovery',
    plugin_id: pluginIdFromOpenDiscoveryName(name) ?? '',
    name: ownString(metadata, 'displayName') ?? name,
    version: ownString(doc, 'version') ?? '',
    shape: 'esm-module',
    tools: toolEntries(doc, 'open-discovery').map(({ tool }) => normalizeTool(tool, 'open-discovery')),
    capabilities: {
      network: permissions?.some((p) => p.id === 'network') ?? false,
      fs_write_dir: '',
      env_allow: [],
      ...(clientRequests.length === 0 ? {} : { client_requests: clientRequests }),
    },
    requirements: { needs_user_creds: [], credential_descriptors: [] },
    output_profiles: {},
    dependencies: strings(doc, 'dependencies').map((d) => pluginIdFromOpenDiscoveryName(d) ?? d),
    registrations: {
      tools: names(capabilities, 'tools'),
      resources: names(capabilities, 'resources'),
      prompts: names(capabilities, 'prompts'),
    },
    schemas: [],
    raw: doc,
  };
  return withDefined(base, {
    entry: ownString(doc, 'entry'),
    sdk: ownString(doc, 'sdk'),
    permissions,
    metadata: isRecord(metadata) ? metadata : undefined,
  });
}

/** The normalized model of a document that passed every check of its form. */
export function normalizeManifest(
  doc: JsonRecord,
  form: ManifestForm,
  schemas: readonly ResolvedSchema[] = [],
): NormalizedManifest {
  switch (form) {
    case 'gum-json':
      return normalizeGumJson(doc, schemas);
    case 'gum-toml':
      return normalizeGumToml(doc, schemas);
    case 'open-discovery':
      return normalizeOpenDiscovery(doc);
  }
}
