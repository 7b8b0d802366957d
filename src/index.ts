/**
 * mcp-plugin-host: install, verify, sandbox, run and supervise third-party
 * subprocess plugins from a Node application.
 *
 * @packageDocumentation
 */

export {
  ERROR_CODES,
  describeErrorCode,
  isHostErrorCode,
  spellingOf,
  type ErrorCodeInfo,
  type HostErrorCode,
  type ProtocolSpellings,
} from './errors/registry.js';
export { HostError, hostError, isHostError, type HostErrorFields } from './errors/HostError.js';
export {
  silentLogger,
  systemClock,
  systemRandom,
  type Clock,
  type LogLevel,
  type Logger,
  type Random,
} from './ports/ports.js';
export type { ExitInfo, PluginProcess, ResourceLimitHit, StopOptions, TreeLimitMechanism } from './process/PluginProcess.js';
export {
  DEFAULT_ENV_PASS_THROUGH,
  EnvDenylist,
  prohibitedEnvMessage,
  type BuildEnvInput,
  type EnvDenyRule,
  type EnvDenylistOptions,
  type EnvDenylistPreset,
  type EnvNameField,
  type RejectedEnvEntry,
} from './env/EnvDenylist.js';
export {
  NamespaceLock,
  reservedNamespacePreset,
  type NamespaceClaim,
  type NamespaceConflictReason,
  type NamespaceLockOptions,
  type NamespaceOwnerRecord,
  type NamespaceOwners,
  type ProfileKind,
  type ReservedNamespacePreset,
} from './namespace/NamespaceLock.js';
export {
  ErrorMapper,
  PLUGIN_LOCAL_ERROR_CODES,
  mapCallToolError,
  mapPluginError,
  mapPluginErrorCode,
  mapPluginErrorEnvelope,
  parsePluginErrorEnvelope,
  type CallToolErrorResult,
  type MappedPluginErrorCode,
  type PluginErrorContext,
  type PluginErrorEnvelope,
  type PluginLocalErrorCode,
} from './error-mapper/ErrorMapper.js';
export type {
  CallOptions,
  CallProgress,
  PluginSession,
  ProcessLauncher,
  ToolDescriptor,
  ToolResult,
} from './shapes/PluginSession.js';
export { DEFAULT_MAX_FRAME_BYTES, LineReader, type LineReaderHandlers } from './framing/LineReader.js';
export {
  DEFAULT_NDJSON_CALL_TIMEOUT_MS,
  NdjsonRpcSession,
  type NdjsonRpcSessionOptions,
} from './shapes/ndjson-rpc/NdjsonRpcSession.js';
export {
  NDJSON_PROTOCOL_VERSION,
  type NdjsonErrorObject,
  type NdjsonRequest,
  type NdjsonRequestId,
  type NdjsonResponse,
} from './shapes/ndjson-rpc/wire.js';
export {
  DEFAULT_HANDSHAKE_TIMEOUTS,
  HandshakeSession,
  type HandshakeSessionOptions,
  type HandshakeTimeouts,
} from './shapes/handshake/HandshakeSession.js';
export {
  HANDSHAKE_PROTOCOL_VERSION,
  type HandshakeManifest,
  type PluginError,
  type PluginHandshakeRequest,
  type PluginHandshakeResponse,
  type PluginRequest,
  type PluginResponse,
} from './shapes/handshake/wire.js';
export {
  openPackageSource,
  type PackageSourceKind,
  type PackageSourceOptions,
  type StagedPackage,
} from './installer/openPackageSource.js';
export { setExecutableMode } from './installer/setExecutableMode.js';
export { DEFAULT_PACKAGE_LIMITS, type PackageLimits } from './installer/limits.js';
export { parseChecksum, type PackageDigest } from './installer/checksum.js';
export { validateEntryName, type EntryNameRefusal, type SafeEntryName } from './installer/entryName.js';
export type { ArchiveRefusalReason, EntryNameRefusalReason } from './installer/refusal.js';
export {
  MANIFEST_FILE_NAMES,
  PACKAGE_MANIFEST_NAMES,
  type PackageManifestName,
  ManifestValidator,
  PRESET_SHAPES,
  findManifest,
  formFromFileName,
  formFromJsonDocument,
  type ManifestPreset,
  type ManifestReport,
  type ManifestValidatorCreateOptions,
  type ManifestValidatorOptions,
  type ValidateCallOptions,
  type ValidateFileOptions,
} from './manifest/ManifestValidator.js';
export {
  SUPPORTED_MANIFEST_SCHEMA_VERSION,
  checkCredentialDescriptors,
  checkNamespaceOwnerPresence,
  checkSchemaVersionPlacement,
  checkShapeGate,
  checkStripNullsSafety,
  pluginIdFromOpenDiscoveryName,
  type OutputProfileResolver,
  type ShapeGateOptions,
  type TrustOptions,
} from './manifest/checks.js';
export {
  SERVED_REF_GRAMMAR,
  checkSchemaRefGrammar,
  checkSchemaRefs,
  jcsDigest,
  schemaRefProblem,
  type SchemaBundleReader,
  type SchemaRefCheckOptions,
  type SchemaRefOutcome,
} from './manifest/schemaRefs.js';
export { checkCapabilityHygiene, validateHandshakeManifest } from './manifest/handshake.js';
export { CHECK_STAGES, type CheckStage, type Violation } from './manifest/violations.js';
export {
  RUNNABLE_SHAPES,
  type BackendKind,
  type CanarySpec,
  type ConfirmationPolicy,
  type CredentialDescriptor,
  type DeclaredCapabilities,
  type DeclaredRegistrations,
  type ManifestForm,
  type ManifestRequirements,
  type ManifestShape,
  type ManifestTool,
  type NormalizedManifest,
  type OutputProfileFacts,
  type PackageSpec,
  type PermissionHint,
  type PluginGrant,
  type PluginShape,
  type RatePolicy,
  type ResolvedSchema,
  type RiskClass,
} from './manifest/model.js';
export { spawnPluginProcess, trustedCommand, type PlainSpawnRequest } from './process/spawnPluginProcess.js';
export { DEFAULT_STDIN_GRACE_MS, DEFAULT_TERM_GRACE_MS, type LifecycleOptions } from './process/ChildPluginProcess.js';
export { DEFAULT_STDERR_LINE_MAX_BYTES, DEFAULT_STDERR_RING_BYTES } from './process/StderrRing.js';
export type { VerifiedExecutable } from './process/VerifiedExecutable.js';
export {
  DEFAULT_PLUGIN_MEMORY_LIMIT_BYTES,
  SandboxSpawner,
  type EnforcedPolicy,
  type SandboxPolicyRequest,
  type SandboxSpawnRequest,
  type SandboxSpawnerOptions,
} from './sandbox/SandboxSpawner.js';
export { resolveWriteDir, writeDirComponents } from './sandbox/writeDir.js';
export { openPluginDirectories, pluginDirectoryPaths, type OpenedDirectory, type PluginDirectories, type PluginDirectoryRequest } from './sandbox/pluginDirectories.js';
export { DEFAULT_PLUGIN_UID_RANGE, pluginIdentity, type PluginIdentity, type PluginUidRange } from './sandbox/pluginIdentity.js';
export { PLUGIN_SYSTEM_PATH, pluginSearchPath } from './env/pluginPath.js';
export { DEFAULT_SECRET_PATHS } from './sandbox/secretLocations.js';
export { nodeRuntimePaths, type SandboxBackendName } from './sandbox/backends.js';
export type { SandboxUnsupportedCause } from './sandbox/probe.js';
export { DEFAULT_TREE_LIMITS, type EnforcedTreeLimits, type TreeLimitOverride } from './sandbox/treeLimits.js';
export type { TreeLimits } from './sandbox/controlGroups.js';
export {
  CaptureServer,
  CapturedHandle,
  type CapturedCallback,
  type CapturedPrompt,
  type CapturedPromptConfig,
  type CapturedRegistration,
  type CapturedResource,
  type CapturedTool,
  type CapturedToolConfig,
  type LiveHandle,
  type PluginRegistrar,
  type ResourceTemplateLike,
} from './shapes/esm/CaptureServer.js';
export {
  loadInProcess,
  loadPlugins,
  type EsmInProcessOptions,
  type EsmLoadReport,
  type EsmPluginSource,
} from './shapes/esm/loadPlugins.js';
export { EsmPlugin, pluginsOn, type EsmPluginContext, type EsmReloadResult } from './shapes/esm/EsmPlugin.js';
export type {
  EsmFailedEntry,
  EsmLoadStats,
  EsmLoadSummary,
  EsmLoadTimings,
  EsmLoadedEntry,
  EsmSkipReason,
  EsmSkippedEntry,
} from './shapes/esm/EsmLoadSummary.js';
export {
  DEFAULT_ESM_LOADER_FLAGS,
  ESM_LOADER_ENV_NAMES,
  esmLoaderOptionsFromEnv,
  type EsmLoaderFlags,
} from './shapes/esm/EsmLoaderOptions.js';
export { orderByDependencies, type DependencyNode, type DependencyOrder } from './shapes/esm/dependencyOrder.js';
export { ESM_RUNNER_FILE, esmRunnerCommand, type EsmRunnerCommandOptions } from './shapes/esm/esmRunnerCommand.js';
export { EsmSession } from './shapes/esm/EsmSession.js';
export {
  ESM_RUNNER_CODES,
  ESM_RUNNER_LOAD_FAILED_EXIT,
  esmRunnerFailure,
  formatRunnerReport,
  parseRunnerReport,
  type EsmRunnerReport,
} from './shapes/esm/runnerDiagnostic.js';
export {
  DEFAULT_RELOAD_DEBOUNCE_MS,
  watchPlugin,
  type EsmReloadEvent,
  type PluginWatcher,
  type WatchPluginOptions,
} from './shapes/esm/watchPlugin.js';
export { prepareServerForPlugins } from './shapes/esm/prepareServer.js';
export { discoverEsmPlugins } from './shapes/esm/discoverEsmPlugins.js';
export {
  DEFAULT_CREATE_PLUGIN_TIMEOUT_MS,
  type PhaseTimes,
  type PreflightOutcome,
  type PreflightSettings,
} from './shapes/esm/preflight.js';
export type { LiveRegistration, RegistrationCounts } from './shapes/esm/replay.js';
export { TOOL_NAME_PATTERN, type InvalidTool } from './shapes/esm/validateTools.js';
export type { CapabilityKind, CapabilityMismatch } from './shapes/esm/reconcile.js';
export type { ResolvedEntry } from './shapes/esm/entry.js';
export { ESM_MANIFEST_FILE } from './shapes/esm/manifestFile.js';
export { ExecutableBinding } from './binding/bindingModule.js';
export {
  bindExecutable,
  verifyExecutableBinding,
  type BindExecutableOptions,
  type ExecutableBindingRecord,
  type VerifyExecutableOptions,
} from './binding/ExecutableBinding.js';
export type { FileIdentity, InterpreterKind, InterpreterPin } from './binding/interpreter.js';
export {
  PACKAGE_TREE_LIST_NAME,
  pinPackageTree,
  verifyPackageTree,
  type PackageTreeCheck,
  type PackageTreePin,
  type TreeChange,
} from './binding/packageTree.js';
export type { NodeMainLoading } from './binding/nodeMain.js';
export type { UntrustedReason } from './binding/untrusted.js';
export {
  CatalogStore,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_STALE_LOCK_MS,
  PROFILE_LOCK_FILE,
  type CatalogMutator,
  type CatalogStoreOptions,
} from './catalog/CatalogStore.js';
export {
  listPlugins,
  lookupPlugin,
  putPlugin,
  removePlugin,
  updatePluginState,
  type InstalledPlugin,
  type PluginRecords,
} from './catalog/catalogContents.js';
export {
  EMPTY_CONTENTS,
  PLUGINS_LOCK_SCHEMA_VERSION,
  PLUGIN_CATALOG_SCHEMA_VERSION,
  PLUGIN_STATE_SCHEMA_VERSION,
  type CanaryState,
  type CatalogContents,
  type CatalogSnapshot,
  type CatalogVariant,
  type GenerationStamp,
  type LockedPlugin,
  type NamespaceOwnerEntry,
  type PackageSource,
  type PluginCatalogFile,
  type PluginDescriptor,
  type PluginStateFile,
  type PluginStateRecord,
  type PluginStatus,
  type PluginsLockFile,
} from './catalog/catalogTypes.js';
export {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  PluginHost,
  type CanaryOptions,
  type CanaryOutcome,
  type ConfirmationCallback,
  type ConfirmationRequest,
  type HostCallOptions,
  type HostInspectOptions,
  type HostInstallOptions,
  type InstallOutcome,
  type InventoryResource,
  type InventoryResourceDescriptors,
  type PluginHostOptions,
  type RemoveOptions,
  type SetupOutcome,
} from './host/PluginHost.js';
export type { CredentialView, GrantedCapabilities, OperationView, PluginInfo, PluginRow } from './host/inventory.js';
export { Installer, type InstallInspection, type InstallOptions, type InstallResult, type InstallerOptions, type PackageInstallChoices } from './installer/Installer.js';
export type { CollectedLeftovers } from './installer/installLeftovers.js';
export { ProfileLayout, defaultProfileDir, type ProfileLocation } from './profile/ProfileLayout.js';
export { FileSecretStore, type SecretStore } from './secrets/SecretStore.js';
export {
  CLEAR_CRASH_STATE,
  CRASH_BACKOFF_SCHEDULE_MS,
  admitStart,
  recordFailure,
  type CrashState,
} from './host/CrashPolicy.js';
export { effectiveStatus, type InventoryStatus, type StatusConditions } from './host/inventoryStatus.js';
export { resolveRelativeDates } from './host/relativeDates.js';
export {
  diagnosticsChannelName,
  type HostEventListener,
  type HostEventMap,
  type HostEventName,
  type HostEventSubscriptions,
} from './events/HostEvents.js';
export {
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  DEFAULT_MCP_CLIENT_INFO,
  DEFAULT_MCP_MAX_IN_FLIGHT,
  DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS,
  DEFAULT_MCP_STARTUP_TIMEOUT_MS,
  McpSession,
  type McpSessionOptions,
  type McpSessionStats,
} from './shapes/mcp/McpSession.js';
export type { McpToolResult, McpToolsChange, StdoutNoisePolicy } from './shapes/mcp/McpConnection.js';
export { PluginProcessTransport, type PluginProcessTransportOptions } from './shapes/mcp/PluginProcessTransport.js';
export {
  ESM_ENTRY_EXTENSIONS,
  bindModuleEntry,
  verifyModuleEntry,
  type BindModuleEntryOptions,
  type VerifiedModuleEntry,
} from './binding/ModuleEntryBinding.js';
