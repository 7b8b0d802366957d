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
