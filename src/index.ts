/**
 * mcp-plugin-host: install, verify, sandbox, run and supervise third-party
 * subprocess plugins from a Node application.
 *
 * The root entry holds PluginHost and its types, HostError and the code
 * registry, the design card's modules under their card names, the ports a
 * host may replace, and the in-process loader of `esm-module` plugins.
 * Everything else (protocol sessions, framing, catalog and installer
 * helpers) is internal.
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
export { ioError, type IoErrorDetails } from './errors/ioError.js';
export {
  silentLogger,
  systemClock,
  systemRandom,
  type Clock,
  type LogLevel,
  type Logger,
  type Random,
} from './ports/ports.js';
export {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  PluginHost,
  type CanaryOptions,
  type CanaryOutcome,
  type ClientRequestContext,
  type ClientRequestHandlers,
  type CompletionReference,
  type CompletionRequest,
  type ConfirmationCallback,
  type ConfirmationRequest,
  type ElicitationCallback,
  type HostCallOptions,
  type HostInspectOptions,
  type HostInstallOptions,
  type InstallOutcome,
  type InventoryResource,
  type InventoryResourceDescriptors,
  type NdjsonCrashPolicy,
  type NdjsonMalformedPolicy,
  type PluginHostOptions,
  type PluginRequestOptions,
  type PluginRunOptions,
  type QuarantineOptions,
  type RemoveOptions,
  type RootsCallback,
  type SamplingCallback,
  type SetupOutcome,
  type StdoutPolicy,
} from './host/PluginHost.js';
export type { CredentialView, GrantedCapabilities, OperationView, PluginInfo, PluginRow, StartRefusal } from './host/inventory.js';
export { serveGateway, type GatewayHandle, type GatewayOptions, type GatewayStdioOptions } from './gateway/serveGateway.js';
export type { GatewayClientPolicy } from './gateway/clientPolicy.js';
export type { GatewayHttpClient, GatewayHttpOptions } from './gateway/httpListener.js';
export {
  checkGatewayConfig,
  readGatewayConfig,
  resolveGatewayConfig,
  type GatewayConfig,
  type GatewayConfigAudit,
  type GatewayConfigClient,
  type GatewayConfigHttp,
  type GatewayTokenSource,
  type ResolvedGatewayConfig,
} from './gateway/gatewayConfig.js';
export type { GatewayErrorPayload } from './gateway/toolResults.js';
export type { InspectedPackage, InstallInspection, PackageInstallChoices } from './installer/Installer.js';
export type { AddedCapability, ToolRisk, ToolRiskChange, TrustCallback, TrustRequest } from './installer/trust.js';
export type { PackageChange, RegistryChange } from './installer/trustRegistry.js';
export { KeychainSecretStore, PreferredSecretStore, type KeychainSecretStoreOptions } from './secrets/KeychainSecretStore.js';
export type { PackageSourceKind } from './installer/openPackageSource.js';
export type { PackageLimits } from './installer/limits.js';
export type { NpmSettings } from './installer/npmFetch.js';
export type { WrapOptions, WrappedServer } from './installer/wrapNpmSource.js';
export { inspectManifestFile, type InspectManifestFileOptions } from './installer/manifestHostChecks.js';
export type { InventoryStatus } from './host/inventoryStatus.js';
export type { HostEventListener, HostEventMap, HostEventName, HostEventSubscriptions } from './events/HostEvents.js';
export type { AuditCallRecord, AuditConnectionRecord, AuditGapRecord, AuditRecord, AuditSink, CallerIdentity } from './audit/auditRecord.js';
export { JsonlAuditSink, type AuditFsyncPolicy, type JsonlAuditSinkOptions } from './audit/JsonlAuditSink.js';
export type { HostAuditOptions } from './audit/callAudit.js';
export { TELEMETRY_ATTRIBUTES, TELEMETRY_NAMES, TELEMETRY_SCOPE, type HostTelemetryOptions } from './observability/telemetry.js';
export type { CallOptions, CallPresence, CallProgress, CallResult, McpCallResult, ProtocolCallResult, ToolDescriptor, ToolResult } from './shapes/PluginSession.js';
export type { CallClientRequests } from './shapes/mcp/clientRequests.js';
export {
  applyOutputProfile,
  BUILTIN_OUTPUT_PROFILES,
  checkProfileDefinitions,
  effectiveProfile,
  isLossyProfile,
  type EffectiveOutputProfile,
  type OutputProfile,
  type ProfileOutcome,
  type ProfileProblem,
  type ProfileRecovery,
} from './manifest/outputProfiles.js';
export { parseProfileFile, readProfileFile, runProfileTests, shapeSample, type ProfileFile, type ProfileTest, type ProfileTestResult } from './host/profileFiles.js';
export type { HostOutputProfiles } from './host/resultShaping.js';
export { FileSecretStore, type SecretStore } from './secrets/SecretStore.js';
export {
  ManifestValidator,
  PACKAGE_MANIFEST_NAMES,
  type ManifestPreset,
  type ManifestReport,
  type ManifestValidatorCreateOptions,
  type ManifestValidatorOptions,
  type PackageManifestName,
  type ValidateCallOptions,
  type ValidateFileOptions,
} from './manifest/ManifestValidator.js';
export type { SchemaBundleReader } from './manifest/schemaRefs.js';
export type { OutputProfileResolver } from './manifest/checks.js';
export { CHECK_STAGES, type CheckStage, type Violation } from './manifest/violations.js';
export type {
  AuthComponent,
  AuthStrategy,
  BackendKind,
  CanarySpec,
  ClientRequestKind,
  ConfirmationPolicy,
  CredentialDescriptor,
  DeclaredCapabilities,
  DeclaredRegistrations,
  ManifestForm,
  ManifestLaunch,
  ManifestRequirements,
  ManifestShape,
  ManifestTool,
  NormalizedManifest,
  OutputProfileFacts,
  PackageSpec,
  PermissionHint,
  PluginGrant,
  PluginShape,
  RatePolicy,
  ResolvedSchema,
  RiskClass,
  SettingValue,
  TokenBudgetException,
} from './manifest/model.js';
export {
  EnvDenylist,
  type BuildEnvInput,
  type EnvDenyRule,
  type EnvDenylistOptions,
  type EnvDenylistPreset,
  type EnvNameField,
} from './env/EnvDenylist.js';
export {
  NamespaceLock,
  type NamespaceClaim,
  type NamespaceLockOptions,
  type NamespaceOwnerRecord,
  type NamespaceOwners,
  type ProfileKind,
  type ReservedNamespacePreset,
} from './namespace/NamespaceLock.js';
export { ExecutableBinding } from './binding/bindingModule.js';
export type { BindExecutableOptions, ExecutableBindingRecord, VerifyExecutableOptions } from './binding/ExecutableBinding.js';
export type { BindModuleEntryOptions, VerifiedModuleEntry } from './binding/ModuleEntryBinding.js';
export type { FileIdentity, InterpreterKind, InterpreterPin } from './binding/interpreter.js';
export type { NodeMainLoading } from './binding/nodeMain.js';
export type { PackageTreePin } from './binding/packageTree.js';
export type { PluginCommand, UnverifiedCommand, VerifiedExecutable } from './process/VerifiedExecutable.js';
export { unverifiedCommand } from './process/spawnPluginProcess.js';
export { CatalogStore, type CatalogMutator, type CatalogStoreOptions, type CatalogTransactionOptions } from './catalog/CatalogStore.js';
export type { InstalledPlugin } from './catalog/catalogContents.js';
export type {
  AcceptedTool,
  CatalogContents,
  CatalogSnapshot,
  CanaryState,
  CatalogVariant,
  LockedPlugin,
  NamespaceOwnerEntry,
  PackageSource,
  PluginDescriptor,
  PluginStateRecord,
  PluginStatus,
} from './catalog/catalogTypes.js';
export {
  ErrorMapper,
  type CallToolErrorResult,
  type MappedPluginErrorCode,
  type McpToolResultValue,
  type PluginErrorContext,
  type PluginErrorEnvelope,
} from './error-mapper/ErrorMapper.js';
export {
  SandboxSpawner,
  type EnforcedPolicy,
  type SandboxPolicyRequest,
  type SandboxSpawnRequest,
  type SandboxSpawnerOptions,
} from './sandbox/SandboxSpawner.js';
export { SANDBOX_BACKEND_CHOICES, type SandboxBackendChoice } from './sandbox/backendChoice.js';
export { DEFAULT_SECRET_PATHS } from './sandbox/secretLocations.js';
export type { SandboxBackendName } from './sandbox/backends.js';
export type { OpenedDirectory, PluginDirectories } from './sandbox/pluginDirectories.js';
export type { PluginIdentity, PluginUidRange } from './sandbox/pluginIdentity.js';
export type { CpuQuota, EnforcedTreeLimits, TreeLimitOverride } from './sandbox/treeLimits.js';
export type { EgressEvent, EgressRefusalReason, EgressResolver } from './egress/EgressProxy.js';
export type { DestinationRefusal } from './egress/destinations.js';
export type { RefusedAddressKind } from './egress/addresses.js';
export type { ExitInfo, PluginProcess, ResourceLimitHit, StopOptions, TreeLimitMechanism } from './process/PluginProcess.js';
export type { LifecycleOptions } from './process/ChildPluginProcess.js';
export {
  loadInProcess,
  loadPlugins,
  type EsmInProcessOptions,
  type EsmLoadReport,
  type EsmPluginSource,
} from './shapes/esm/loadPlugins.js';
export { EsmPlugin, type EsmReloadResult } from './shapes/esm/EsmPlugin.js';
export type {
  EsmFailedEntry,
  EsmLoadStats,
  EsmLoadSummary,
  EsmLoadTimings,
  EsmLoadedEntry,
  EsmSkipReason,
  EsmSkippedEntry,
} from './shapes/esm/EsmLoadSummary.js';
export type { PhaseTimes } from './shapes/esm/preflight.js';
export type { EsmToolUnderValidation, EsmToolValidator } from './shapes/esm/validateTools.js';
export type { CapturedToolConfig } from './shapes/esm/CaptureServer.js';
export type { ResolvedEntry } from './shapes/esm/entry.js';
export type { RegistrationCounts } from './shapes/esm/replay.js';
export { prepareServerForPlugins } from './shapes/esm/prepareServer.js';
export { discoverEsmPlugins } from './shapes/esm/discoverEsmPlugins.js';
export { esmLoaderOptionsFromEnv, type EsmHostLoaderOptions, type EsmLoaderFlags } from './shapes/esm/EsmLoaderOptions.js';
export { watchPlugin, type EsmReloadEvent, type PluginWatcher, type WatchPluginOptions } from './shapes/esm/watchPlugin.js';
