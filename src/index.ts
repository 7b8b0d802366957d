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
export type { ExitInfo, PluginProcess, StopOptions } from './process/PluginProcess.js';
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
