/**
 * The running sessions of a host's plugins: one per plugin, started on the
 * first call, stopped when idle, on a failure, on retirement or on close.
 */
import { err, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import type { ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { HostError } from '../errors/HostError.js';
import type { HostEvents } from '../events/HostEvents.js';
import type { Clock, Logger, Random } from '../ports/ports.js';
import { RuntimeDrains, type RetireReason } from './drain.js';
import { closedError } from './hostCatalog.js';
import type { HostConfig } from './hostConfig.js';
import type { PluginLauncher } from './launcher.js';
import { PluginRuntime } from './PluginRuntime.js';
import { protocolAdapter, type ProtocolAdapter } from './protocolAdapters.js';
import type { ClientRequestReport } from '../shapes/mcp/clientRequests.js';
import type { McpPluginNotice } from '../shapes/mcp/McpSurface.js';
import { emitNotice } from './mcpSurface.js';
import type { ToolListRecords } from './toolListRecords.js';
import type { EnforcedPolicy } from '../sandbox/SandboxSpawner.js';
import { withUnsetEnvHint } from './startEnvHints.js';

/** What a runtime was started from: the binding its launcher only ever starts, and its shape's adapter. */
export interface RuntimeOrigin {
  readonly binding: ExecutableBindingRecord;
  readonly adapter: ProtocolAdapter;
}

/** Whether two bindings are the same install: every install or upgrade publishes a fresh install root. */
function sameInstall(a: ExecutableBindingRecord | undefined, b: ExecutableBindingRecord): boolean {
  return a !== undefined && a.install_root === b.install_root && a.executable_sha256 === b.executable_sha256;
}

/** What the runtimes are built with. */
export interface RuntimeParts {
  readonly launcher: PluginLauncher;
  readonly config: HostConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly random: Random;
  readonly events: HostEvents;
  readonly isClosed: () => boolean;
  /** Told of each new session before its first use, so it can take over what the host set on the plugin's earlier sessions. */
  readonly onSessionCreated?: (pluginId: string, runtime: PluginRuntime) => void;
  /** Told when a session's start failed after every caller waiting for it left: a failure no call reports. */
  readonly onUnseenStartFailure?: (pluginId: string, runtime: PluginRuntime, failure: HostError) => void;
  /** The tool lists verified at earlier starts, which let a later cold start of the same code call before it lists. */
  readonly toolLists?: ToolListRecords;
}

/** The host's plugin sessions by plugin id, and the ones draining after a remove or an upgrade. */
export class PluginRuntimes {
  readonly #parts: RuntimeParts;
  readonly #running = new Map<string, PluginRuntime>();
  readonly #origins = new WeakMap<PluginRuntime, RuntimeOrigin>();
  readonly #drains = new RuntimeDrains();

  constructor(parts: RuntimeParts) {
    this.#parts = parts;
  }

  /** The sandbox a launch of `plugin` gets, as `info()` reports it (for the hint of a failure on a path it does not show). */
  sandboxOf(plugin: InstalledPlugin): EnforcedPolicy | null {
    return this.#parts.launcher.enforcedPolicy(plugin);
  }

  /**
   * `failure` diagnosed against the plugin's latest launch: a failed start
   * while granted env names were unset names them (`details.unset_env`, a hint).
   */
  withStartEnv(pluginId: string, failure: HostError): HostError {
    return withUnsetEnvHint(failure, pluginId, this.#parts.launcher.unsetEnvOf(pluginId));
  }

  /** The running session of `plugin`, started (lazily: its process starts with the first call) when there is none. */
  take(plugin: InstalledPlugin): Result<PluginRuntime, HostError> {
    if (this.#parts.isClosed()) return err(closedError());
    const id = plugin.plugin_id;
    const retiring = this.#drains.refusal(id);
    if (retiring !== undefined) return err(retiring);
    const existing = this.#running.get(id);
    if (existing !== undefined && !existing.closed) {
      if (sameInstall(this.#origins.get(existing)?.binding, plugin.lock.binding)) return ok(existing);
      // The snapshot already names another install of the plugin (an upgrade published by another process, on a host
      // without hotReload, whose catalog watch would have retired this session when the snapshot moved): a call
      // checked against the new version must not run on the old code, so the old session drains and this call starts the new one.
      void this.retire(id, 'upgraded', this.#parts.config.drainTimeoutMs);
      this.release(id);
    }
    const adapter = protocolAdapter(plugin);
    if (adapter.isErr()) return err(adapter.error);
    const { launcher, config, clock, logger, random, events } = this.#parts;
    const launch = launcher.launcherFor(plugin, adapter.value);
    const onStdoutNoise = (line: string, suppressed?: number): void =>
      events.emit('stdout', { plugin_id: id, line: config.knownSecrets.redactor.redact(line), ...(suppressed === undefined ? {} : { suppressed }) });
    const onNotice = (notice: McpPluginNotice): void => emitNotice(events, id, notice, config.knownSecrets.redactor);
    const onUnseenStartFailure = (failure: HostError): void => this.#parts.onUnseenStartFailure?.(id, runtime, this.withStartEnv(id, failure));
    const onClientRequest = (report: ClientRequestReport): void => events.emit('client_request', { plugin_id: id, ...report });
    const toolLists = this.#parts.toolLists;
    const session = adapter.value.createSession({
      plugin,
      launch,
      config,
      clock,
      logger,
      random,
      onStdoutNoise,
      onNotice,
      onUnseenStartFailure,
      onClientRequest,
      ...(toolLists === undefined ? {} : { toolLists }),
    });
    if (session.isErr()) return err(session.error);
    const runtime = new PluginRuntime(session.value, clock, config.idleTimeoutMs, () => {
      if (this.#running.get(id) === runtime) this.#running.delete(id);
      logger.debug({ plugin_id: id }, 'idle plugin stopped');
    });
    this.#running.set(id, runtime);
    this.#origins.set(runtime, { binding: plugin.lock.binding, adapter: adapter.value });
    this.#parts.onSessionCreated?.(id, runtime);
    return ok(runtime);
  }

  /** The plugin's running session, when it has one (none is started). */
  running(pluginId: string): PluginRuntime | undefined {
    const runtime = this.#running.get(pluginId);
    return runtime === undefined || runtime.closed ? undefined : runtime;
  }

  /** What `runtime` was started from. */
  originOf(runtime: PluginRuntime): RuntimeOrigin | undefined {
    return this.#origins.get(runtime);
  }

  /** Stops the plugin's running session, or only `runtime` when given (a newer session is left alone). */
  stop(pluginId: string, runtime?: PluginRuntime): ResultAsync<void, HostError> {
    const current = this.#running.get(pluginId);
    if (current === undefined || (runtime !== undefined && current !== runtime)) {
      return runtime === undefined ? okAsync(undefined) : ResultAsync.fromSafePromise(runtime.close());
    }
    this.#running.delete(pluginId);
    return ResultAsync.fromSafePromise(current.close());
  }

  /**
   * Stops the plugin's session for a remove or an upgrade: no new call
   * starts it meanwhile (they fail with PLUGIN_CALL_INTERRUPTED), the calls
   * in flight get `drainTimeoutMs` to finish, and those still running then
   * fail with PLUGIN_CALL_INTERRUPTED rather than HOST_CLOSED. With
   * `keepRefusing` new calls stay refused until {@link PluginRuntimes.release}.
   */
  retire(pluginId: string, reason: RetireReason, drainMs: number, options: { readonly keepRefusing?: boolean } = {}): ResultAsync<void, HostError> {
    const runtime = this.#running.get(pluginId);
    if (runtime !== undefined) this.#running.delete(pluginId);
    return ResultAsync.fromSafePromise(this.#drains.retire(pluginId, runtime, reason, drainMs, options.keepRefusing === true));
  }

  /** Lets calls start a retired plugin again. */
  release(pluginId: string): void {
    this.#drains.release(pluginId);
  }

  /** Stops every session, the draining ones too. */
  async closeAll(): Promise<void> {
    const runtimes = [...this.#running.values(), ...this.#drains.draining];
    this.#running.clear();
    await Promise.all(runtimes.map((rt) => rt.close()));
  }
}
