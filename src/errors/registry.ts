/**
 * The one registry of stable host error codes.
 *
 * Three vocabularies meet here. The GUM contract names host codes directly
 * (`PLUGIN_MANIFEST_INVALID`, `RATE_LIMITED`, …) and they are used verbatim.
 * The handshake runtime names nine failure classes (`launch_failed`, …) and
 * the mcptest protocol names five host failures (`SpawnFailed`, …) plus the
 * JSON-RPC integer codes. Those are not separate codes: each is a spelling of
 * one registry entry, kept in `spellings` so that a protocol adapter can show
 * its own protocol's word (see {@link spellingOf}) while every caller of the
 * library matches on one `code`.
 */

/** How a code is spelled by each protocol that has its own vocabulary. */
export interface ProtocolSpellings {
  /** The handshake runtime's failure class (seed 004). */
  readonly handshake?: string;
  /** The mcptest `HostError` variant (seed 002). */
  readonly ndjson?: string;
  /** The JSON-RPC 2.0 integer code, where one fits. */
  readonly jsonrpc?: number;
}

/** One row of the registry. */
export interface ErrorCodeInfo {
  /** What the code means, in one sentence. */
  readonly meaning: string;
  /** Whether a caller may retry the same request unchanged by default. */
  readonly retryable: boolean;
  /** What the user or plugin author should do about it. */
  readonly hint: string;
  /** Which stage produces it. */
  readonly stage: 'install' | 'runtime' | 'protocol' | 'host';
  /** The code's spelling in the protocols that have their own vocabulary. */
  readonly spellings?: ProtocolSpellings;
}

const row = (
  stage: ErrorCodeInfo['stage'],
  retryable: boolean,
  meaning: string,
  hint: string,
  spellings?: ProtocolSpellings,
): ErrorCodeInfo => (spellings ? { stage, retryable, meaning, hint, spellings } : { stage, retryable, meaning, hint });

/**
 * Every stable code the library can return, with its meaning, default
 * retryability and remediation hint.
 */
export const ERROR_CODES = {
  // Install and validation (GUM contract).
  PLUGIN_MANIFEST_NOT_FOUND: row('install', false, 'No manifest file was found in the plugin directory or archive.', 'Ship manifest.json (GUM v1), a TOML contract manifest, or mcp-plugin.json at the package root.'),
  PLUGIN_MANIFEST_AMBIGUOUS: row('install', false, 'The package root holds more than one plugin manifest (manifest.json, plugin.toml, manifest.toml, mcp-plugin.json), so what a reviewer reads may not be what the host installs: refused at install and validate, and at start for an install root made before the host refused such packages (details.install_root).', 'Ship one manifest at the package root (details.manifest_files names them); an MCP Bundle manifest.json beside one GUM manifest is allowed, and the bundle is installed. An installed plugin refused at start: reinstall it from a package with one manifest.'),
  PLUGIN_MANIFEST_INVALID: row('install', false, 'The manifest does not satisfy its schema.', 'Fix every violation listed in details.violations; each names a JSON pointer.'),
  PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED: row('install', false, 'manifest_schema_version is missing, unsupported, or nested inside [plugin].', 'Set manifest_schema_version = 1 at the top level of the manifest, never inside [plugin].'),
  PLUGIN_SHAPE_UNSUPPORTED: row('install', false, 'The plugin declares a shape this host does not run (Shape 2 gRPC is reserved).', 'Use shape "mcp-plugin"; gRPC subprocess plugins (Shape 2) are not accepted from third parties yet.'),
  PLUGIN_BINDING_INVALID: row('install', false, 'A tool record lacks the binding selector fields its backend_kind requires.', 'Give every mcp-plugin tool a tool_name that matches a tool the server lists.'),
  PLUGIN_NAMESPACE_CONFLICT: row('install', false, 'The plugin claims a reserved prefix or one owned by another namespace_owner, or omits namespace_owner.', 'Declare namespace_owner, pick a plugin_id whose prefix you own, or (dev profiles only) pass the dev namespace-conflict override.'),
  PLUGIN_EXECUTABLE_UNTRUSTED: row('install', false, 'The executable is absolute, escapes the install root, is a link or shell interpreter, or no longer matches its pinned SHA-256; or a file of the install root was changed, added or removed since install (details.file).', 'Ship a real entry-point file inside the package, and install the package again to record its files as they are.'),
  PLUGIN_ENV_PROHIBITED: row('install', false, 'The plugin asks for an environment variable that is on the host denylist.', 'Remove the denylisted name; declare credentials through credential descriptors instead.'),
  PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID: row('install', false, 'credential_descriptors do not match needs_user_creds one to one.', 'Declare exactly one descriptor (alias, env, kind, display_name, setup_hint) per needs_user_creds entry.'),
  PLUGIN_LICENSE_MISSING: row('install', false, 'A package installed from an archive or a registry has no LICENSE file at its root.', 'Ship a LICENSE (or LICENSE.md, LICENCE, COPYING) file beside the manifest; local directory installs in dev profiles do not need one.'),
  PLUGIN_TRUST_DECLINED: row('install', false, 'The install was not accepted: the trust prompt or the host application declined it; or an upgrade adds powers or makes tools easier to call than the version accepted before and no one was asked (details.reason capabilities_widened or risk_lowered); or an upgrade or reinstall of an npm package comes from another registry than the version accepted before, which may be another publisher\'s package of the same name, and no one was asked or it was declined (details.reason registry_changed, details.registry_from and registry_to; registry_from null for a version installed before registries were recorded, counted as the default registry); or another npm package than the one the plugin id was accepted as claims its id and owner, and would take over its data directory and env grants (details.reason package_changed, details.package_from and package_to); or another process changed the installed version while the question was open (details.reason baseline_changed, retryable).', 'Read the namespace owner, terms of service, risk and the changes the install shows (details.added_capabilities, details.risk_changes, details.registry_to), then install again and accept (the CLI: answer y, or pass --yes); for registry_changed, accept only if the new registry is meant, else install with the registry of before; for package_changed, only if the other package is meant to replace the installed one.'),
  PLUGIN_AUTH_INVALID: row('install', false, 'auth_strategy and auth_components do not fit together or with the credentials.', 'Use "compound" for auth_components, give each credential descriptor a secret component naming its alias, and declare a canary for a compound plugin.'),
  PLUGIN_SCHEMA_REF_INVALID: row('install', false, 'A schema_ref is unsafe, missing, or its bundle lacks object-valued $defs.request and $defs.response, or one of them is larger, deeper, holds more objects or names more patterns than the host compiles (32 KiB, 32 levels, 512 objects and arrays, 64 patterns), or expands through its $refs past what one validation may visit (8192 subschemas counted once per way they are reached, recursion that two keywords apply to the same value, a $ref to another document), or the manifest\'s schemas together pass 256 KiB.', 'Use a plain name ([A-Za-z0-9._-]) and ship schemas/<ref>.json with $defs.request and $defs.response, each within the bounds the message names (for the expansion bound: inline or merge $defs that are referenced many times over, and give each recursive member one $ref), and all of them together within maxManifestSchemaTotalBytes (share one bundle between tools that take the same arguments).'),
  SCHEMA_REF_COLLISION: row('install', false, 'A schema ref is already installed with a different canonical body.', 'Rename the schema ref or ship the identical schema body.'),
  PROFILE_STRIP_NULLS_UNSAFE: row('install', false, 'An output profile strips nulls without declaring where that is safe.', 'Declare null_elision_safe_fields on the tool with the exact dot paths that may be elided.'),
  PROFILE_INVALID: row('install', false, 'An output profile definition is malformed (an unknown field or a wrong type, a base (inherits) that does not exist or leads back to the profile, on_empty over 500 code points, collapse_arrays.max_items 0 without on_empty), or a tool names a profile that is neither defined nor built in (details.pointer).', 'Fix the definition at details.pointer; `mcp-plugin-host profile validate <file>` reports every problem of a profile file at once.'),
  PROFILE_RECOVERY_DISABLED: row('install', false, 'A lossy output profile (one that can remove fields, items or characters) sets recovery "none"; the contract keeps recovery enabled for lossy plugin profiles.', 'Remove recovery = "none" (lossy profiles default to local_artifact), or declare raw_result_allowed on the tool and drop the profile.'),
  PLUGIN_OUTPUT_PROFILE_REQUIRED: row('install', false, 'A tool of a GUM contract (TOML) manifest declares no output_profile and is not raw_result_allowed = true; or a raw_result_allowed tool has no token_budget_exception; or a tool binds the built-in "raw" profile, which shapes nothing (details.violations name each tool).', 'Bind an output profile (defined in output_profiles, or the built-in _base.list or _base.compact), or declare raw_result_allowed = true with token_budget_exception = { max_tokens = <N>, reason = "<why the result stays whole>" }.'),
  PLUGIN_SANDBOX_UNSUPPORTED: row('install', false, 'No enforcing OS sandbox is available on this host.', 'Install bubblewrap (Linux) or run on macOS; enable unprivileged user namespaces if they are disabled.'),
  PLUGIN_FS_WRITE_OUTSIDE_SANDBOX: row('install', false, 'fs_write_dir is absolute, escapes the plugin data directory, or resolves through a link, file or moved directory inside it.', 'Use "" or a relative path without ".."; remove a link or file the plugin left at the named component.'),
  PLUGIN_CLIENT_REQUESTS_INVALID: row('install', false, 'declared_capabilities.client_requests (or grant.client_requests, details.pointer) names something other than sampling, elicitation and roots, or the plugin\'s shape cannot send requests to an MCP client (only mcp-plugin and esm-module can).', 'List only sampling, elicitation and roots, each once, and only in the manifest of an mcp-plugin or esm-module plugin.'),
  PLUGIN_EGRESS_DESTINATION_INVALID: row('install', false, 'An egress destination (declared_capabilities.egress or grant.egress, details.pointer) is not host[:port], *.suffix[:port] or an IP literal.', 'Write destinations as api.example.com:443, *.example.com or [2001:db8::1]:443; a port is 1 to 65535, a wildcard stands for the first label only.'),
  PLUGIN_CATALOG_SCHEMA_UNSUPPORTED: row('host', false, 'plugin-catalog.json has a schema version this host does not read.', 'Upgrade the host, or restore the file from a backup written by this version.'),
  PLUGIN_LOCK_SCHEMA_UNSUPPORTED: row('host', false, 'plugins.lock has a schema version this host does not read.', 'Upgrade the host, or restore the file from a backup written by this version.'),
  PLUGIN_STATE_SCHEMA_UNSUPPORTED: row('host', false, 'plugin-state.json has a schema version this host does not read.', 'Upgrade the host, or restore the file from a backup written by this version.'),
  PLUGIN_GRANT_EXCEEDS_DECLARATION: row('install', false, 'The install grant asks for a sandbox power (details.field) beyond what the manifest declares; a grant may only narrow a declaration.', 'Narrow the named grant field to the manifest\'s declared_capabilities, or leave it out to keep the declaration.'),
  PLUGIN_BUNDLE_UNSUPPORTED: row('install', false, 'The MCP Bundle asks for something this host cannot run: its manifest_version, server type, mcp_config command or substitution (details.violations name the field).', 'Use manifest_version 0.1 to 0.4, server.type node, python or binary, run the entry point as mcp_config.args[0] (node, python) or as the command (binary), and pass sensitive user_config values in an env var of their own.'),
  PLUGIN_BUNDLE_INCOMPATIBLE: row('install', false, 'The MCP Bundle\'s compatibility excludes this host: its platform, or the version of the interpreter it would be pinned to (details.violations).', 'Install on a listed platform, or put an interpreter whose version the bundle accepts first on the host\'s interpreter search path.'),
  PLUGIN_ARCHIVE_INVALID: row('install', false, 'The plugin archive is malformed, over a size or entry limit, or holds a link, device, absolute or traversing entry.', 'Repackage the plugin as a plain .tgz or .zip of regular files and directories within the limits.'),
  PLUGIN_CHECKSUM_MISMATCH: row('install', false, 'The package SHA-256 does not match the declared checksum.', 'Download the package again or correct [package].checksum.'),
  PLUGIN_SOURCE_NOT_ALLOWED: row('install', false, 'A plugin directory was offered to a standard profile, which installs only archives it can verify (details.reason: directory_source).', "Install directories into a dev profile (PluginHost.open({ profileKind: 'dev' }); the CLI's --dev), or pack the plugin as a .tgz or .zip and install that with its checksum."),
  PLUGIN_SIGNATURE_INVALID: row('install', false, 'The package signature is missing, malformed, or not made by a trusted key.', 'Sign the package digest with a key the host trusts, or install without requiring signatures.'),
  PLUGIN_ALREADY_INSTALLED: row('install', false, 'A plugin with this id is already installed (or loaded) at this version, from other bytes.', 'Reinstalling the same package changes nothing; install a new version to upgrade, or pass replace: true to replace the package at the same version.'),
  PLUGIN_DOWNGRADE_REFUSED: row('install', false, 'The package is a lower version than the one installed.', 'Pass allowDowngrade: true to install the lower version anyway.'),
  PLUGIN_PYTHON_INSTALL_FAILED: row('install', false, 'A Python console script could not be installed into its private environment (details.reason): pyproject.toml or its entry point is invalid, the package ships no wheels, or venv or pip failed (details.stderr_tail).', 'Ship wheels of the project and of every dependency in wheels/ (pip wheel -w wheels .), and make a python3 with venv and pip (22.3 or later) available on the interpreter search path.'),
  PLUGIN_NPM_INSTALL_FAILED: row('install', false, 'An npm package could not be fetched or laid out (details.reason): the spec is not a registry package or local tarball, npm failed (details.stderr_tail: network, registry, integrity), or the package has no bin to run.', 'Check the spec (npm:<name>@<version> or npm:<path>.tgz), that the registry is reachable (npm.registry, HTTPS_PROXY, NODE_EXTRA_CA_CERTS), and that the package declares a bin; or pass the manifest install option.'),
  PLUGIN_DEPENDENCY_MISSING: row('install', false, 'A declared plugin dependency is not available.', 'Install the missing dependency first or remove it from dependencies.'),
  PLUGIN_DEPENDENCY_CYCLE: row('install', false, 'Plugin dependencies form a cycle.', 'Break the cycle named in the message.'),
  PLUGIN_ENTRY_INVALID: row('install', false, 'The ESM entry is missing, escapes the plugin root, or does not export createPlugin(server).', 'Point entry at a module inside the package that exports createPlugin.'),
  PLUGIN_CAPABILITY_MISMATCH: row('install', false, 'Declared capabilities and actual registrations differ under strict capabilities.', 'Declare exactly what createPlugin registers.'),
  PLUGIN_TOOL_INVALID: row('install', false, 'A registered tool failed validation under strict tools.', 'Fix the tool definition named in details.'),

  // Runtime (GUM contract).
  RATE_LIMITED: row('runtime', true, 'The upstream service rate-limited the plugin.', 'Retry after retry_after_ms when present.'),
  AUTH_REQUIRED: row('runtime', false, 'The plugin needs fresh credentials.', 'Run setup for this plugin to store new credentials.'),
  SERVICE_DOWN: row('runtime', false, 'The plugin or its upstream service failed.', 'See source_error_code and the message; retry only when retryable is true.'),
  INVALID_ARGS: row('runtime', false, 'The tool rejected its arguments.', 'Correct the arguments to match the tool input schema.'),
  PLUGIN_QUARANTINED: row('runtime', false, 'The plugin is quarantined after failures and is not started.', 'Fix the cause, then reload or unquarantine the plugin.'),
  VARIANT_NOT_FOUND: row('runtime', false, 'No installed, active operation has this id.', 'List plugins to see valid plug.<plugin_id>.<tool> ids.'),
  VARIANT_QUARANTINED: row('runtime', false, 'The operation belongs to a quarantined plugin.', 'Fix the cause, then reload or unquarantine the plugin.'),
  UNKNOWN_CAPABILITY: row('runtime', false, 'A capability name is not known to the host.', 'Use a capability the host lists.'),
  PLUGIN_NOT_FOUND: row('runtime', false, 'No plugin with this id is installed in the profile.', 'Check the id with list.'),
  PLUGIN_SETTING_MISSING: row('runtime', false, 'The plugin (an MCP Bundle) has required settings (user_config) with no value and no default; it does not start without them.', 'Install the package again with settings: { <key>: <value> } for each key in details.missing_settings (CLI: --setting key=value).'),
  PLUGIN_CAPABILITIES_MISMATCH: row('runtime', false, 'The sandbox powers plugin-catalog.json records for the plugin are not those its pinned manifest and the grant in plugins.lock give (the catalog was edited or restored on its own); it does not start.', 'Install the plugin again (with the grant you mean), or restore the three catalog files from one backup; details.recorded and details.pinned show both.'),
  PLUGIN_NEEDS_CONFIGURATION: row('runtime', false, 'The plugin is installed but its declared credentials are missing.', 'Run setup for this plugin.'),
  PLUGIN_CALL_INTERRUPTED: row('runtime', true, 'The call was stopped because its plugin was removed, upgraded or quarantined (details.reason; by this host or another process on the profile) while it ran, and it did not finish within the drain deadline.', 'Retry the call: an upgraded plugin answers with its new version (after the next open unless the host has hotReload or installed it with activation immediate), a removed one with VARIANT_NOT_FOUND, a quarantined one with VARIANT_QUARANTINED. Pass a longer drainTimeoutMs to remove or install to let calls finish.'),
  PLUGIN_PENDING_RESTART: row('runtime', false, 'The plugin was installed or upgraded (by this host or another process on the profile) while this host was open and becomes active on the next open.', 'Reopen the host (or open it with hotReload, which follows installs and upgrades).'),
  PLUGIN_RISK_NOT_ALLOWED: row('runtime', false, 'The tool risk_class is above what the call accepts.', 'Pass a higher maxRisk for this call if the caller really intends it.'),
  PLUGIN_CONFIRMATION_DENIED: row('runtime', false, 'A high_stakes_write tool was not confirmed.', 'Supply a confirmation callback that approves the call.'),
  PLUGIN_CONFIRMATION_UNAVAILABLE: row('runtime', false, 'A high_stakes_write tool needs confirmation and its caller cannot be asked: the MCP client connected to the gateway did not declare the elicitation capability.', 'Use an MCP client that supports elicitation (form mode) to call confirmed tools through the gateway, or call the tool through a host whose confirmation callback can ask someone.'),
  PLUGIN_TOOLS_MISMATCH: row('runtime', false, 'The tools the plugin lists differ from the tools its manifest declares.', 'Make advertised_tools match the tools/list answer exactly (unprefixed names).'),
  PLUGIN_CANCELLED: row('runtime', false, 'The call was cancelled by its caller.', 'None; the caller aborted.'),
  PROFILE_NOT_FOUND: row('runtime', false, "The output profile a tool's variant binds is neither recorded with the plugin nor built in (details.profile), so its results cannot be shaped.", 'Install the plugin again with the profile defined in its manifest (output_profiles), or bind a built-in profile.'),
  PROFILE_RECOVERY_FAILED: row('runtime', true, "A lossy output profile shaped a result, and the full result could not be written to the profile's results directory (details.path), so the call fails rather than lose it.", 'Free space or fix the permissions of the profile directory, then retry.'),
  PLUGIN_RESPONSE_SCHEMA_VIOLATION: row('runtime', false, 'The plugin answered a call with a result that breaks the response schema it declares for the tool (schema_ref); details.pointer locates the first mismatch.', 'Report it to the plugin author: the plugin broke its own contract. Retrying will not help until the plugin or its schema is fixed.'),
  PLUGIN_TOOL_ERROR: row('runtime', false, 'The tool reported a failure of its own: an MCP result with isError: true that carries no GUM error envelope. details.result holds its CallToolResult (content, structuredContent) unchanged.', 'Read details.result for the tool\'s explanation (a gateway forwards it to its MCP client as is); correct the call or the upstream condition it names.'),
  PLUGIN_RESULT_TOO_LARGE: row('runtime', false, 'The plugin answered this call with a message over the frame cap (details.max_frame_bytes); the call failed, the plugin keeps running.', 'Ask the tool for less, or raise maxFrameBytes for the host or for this plugin (plugins.<plugin_id>.maxFrameBytes).'),
  PLUGIN_RESULT_OVER_BUDGET: row('runtime', false, "A raw_result_allowed tool returned a result larger than its token_budget_exception.max_tokens (details.estimated_tokens, an estimate of UTF-8 bytes / 4); the call fails and the full result is kept at details.full_result_path.", 'Ask the tool for less (narrower arguments), read the full result from details.full_result_path, or (plugin author) bind an output profile or raise max_tokens.'),
  PLUGIN_FRAME_TOO_LARGE: row('protocol', false, 'The plugin wrote a frame larger than the frame cap.', 'Return smaller results, or raise the host frame cap.', { handshake: 'malformed_response' }),

  // Protocol failures shared by the stdio shapes (handshake and mcptest spellings).
  PLUGIN_SPAWN_FAILED: row('protocol', false, 'The plugin process could not be started.', 'Check the executable exists, is executable and matches the host architecture.', { handshake: 'launch_failed', ndjson: 'SpawnFailed' }),
  PLUGIN_HANDSHAKE_FAILED: row('protocol', false, 'The plugin did not complete its handshake.', 'The plugin must answer the handshake with exactly one valid line.', { handshake: 'handshake_failed' }),
  PLUGIN_TIMEOUT: row('protocol', true, 'The plugin did not answer within the timeout.', 'Raise the timeout or make the tool faster.', { handshake: 'timeout', ndjson: 'Timeout' }),
  PLUGIN_CRASHED: row('protocol', false, 'The plugin exited or closed stdout before answering.', 'See details.stderr_tail and details.exit for the cause.', { handshake: 'crashed', ndjson: 'PluginCrashed' }),
  PLUGIN_RESOURCE_LIMIT: row('protocol', false, "The plugin's process tree reached its memory or process cap and was stopped.", 'See details.limit (memory or processes), details.limit_value and details.stderr_tail; make the plugin use less, or raise the cap for this plugin (sandbox.pluginLimits).'),
  PLUGIN_INVALID_JSON: row('protocol', false, 'The plugin wrote a line that is not valid JSON.', 'Write exactly one JSON object per line on stdout; log to stderr.', { handshake: 'malformed_response', ndjson: 'InvalidJson', jsonrpc: -32700 }),
  PLUGIN_MALFORMED_RESPONSE: row('protocol', false, 'The plugin wrote JSON that does not match the protocol schema.', 'Send exactly one of result and error, with the request id echoed.', { handshake: 'malformed_response', ndjson: 'InvalidResponse', jsonrpc: -32600 }),
  PLUGIN_METHOD_NOT_FOUND: row('protocol', false, 'The plugin does not handle the method.', 'Call a method the plugin implements.', { jsonrpc: -32601 }),
  PLUGIN_INVALID_PARAMS: row('protocol', false, 'The plugin rejected the method params.', 'Correct the params.', { jsonrpc: -32602 }),
  PLUGIN_INTERNAL_ERROR: row('protocol', false, 'The plugin hit an unexpected internal failure.', 'See the plugin stderr.', { jsonrpc: -32603 }),
  PLUGIN_REQUEST_REJECTED: row('protocol', false, 'The plugin answered with a well-formed JSON-RPC error saying it could not parse or accept the request (-32700 or -32600). It is an answer, not a protocol violation by the plugin, so it does not count toward quarantine; details.jsonrpc_code and details.jsonrpc_message hold what the plugin said.', 'Check the arguments and the plugin version against details.jsonrpc_message; if the plugin rejects every request this way, report it to its author.'),
  PLUGIN_TOOL_NOT_EXPOSED: row('protocol', false, 'The requested tool is not in the plugin exposed_tools.', 'Call a tool the plugin exposes.', { handshake: 'tool_not_exposed' }),
  PLUGIN_PROTOCOL_VERSION_MISMATCH: row('protocol', false, 'The plugin speaks another protocol version.', 'Build the plugin for the protocol version the host requests.', { handshake: 'protocol_version_mismatch' }),
  PLUGIN_CAPABILITY_NOT_DECLARED: row('protocol', false, 'The host grants capabilities but the plugin did not declare the ones it requests.', 'Declare the requested capabilities in the handshake manifest.', { handshake: 'capability_not_declared' }),
  PLUGIN_CAPABILITY_NOT_ALLOWED: row('protocol', false, 'The plugin declared a capability outside the host allow-list.', 'A plugin cannot grant itself powers; ask the host operator to allow it.', { handshake: 'capability_not_allowed' }),

  // Host-side conditions.
  CATALOG_LOCK_TIMEOUT: row('host', true, 'The profile lock was held by another process for longer than the lock timeout.', 'Retry; if it persists, check which process holds the profile lock.'),
  CATALOG_INCONSISTENT: row('host', false, 'The three catalog files do not name the same plugins: one was edited, restored or replaced on its own.', 'Restore all three files from one backup, or edit them so that each names the plugins listed in details.plugins; they were left in place.'),
  CATALOG_CORRUPT: row('host', false, 'A catalog file could not be parsed and no consistent generation was found.', 'Inspect or restore the file named in details.file; it was left in place.'),
  HOST_IO_ERROR: row('host', true, 'A file system operation of the host failed.', 'See details.operation, details.path and details.errno; check disk space and permissions of the profile directory.'),
  HOST_CLOSED: row('host', false, 'The host was closed.', 'Open a new PluginHost.'),
  HOST_INVALID_OPTIONS: row('host', false, 'The options passed to the host are invalid.', 'Fix the option or argument the message names and call again (details.option, when set, is its path, details.closest the name it likely meant). Host options: docs/embedding.md, "Opening a profile"; CLI options: docs/cli.md.'),
  AUDIT_FILE_UNSAFE: row('host', false, 'The audit file exists but is not a regular file of this user readable by this user alone (details.reason: a symbolic link, another owner, mode other than 600, other hard links).', 'Point the audit sink at a new path, or fix the file: chmod 600 it, make this user its owner, or replace a link with a file.'),
  GATEWAY_ITEM_NOT_FOUND: row('runtime', false, 'No active plugin offered to this gateway client serves the resource URI, resource template or prompt name (details.uri or details.prompt); or several plugins serve the URI, by their templates or by listing it while the template of another matches it (details.plugins).', 'List resources, templates and prompts again (names may have changed); for a URI several plugins match, use one of the qualified forms in details.qualified (plug.<plugin_id>:<uri>).'),
  GATEWAY_SUBSCRIPTION_LIMIT: row('runtime', false, 'This gateway client already holds as many resource subscriptions as one client may (details.limit); the subscription to details.uri was not made.', 'Unsubscribe from resources the client no longer needs (resources/unsubscribe), or raise maxSubscriptionsPerClient in the gateway configuration.'),
  GATEWAY_LISTEN_FAILED: row('host', false, 'The gateway could not listen on its HTTP address (details.host, details.port): the port is taken or the address is not local.', 'Pick another port (--port, or 0 for a free one) or an address of this machine.'),
  HOST_INTERNAL_ERROR: row('host', false, 'The host broke one of its own rules (an invariant); nothing the caller passed caused it.', 'This is a bug in mcp-plugin-host; report it with details.'),
} as const satisfies Record<string, ErrorCodeInfo>;

/** Every stable error code. */
export type HostErrorCode = keyof typeof ERROR_CODES;

/** The registry row of a code. */
export function describeErrorCode(code: HostErrorCode): ErrorCodeInfo {
  return ERROR_CODES[code];
}

/** Whether a string is a registered host error code. */
export function isHostErrorCode(value: unknown): value is HostErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}

/**
 * The spelling a protocol uses for a host code, when that protocol has its
 * own vocabulary; `undefined` when it has no word for it.
 */
export function spellingOf<P extends keyof ProtocolSpellings>(
  code: HostErrorCode,
  protocol: P,
): ProtocolSpellings[P] | undefined {
  const info: ErrorCodeInfo = ERROR_CODES[code];
  return info.spellings?.[protocol];
}
