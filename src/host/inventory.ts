/**
 * Inventory rows and resources, assembled from the catalog the way the
 * contract says: runtime status from plugin-state.json, dispatch metadata
 * from plugin-catalog.json, package provenance from plugins.lock, with
 * `metadata_warning: "lock_catalog_mismatch"` when those disagree. Raw env
 * names never appear here; credentials are shown by alias and display name.
 */
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { PackageSource } from '../catalog/catalogTypes.js';
import type { InventoryStatus } from './inventoryStatus.js';
import type { AuthComponent, AuthStrategy, ClientRequestKind, ConfirmationPolicy, PluginGrant, RiskClass, SettingValue } from '../manifest/model.js';
import type { EnforcedPolicy } from '../sandbox/SandboxSpawner.js';
import { hostOpId } from './operations.js';
import { statusOf } from './pluginState.js';

/** One row of the `plugins` inventory, sorted by name. */
export interface PluginRow {
  /** The plugin id. */
  readonly name: string;
  /** The name people know it by (the manifest's display name; the id when it declares none). */
  readonly display_name: string;
  /** Installed version. */
  readonly version: string;
  /** The protocol it speaks. */
  readonly shape: string;
  /** Inventory status, with the contract's precedence. */
  readonly status: InventoryStatus;
  /** Terms-of-service status declared by the plugin. */
  readonly tos: string | null;
  /** Risk statement declared by the plugin. */
  readonly risk: string | null;
  /** How many operations it offers. */
  readonly variant_count: number;
}

/** A credential as shown to people: never the env var name, never the value. */
export interface CredentialView {
  /** Stable alias. */
  readonly alias: string;
  /** Kind of secret. */
  readonly kind: string;
  /** Display name. */
  readonly display_name: string;
  /** How to obtain it. */
  readonly setup_hint: string;
}

/** One operation of a plugin, as a host offers it. */
export interface OperationView {
  /** The id to call it by, `plug.<plugin_id>.<tool>`. */
  readonly op_id: string;
  /** The stable variant id. */
  readonly variant_id: string;
  /** The tool name the plugin itself lists. */
  readonly tool_name: string;
  /** What it may do. */
  readonly risk_class: RiskClass;
  /** Whether a call needs the host's confirmation. */
  readonly confirmation_policy: ConfirmationPolicy;
  /** What it does, when the manifest says. */
  readonly description: string | null;
}

/** The sandbox powers an install gave a plugin, and what they came from. */
export interface GrantedCapabilities {
  /** Whole-network access. */
  readonly network: boolean;
  /** The writable directory inside the data dir (`""`: the data dir itself). */
  readonly fs_write_dir: string;
  /** Env var names passed through from the host environment. */
  readonly env_allow: readonly string[];
  /** Destinations reachable through the egress proxy (the declaration narrowed by the grant, or what the grant gave), when there are any. */
  readonly egress?: readonly string[];
  /** The requests to its client the plugin may send, answered by the host application's callbacks, when there are any. */
  readonly client_requests?: readonly ClientRequestKind[];
  /** What the grant narrowed (`declared`: the manifest's declaration) or widened (`host_default`: the source declared nothing). */
  readonly basis: 'declared' | 'host_default';
  /** The grant given at install, as recorded in the lock; null when none was given. */
  readonly grant: PluginGrant | null;
}

/** The `plugin/{name}` resource: everything known about one plugin. */
export interface PluginInfo extends PluginRow {
  /** What it does. */
  readonly description: string | null;
  /** Its publisher identity. */
  readonly namespace_owner: string | null;
  /** Its variant ids. */
  readonly variant_ids: readonly string[];
  /** Its operations, with the ids they are called by. */
  readonly operations: readonly OperationView[];
  /** Package provenance from plugins.lock. */
  readonly package: PackageSource;
  /** The catalog generation this view was read from. */
  readonly install_generation: number;
  /** The pinned executable: its install root, its path relative to it, and its SHA-256. */
  readonly executable: { readonly install_root: string; readonly path: string; readonly sha256: string };
  /** When it was installed. */
  readonly installed_at: string | null;
  /** When a host first activated it. */
  readonly activated_at: string | null;
  /** Why it is not active, when it is not. */
  readonly reason: string | null;
  /** When it was quarantined. */
  readonly quarantined_at: string | null;
  /** The last error code it produced. */
  readonly last_error_code: string | null;
  /** Its credentials, by alias. */
  readonly credential_descriptors: readonly CredentialView[];
  /** How it authenticates upstream; null when it declares no strategy. */
  readonly auth_strategy: AuthStrategy | null;
  /** What it needs before it works: secret components (by credential alias) and external prerequisites the host cannot complete. */
  readonly auth_components: readonly AuthComponent[];
  /** Its settings as the install resolved them (an MCP Bundle's non-sensitive user_config); null for plugins without settings. */
  readonly settings: Readonly<Record<string, SettingValue>> | null;
  /** Required settings that have no value: it does not start until installed with them. */
  readonly missing_settings: readonly string[];
  /** What the install gave it (declaration or host default, with the grant applied); null when the catalog records no capabilities. */
  readonly granted_capabilities: GrantedCapabilities | null;
  /** What the sandbox enforces for it on this host; null when the catalog records no capabilities, or when it cannot start here (see `start_refusal`). */
  readonly enforced_capabilities: EnforcedPolicy | null;
  /** Present when the plugin cannot start on this host whatever it is asked (no sandbox exists here): the error every start fails with. */
  readonly start_refusal?: StartRefusal;
  /** Present when the lock and the catalog disagree. */
  readonly metadata_warning?: 'lock_catalog_mismatch';
}

/** Builds one inventory row. */
export function pluginRow(plugin: InstalledPlugin, pendingRestart: boolean): PluginRow {
  const d = plugin.descriptor;
  return {
    name: plugin.plugin_id,
    display_name: d?.name ?? plugin.plugin_id,
    version: plugin.lock.version,
    shape: d?.shape ?? 'unknown',
    status: plugin.state === undefined ? 'quarantined' : statusOf(plugin.state, pendingRestart),
    tos: d?.tos ?? null,
    risk: d?.risk ?? null,
    variant_count: plugin.variants.length,
  };
}

function grantedOf(plugin: InstalledPlugin): GrantedCapabilities | null {
  const caps = plugin.descriptor?.capabilities;
  if (caps === undefined) return null;
  const grant = plugin.lock.grant;
  return {
    network: caps.network,
    fs_write_dir: caps.fs_write_dir,
    env_allow: [...caps.env_allow],
    ...(caps.egress === undefined ? {} : { egress: [...caps.egress] }),
    ...(caps.client_requests === undefined || caps.client_requests.length === 0 ? {} : { client_requests: [...caps.client_requests] }),
    basis: plugin.descriptor?.capabilities_source ?? 'declared',
    grant: grant ?? null,
  };
}

function reasonOf(plugin: InstalledPlugin, status: InventoryStatus): string | null {
  const state = plugin.state;
  switch (status) {
    case 'active':
      return null;
    case 'quarantined':
      if (state === undefined) return 'state_missing';
      return state.permanent_quarantine ? `${state.quarantine_reason ?? 'failures'} (until unquarantined)` : (state.quarantine_reason ?? 'failures');
    case 'needs_configuration':
      return 'credentials_missing';
    case 'installed_pending_restart':
      return 'installed_after_host_opened';
  }
}

/** The error every start of a plugin fails with on this host, as `info` shows it. */
export interface StartRefusal {
  /** The stable code from the error registry. */
  readonly code: string;
  /** What is wrong. */
  readonly message: string;
  /** What to do about it. */
  readonly hint: string;
}

/** Builds the full view of one plugin; `enforced` is what its sandbox would enforce, or why it cannot start at all. */
export function pluginInfo(
  plugin: InstalledPlugin,
  pendingRestart: boolean,
  installGeneration: number,
  enforced: EnforcedPolicy | StartRefusal | null,
): PluginInfo {
  const row = pluginRow(plugin, pendingRestart);
  const d = plugin.descriptor;
  const lock = plugin.lock;
  const mismatch =
    d === undefined ||
    d.version !== lock.version ||
    plugin.variants.length === 0 ||
    (d.namespace_owner !== undefined && lock.namespace_owner !== undefined && d.namespace_owner !== lock.namespace_owner);
  return {
    ...row,
    description: d?.description ?? null,
    namespace_owner: plugin.lock.namespace_owner ?? d?.namespace_owner ?? null,
    variant_ids: plugin.variants.map((v) => v.variant_id),
    operations: plugin.variants.map(
      (v): OperationView => ({
        op_id: hostOpId(v),
        variant_id: v.variant_id,
        tool_name: v.tool_name,
        risk_class: v.risk_class,
        confirmation_policy: v.confirmation_policy,
        description: typeof v.description === 'string' ? v.description : null,
      }),
    ),
    package: plugin.lock.package,
    install_generation: installGeneration,
    executable: {
      install_root: plugin.lock.binding.install_root,
      path: plugin.lock.binding.executable_path,
      sha256: plugin.lock.binding.executable_sha256,
    },
    installed_at: plugin.state?.installed_at ?? null,
    activated_at: plugin.state?.activated_at ?? null,
    reason: reasonOf(plugin, row.status),
    quarantined_at: plugin.state?.quarantined_at ?? null,
    last_error_code: plugin.state?.last_error_code ?? null,
    credential_descriptors: (d?.credential_descriptors ?? []).map((c) => ({
      alias: c.alias,
      kind: c.kind,
      display_name: c.display_name,
      setup_hint: c.setup_hint,
    })),
    auth_strategy: (d?.['auth_strategy'] as AuthStrategy | undefined) ?? null,
    auth_components: ((d?.['auth_components'] as readonly AuthComponent[] | undefined) ?? []).map((c) => ({ ...c })),
    settings: d?.launch === undefined ? null : { ...d.launch.settings },
    missing_settings: [...(d?.launch?.missing_settings ?? [])],
    granted_capabilities: grantedOf(plugin),
    ...(enforced !== null && 'code' in enforced
      ? { enforced_capabilities: null, start_refusal: { code: enforced.code, message: enforced.message, hint: enforced.hint } }
      : { enforced_capabilities: enforced }),
    ...(mismatch ? { metadata_warning: 'lock_catalog_mismatch' as const } : {}),
  };
}
