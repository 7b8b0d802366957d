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
export type {
  CallOptions,
  CallProgress,
  PluginSession,
  PluginShape,
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
