/**
 * The one typed model every manifest form normalizes into. The Installer,
 * the PluginHost and the CLI consume only this; the form a plugin author
 * wrote survives in `form` and `raw`.
 */

/** The protocols a plugin can speak. */
export type PluginShape = 'mcp-plugin' | 'ndjson-rpc' | 'handshake' | 'esm-module';

/** The manifest forms the validator reads. */
export type ManifestForm = 'gum-json' | 'gum-toml' | 'open-discovery';

/**
 * Every shape a manifest can name: the runnable ones plus `grpc-subprocess`
 * (GUM Shape 2), which only first-party fixtures may declare.
 */
export type ManifestShape = PluginShape | 'grpc-subprocess';

/** The shapes this library can run. */
export const RUNNABLE_SHAPES: readonly PluginShape[] = ['mcp-plugin', 'ndjson-rpc', 'handshake', 'esm-module'];

/** What a tool may do, lowest risk first. */
export type RiskClass = 'read' | 'write' | 'destructive';

const RISK_RANK: Readonly<Record<RiskClass, number>> = { read: 0, write: 1, destructive: 2 };

/** Where `risk` stands in the order read < write < destructive (0, 1, 2). */
export function riskRank(risk: RiskClass): number {
  return RISK_RANK[risk];
}

/** Whether a tool of class `risk` may run under a call that accepts at most `max`. */
export function riskAllowed(risk: RiskClass, max: RiskClass): boolean {
  return riskRank(risk) <= riskRank(max);
}

/**
 * The op id a caller calls a tool of `pluginId` by: JSON manifests' tools are
 * recorded as `plug.<plugin_id>.<tool>` already; the TOML form records
 * `<plugin_id>.<operation>`, called as `plug.<plugin_id>.<operation>`.
 */
export function calledOpId(pluginId: string, opId: string): string {
  return opId.startsWith(`plug.${pluginId}.`) ? opId : `plug.${opId}`;
}

/** Whether a tool call needs the user's confirmation before dispatch. */
export type ConfirmationPolicy = 'none' | 'high_stakes_write';

/** A tool binding's backend kind (GUM catalog ABI). */
export type BackendKind = 'mcp-plugin' | 'grpc-plugin';

/**
 * The contract's "token-budget exception" of a tool whose results are not
 * shaped by an output profile: how large a result may be, and why it stays
 * whole. A larger result fails its call (PLUGIN_RESULT_OVER_BUDGET).
 */
export interface TokenBudgetException {
  /** The largest result a call may return, in estimated tokens (UTF-8 bytes / 4, rounded up). */
  readonly max_tokens: number;
  /** Why the tool's results need no output profile (recorded for reviewers; not shown to the model). */
  readonly reason: string;
}

/** One tool a plugin offers, with its unprefixed name. */
export interface ManifestTool {
  /** Unprefixed tool name, as the plugin itself lists it; the host adds `plug.<plugin_id>.`. */
  readonly name: string;
  /** Human description, when given. */
  readonly description?: string;
  /** What the tool may do. */
  readonly risk_class: RiskClass;
  /** Catalog operation id (TOML form). */
  readonly op_id?: string;
  /** Catalog variant id (TOML form). */
  readonly variant_id?: string;
  /** Binding backend kind (TOML form). */
  readonly backend_kind?: BackendKind;
  /** Catalog interface kind (TOML form). */
  readonly interface_kind?: string;
  /** The MCP tool name the binding calls (TOML form; equals `name`). */
  readonly tool_name?: string;
  /** gRPC binding selectors of first-party Shape 2 ABI fixtures. */
  readonly rpc_service?: string;
  /** gRPC binding selectors of first-party Shape 2 ABI fixtures. */
  readonly rpc_method?: string;
  /** Schema bundle ref: `schemas/<schema_ref>.json` inside the plugin. */
  readonly schema_ref?: string;
  /** Output profile name. */
  readonly output_profile?: string;
  /** Whether the tool may return unprofiled results, within its `token_budget_exception`. */
  readonly raw_result_allowed?: boolean;
  /** The budget a raw result stays within, required with `raw_result_allowed: true`. */
  readonly token_budget_exception?: TokenBudgetException;
  /** Confirmation policy; `none` unless declared. */
  readonly confirmation_policy: ConfirmationPolicy;
  /** Dot paths where an output profile may elide nulls and empty values. */
  readonly null_elision_safe_fields: readonly string[];
  /** Catalog capability atoms (TOML form). */
  readonly capabilities: readonly string[];
  /** OAuth scopes (TOML form). */
  readonly scopes: readonly string[];
}

/**
 * A request an MCP-speaking plugin may send to its client, answered by the
 * host application: `sampling` (`sampling/createMessage`), `elicitation`
 * (`elicitation/create`) or `roots` (`roots/list`).
 */
export type ClientRequestKind = 'sampling' | 'elicitation' | 'roots';

/** The sandbox powers a plugin declares. */
export interface DeclaredCapabilities {
  /** Whether the plugin may reach the network. */
  readonly network: boolean;
  /** `""` for no writes outside the host data dir, or a relative subtree. */
  readonly fs_write_dir: string;
  /** Env var names passed through from the host environment. */
  readonly env_allow: readonly string[];
  /**
   * Destinations reachable through the host's egress proxy when `network`
   * is false (`api.github.com:443`, `*.example.com`, `10.0.0.5:8080`);
   * absent or empty: no network at all.
   */
  readonly egress?: readonly string[];
  /** The requests the plugin sends to its client (sampling, elicitation, roots); absent or empty: none, each is refused. */
  readonly client_requests?: readonly ClientRequestKind[];
}

/**
 * Sandbox powers granted at install (`grant` install option). Against a
 * manifest that declares capabilities it may only narrow them; for a source
 * that declares none (MCP Bundles, npm packages without a manifest) it is
 * what the plugin gets beyond the host default. Each field left out keeps
 * the declaration, or the default.
 */
export interface PluginGrant {
  /** Whole-network access. */
  readonly network?: boolean;
  /** The writable directory: `""` (the data dir itself) or a relative path inside it. */
  readonly fs_write_dir?: string;
  /** Env var names passed through from the host environment. */
  readonly env_allow?: readonly string[];
  /** Network destinations (`api.github.com:443`, `*.example.com`, `10.0.0.5:8080`), recorded with the grant. */
  readonly egress?: readonly string[];
  /** The requests to its client the plugin may send (`sampling`, `elicitation`, `roots`). */
  readonly client_requests?: readonly ClientRequestKind[];
}

/** A plugin setting's value (an MCP Bundle's non-sensitive `user_config`). */
export type SettingValue = string | number | boolean | readonly string[];

/**
 * How the host runs a plugin's executable when its source says more than a
 * path (an MCP Bundle's `mcp_config`). `${__dirname}` in `args` and `env`
 * stands for the install root and is replaced once it is known; every other
 * substitution is already done.
 */
export interface ManifestLaunch {
  /** The program that runs the executable (resolved on the interpreter search path at install and pinned), when the source names one. */
  readonly interpreter?: string;
  /**
   * For a Python interpreter: directories of the package (relative) put on
   * `sys.path` where `PYTHONPATH` would (an MCP Bundle's vendored
   * `server/lib`); pinned with the interpreter. PYTHONPATH itself is on the
   * env denylist and never set.
   */
  readonly python_path?: readonly string[];
  /** Arguments after the executable. */
  readonly args: readonly string[];
  /** Env vars set for the plugin (names pass the env denylist; credentials are not here). */
  readonly env: Readonly<Record<string, string>>;
  /** The settings the install resolved: given values, else defaults. */
  readonly settings: Readonly<Record<string, SettingValue>>;
  /** Required settings with no value and no default: the plugin does not start (PLUGIN_SETTING_MISSING). */
  readonly missing_settings: readonly string[];
}

/** How a credential the plugin needs is presented to users, never by its raw env name. */
export interface CredentialDescriptor {
  /** Stable, user-facing identifier of the credential. */
  readonly alias: string;
  /** The env var the secret is passed in. */
  readonly env: string;
  /** What kind of secret it is, e.g. `api_key`. */
  readonly kind: string;
  /** Name shown in setup prompts. */
  readonly display_name: string;
  /** Where the user gets the value. */
  readonly setup_hint: string;
}

/**
 * How a plugin authenticates upstream (the contract's auth taxonomy):
 * `none`; `secrets`, its `needs_user_creds` alone; `compound`, secret
 * components setup stores plus external prerequisites the host cannot
 * complete; `plugin_managed`, the plugin owns its upstream auth.
 */
export type AuthStrategy = 'none' | 'secrets' | 'compound' | 'plugin_managed';

/** One part of what a `compound` (or `plugin_managed`) plugin needs before it works. */
export interface AuthComponent {
  /** Stable id of the component. */
  readonly id: string;
  /**
   * `secret`: the value of the credential descriptor named by `credential`,
   * stored by setup; `external`: a prerequisite the user completes outside
   * the host (an account, billing, an access level), shown as a checklist
   * item; `google_access_token`: the contract's reserved short-lived Google
   * token, which this host has no source for, so it is shown like an
   * external item.
   */
  readonly kind: 'secret' | 'external' | 'google_access_token';
  /** For a secret component: the alias of its credential descriptor. */
  readonly credential?: string;
  /** Name shown to people. */
  readonly display_name: string;
  /** What the user does to complete it, when given. */
  readonly setup_hint?: string;
}

/** A known-good call run to prove a plugin works. */
export interface CanarySpec {
  /** Unprefixed tool name the canary calls. */
  readonly tool: string;
  /** Call arguments; string values may use relative date specifiers such as `+7d`. */
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** The plugin's request budget. */
export interface RatePolicy {
  /** Sustained requests per minute. */
  readonly requests_per_minute: number;
  /** Short bursts allowed above the sustained rate. */
  readonly burst?: number;
}

/** What a plugin needs from the host beyond its sandbox powers. */
export interface ManifestRequirements {
  /** Env var names of user credentials passed to the plugin. */
  readonly needs_user_creds: readonly string[];
  /** One descriptor per `needs_user_creds` entry. */
  readonly credential_descriptors: readonly CredentialDescriptor[];
  /** The plugin's canary, when declared. */
  readonly canary?: CanarySpec;
  /** The declared auth strategy; absent means `secrets` with credentials, `none` without. */
  readonly auth_strategy?: AuthStrategy;
  /** The declared auth components, in manifest order; absent when none are declared. */
  readonly auth_components?: readonly AuthComponent[];
  /** The plugin's request budget, when declared. */
  readonly rate_policy?: RatePolicy;
  /** Result cache lifetime in seconds, when declared. */
  readonly cache_ttl?: number;
}

/** Where the plugin package comes from (TOML form). */
export interface PackageSpec {
  /** Package source, e.g. `github-release`, `git`, `pypi`, `local`. */
  readonly source: string;
  /** Pinned ref: tag, commit, version or path. */
  readonly ref: string;
  /** Expected package SHA-256, as written (`sha256:<hex>` or `<hex>`). */
  readonly checksum: string;
}

/** The facts of an output profile the strip-nulls safety check needs. */
export interface OutputProfileFacts {
  /** Whether the profile elides nulls and empty values. */
  readonly strip_nulls?: boolean;
  /** The fields the profile keeps; absent or empty means every field. */
  readonly keep_fields?: readonly string[];
}

/** An Open Discovery permission hint. */
export interface PermissionHint {
  /** Permission id, e.g. `network`. */
  readonly id: string;
  /** Why the plugin wants it. */
  readonly reason?: string;
}

/** The names an Open Discovery plugin declares it will register. */
export interface DeclaredRegistrations {
  /** Tool names. */
  readonly tools: readonly string[];
  /** Resource names. */
  readonly resources: readonly string[];
  /** Prompt names. */
  readonly prompts: readonly string[];
}

/** A schema bundle resolved during file validation, with its canonical digest. */
export interface ResolvedSchema {
  /** The served ref: `<schema_ref>.request` or `<schema_ref>.response`. */
  readonly ref: string;
  /** Lowercase hex SHA-256 of the RFC 8785 (JCS) canonical body. */
  readonly digest: string;
  /** The schema body (`$defs.request` or `$defs.response` of the bundle). */
  readonly schema: Readonly<Record<string, unknown>>;
}

/** A validated manifest, whichever form it was written in. */
export interface NormalizedManifest {
  /** The form it was written in: a manifest form the validator reads, or `mcpb` for an MCP Bundle's manifest.json mapped by the installer. */
  readonly form: ManifestForm | 'mcpb';
  /** `^[a-z][a-z0-9-]{0,63}$`; prefixes every tool as `plug.<plugin_id>.<tool>`. */
  readonly plugin_id: string;
  /** Display name. */
  readonly name: string;
  /** Plugin version, free-form. */
  readonly version: string;
  /** Description, when given. */
  readonly description?: string;
  /** Reverse-DNS or registry identity owning the plugin's namespace. */
  readonly namespace_owner?: string;
  /** How the plugin is run. */
  readonly shape: ManifestShape;
  /** Executable path relative to the install root (subprocess shapes). */
  readonly executable?: string;
  /** ESM entry relative to the plugin root (`esm-module`). */
  readonly entry?: string;
  /** How the executable is run beyond its path (MCP Bundles). */
  readonly launch?: ManifestLaunch;
  /** Tools, in manifest order. */
  readonly tools: readonly ManifestTool[];
  /** Declared sandbox powers. */
  readonly capabilities: DeclaredCapabilities;
  /**
   * `host_default` when the source declares no sandbox powers (an MCP Bundle,
   * an npm package without a manifest): `capabilities` is then the host
   * default and an install grant widens it instead of narrowing it. Absent
   * means `declared`.
   */
  readonly capabilities_source?: 'declared' | 'host_default';
  /** Credentials, canary, rate and cache needs. */
  readonly requirements: ManifestRequirements;
  /** Package source (TOML form). */
  readonly package?: PackageSpec;
  /** Output profiles shipped inside the manifest, by name. */
  readonly output_profiles: Readonly<Record<string, OutputProfileFacts>>;
  /** Terms-of-service status. */
  readonly tos?: string;
  /** Risk statement shown at install. */
  readonly risk?: string;
  /** License. */
  readonly license?: string;
  /** Plugin ids this plugin must load after (Open Discovery). */
  readonly dependencies: readonly string[];
  /** SDK the plugin was built against (Open Discovery). */
  readonly sdk?: string;
  /** Permission hints (Open Discovery); only `network` is acted on. */
  readonly permissions?: readonly PermissionHint[];
  /** Free-form metadata (Open Discovery). */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** Names the plugin declares it registers (Open Discovery). */
  readonly registrations?: DeclaredRegistrations;
  /** Schema bundles resolved by file validation; empty otherwise. */
  readonly schemas: readonly ResolvedSchema[];
  /** The parsed document, as written. */
  readonly raw: Readonly<Record<string, unknown>>;
}

/** The manifest a handshake-shape plugin sends in its handshake response. */
export interface HandshakeManifest {
  /** The plugin's id. */
  readonly plugin_id: string;
  /** The plugin's version. */
  readonly plugin_version: string;
  /** The protocol version the plugin speaks. */
  readonly protocol_version: string;
  /** Tools the plugin exposes. */
  readonly exposed_tools: readonly string[];
  /** Capabilities the plugin requests; absent when it declared none. */
  readonly capabilities?: readonly string[];
}
