/**
 * The three files of a profile's catalog, as TypeScript types. The JSON
 * Schemas in etc/schemas/catalog/ describe the same shapes and are checked on
 * every read and write.
 */
import type { ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import type { ConfirmationPolicy, CredentialDescriptor, DeclaredCapabilities, PluginGrant, RiskClass, SettingValue } from '../manifest/model.js';

/** `plugin_catalog_schema_version` this host reads and writes. */
export const PLUGIN_CATALOG_SCHEMA_VERSION = 1;
/** `plugins_lock_schema_version` this host reads and writes. */
export const PLUGINS_LOCK_SCHEMA_VERSION = 1;
/** `plugin_state_schema_version` this host reads and writes. */
export const PLUGIN_STATE_SCHEMA_VERSION = 1;

/** Fields every catalog file carries: which profile and which generation it belongs to. */
export interface GenerationStamp {
  /** The profile the file belongs to; a file of another profile is never read as this one's. */
  readonly profile: string;
  /** Incremented by one per transaction; all three files of a generation carry the same value. */
  readonly install_generation: number;
  /** Random id of the transaction that wrote the generation (32 hex digits). */
  readonly txid: string;
  /** When the generation was written (ISO 8601). */
  readonly updated_at: string;
}

/** One dispatchable operation of an installed plugin. Extra fields are kept as they are. */
export interface CatalogVariant {
  /** Stable operation id, `plug.<plugin_id>.<tool>`. */
  readonly op_id: string;
  /** Stable variant id. */
  readonly variant_id: string;
  /** The plugin that serves it. */
  readonly plugin_id: string;
  /** The tool name the plugin lists (unprefixed). */
  readonly tool_name: string;
  /** The tool's risk class. */
  readonly risk_class: RiskClass;
  /** The tool's confirmation policy. */
  readonly confirmation_policy: ConfirmationPolicy;
  /** SHA-256 of each schema the variant references, by ref. */
  readonly schema_hashes: Readonly<Record<string, string>>;
  /** Further dispatch metadata (backend_kind, output_profile, …). */
  readonly [field: string]: unknown;
}



/**
 * Plugin-level facts recorded in `plugin-catalog.json` at install, so that
 * the runtime never re-reads (and can never be misled by) the manifest file.
 * Extra fields are kept as they are.
 */
export interface PluginDescriptor {
  /** The plugin id. */
  readonly plugin_id: string;
  /** Display name. */
  readonly name: string;
  /** Installed version. */
  readonly version: string;
  /** The protocol it speaks (`mcp-plugin`, `ndjson-rpc`, `handshake`, `esm-module`). */
  readonly shape: string;
  /** The manifest form it was installed from. */
  readonly form?: string;
  /** What it does. */
  readonly description?: string;
  /** Its publisher identity. */
  readonly namespace_owner?: string;
  /** Terms-of-service status shown at install. */
  readonly tos?: string;
  /** Risk statement shown at install. */
  readonly risk?: string;
  /** The sandbox powers the plugin runs with: the declaration (or host default) as the install grant narrowed or widened it. */
  readonly capabilities?: DeclaredCapabilities;
  /** `host_default` when the source declared no sandbox powers (see `NormalizedManifest.capabilities_source`). */
  readonly capabilities_source?: 'declared' | 'host_default';
  /** Credential env names the plugin needs from the secret store. */
  readonly needs_user_creds?: readonly string[];
  /** One descriptor per needed credential. */
  readonly credential_descriptors?: readonly CredentialDescriptor[];
  /** The canary: a tool call with arguments (relative dates allowed). */
  readonly canary?: { readonly tool: string; readonly arguments: Readonly<Record<string, unknown>> };
  /** What a launch adds for a plugin whose source says more than an executable path (an MCP Bundle's mcp_config). */
  readonly launch?: {
    /** Env vars set for the plugin; `${__dirname}` stands for the install root. */
    readonly env: Readonly<Record<string, string>>;
    /** The settings the install resolved (non-sensitive user_config). */
    readonly settings: Readonly<Record<string, SettingValue>>;
    /** Required settings without a value: the plugin does not start (PLUGIN_SETTING_MISSING). */
    readonly missing_settings: readonly string[];
  };
  /** Further facts. */
  readonly [field: string]: unknown;
}

/** `plugin-catalog.json`. */
export interface PluginCatalogFile extends GenerationStamp {
  /** Always {@link PLUGIN_CATALOG_SCHEMA_VERSION}. */
  readonly plugin_catalog_schema_version: typeof PLUGIN_CATALOG_SCHEMA_VERSION;
  /** Every installed variant. */
  readonly variants: readonly CatalogVariant[];
  /** Plugin-level descriptors by plugin id. */
  readonly plugins: Readonly<Record<string, PluginDescriptor>>;
}

/** Where an installed package came from. */
export interface PackageSource {
  /** The package source (a local path, an archive URL, …). */
  readonly source: string;
  /** The version reference installed (tag, commit, version). */
  readonly ref: string;
  /** The package checksum (e.g. `sha256:<hex>`), empty for unchecked local directories. */
  readonly checksum: string;
  /**
   * The fingerprint of the trusted key whose signature was verified at
   * install; absent for an unsigned package. An upgrade must be signed by the
   * same key unless the caller allows the change.
   */
  readonly signer?: string;
  /**
   * The registry an `npm:<name>@<version>` source was fetched from (no user
   * or password; ends with `/`). Absent for other sources, and for npm
   * packages installed before it was recorded.
   */
  readonly registry?: string;
  /**
   * The `bin` of an `npm:` package its server runs as, when the install named
   * one (the `bin` install option, `--bin`): a later install of the plugin
   * without the option uses it again. Absent when the package's default bin
   * was chosen, or its manifest names the executable.
   */
  readonly bin?: string;
}

/** One installed plugin in `plugins.lock`. */
export interface LockedPlugin {
  /** The plugin id. */
  readonly plugin_id: string;
  /** The installed version. */
  readonly version: string;
  /** The manifest's namespace owner, when declared. */
  readonly namespace_owner?: string;
  /** Package provenance. */
  readonly package: PackageSource;
  /** The executable binding verified before every spawn, with the digest of the install root's file list (`tree`). */
  readonly binding: ExecutableBindingRecord;
  /** The sandbox powers granted at install, as given; absent when the install granted nothing (the declaration, or the host default, applies). */
  readonly grant?: PluginGrant;
}

/** Who owns a plugin id prefix; kept across removes (same shape as the NamespaceLock owners record). */
export interface NamespaceOwnerEntry {
  /** The publisher identity that owns the prefix. */
  readonly namespace_owner?: string;
  /** Set when a bundled first-party plugin holds the prefix. */
  readonly first_party?: true;
  /** When the owner was first recorded (ISO 8601). */
  readonly first_recorded_at?: string;
  /** The key that signed the plugin when it was last removed; its next install is held to it. */
  readonly signer?: string;
  /**
   * The npm registry the plugin came from when it was last removed (an npm
   * registry package recorded with one): its next install from another
   * registry is judged as another publisher's, asked or refused.
   */
  readonly registry?: string;
  /**
   * The npm package name the plugin was installed as when it was last
   * removed (with `registry`): another package claiming its id and owner is
   * judged as another publisher's, asked or refused.
   */
  readonly package_name?: string;
  /** The powers the plugin ran with when it was last removed: a reinstall that would get more is asked for acceptance again. */
  readonly accepted_capabilities?: DeclaredCapabilities;
  /**
   * The credential names (`needs_user_creds`) it needed when it was last
   * removed: a reinstall that needs another is asked again, as a host with
   * `credentialsFromEnv` would give it that name's value from its own
   * environment. Absent in records written before it was kept: every name
   * then counts as new.
   */
  readonly accepted_credentials?: readonly string[];
  /** The tools it had when it was last removed, with their risk class and confirmation: a reinstall that makes one easier to call is asked again. */
  readonly accepted_tools?: readonly AcceptedTool[];
  /**
   * The npm `bin` it was installed with when it was last removed (the `bin`
   * install option, `--bin`): a reinstall that names none runs the same one,
   * as an upgrade does, not the package's default bin (often a CLI).
   */
  readonly bin?: string;
}

/** A tool as an owner's record keeps it across a remove. */
export interface AcceptedTool {
  /**
   * Its op id, which callers, `maxRisk` ceilings and confirmations address
   * and a reinstall's tools are compared by; absent in records written
   * before it was kept (those compare by `name`).
   */
  readonly op_id?: string;
  /** The tool's name, unprefixed. */
  readonly name: string;
  /** Its risk class. */
  readonly risk_class: RiskClass;
  /** Its confirmation policy. */
  readonly confirmation_policy: ConfirmationPolicy;
}

/** `plugins.lock`. */
export interface PluginsLockFile extends GenerationStamp {
  /** Always {@link PLUGINS_LOCK_SCHEMA_VERSION}. */
  readonly plugins_lock_schema_version: typeof PLUGINS_LOCK_SCHEMA_VERSION;
  /** Installed plugins by id. */
  readonly plugins: Readonly<Record<string, LockedPlugin>>;
  /** Namespace owners by prefix; entries outlive the plugins that created them. */
  readonly namespace_owners: Readonly<Record<string, NamespaceOwnerEntry>>;
}

/** Inventory status of an installed plugin; `quarantined` wins over every other state. */
export type PluginStatus = 'active' | 'installed_pending_restart' | 'needs_configuration' | 'quarantined';

/** The last canary outcome of a plugin. */
export interface CanaryState {
  /** Outcome of the last canary run. */
  readonly status: 'never_run' | 'passed' | 'failed' | 'skipped';
  /** When it last ran (ISO 8601), or null. */
  readonly last_run_at: string | null;
  /** Failures in a row, when tracked. */
  readonly consecutive_failures?: number;
}

/** Runtime state of one plugin in `plugin-state.json`. */
export interface PluginStateRecord {
  /** Inventory status. */
  readonly status: PluginStatus;
  /** When it was installed (ISO 8601). */
  readonly installed_at: string;
  /** When a host first activated it, or null. */
  readonly activated_at: string | null;
  /** Restart attempts since the last success. */
  readonly retry_count: number;
  /** Earliest next restart attempt, or null. */
  readonly next_retry_at: string | null;
  /** When it was quarantined, or null. */
  readonly quarantined_at: string | null;
  /** Why it was quarantined (e.g. `digest_mismatch`), or null. */
  readonly quarantine_reason: string | null;
  /** The last host error code it produced, or null. */
  readonly last_error_code: string | null;
  /** Canary state. */
  readonly canary: CanaryState;
  /** Whether the quarantine lasts until an explicit unquarantine. */
  readonly permanent_quarantine?: boolean;
  /** Whether declared credentials were missing when last checked. */
  readonly needs_configuration?: boolean;
}

/** `plugin-state.json`. */
export interface PluginStateFile extends GenerationStamp {
  /** Always {@link PLUGIN_STATE_SCHEMA_VERSION}. */
  readonly plugin_state_schema_version: typeof PLUGIN_STATE_SCHEMA_VERSION;
  /** Runtime state by plugin id. */
  readonly plugins: Readonly<Record<string, PluginStateRecord>>;
}

/** What a transaction's mutator reads and returns: the content of the three files without their stamps. */
export interface CatalogContents {
  /** `plugin-catalog.json` variants. */
  readonly variants: readonly CatalogVariant[];
  /** `plugin-catalog.json` plugin descriptors. */
  readonly descriptors: Readonly<Record<string, PluginDescriptor>>;
  /** `plugins.lock` plugins. */
  readonly plugins: Readonly<Record<string, LockedPlugin>>;
  /** `plugins.lock` namespace owners. */
  readonly namespace_owners: Readonly<Record<string, NamespaceOwnerEntry>>;
  /** `plugin-state.json` plugins. */
  readonly states: Readonly<Record<string, PluginStateRecord>>;
}

/** One consistent generation of a profile's catalog. */
export interface CatalogSnapshot {
  /** The profile. */
  readonly profile: string;
  /** The generation (0 for a profile that never had a transaction). */
  readonly install_generation: number;
  /** The transaction that wrote it (empty for generation 0). */
  readonly txid: string;
  /** When it was written (empty for generation 0). */
  readonly updated_at: string;
  /** The content. */
  readonly contents: CatalogContents;
}

/** The empty content of a new profile. */
export const EMPTY_CONTENTS: CatalogContents = Object.freeze({
  variants: Object.freeze([]),
  descriptors: Object.freeze({}),
  plugins: Object.freeze({}),
  namespace_owners: Object.freeze({}),
  states: Object.freeze({}),
});
