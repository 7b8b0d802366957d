import { mkdir } from 'node:fs/promises';
import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import { verifyExecutableBinding } from '../binding/ExecutableBinding.js';
import { lookupPlugin, listPlugins, updatePluginState, type InstalledPlugin } from '../catalog/catalogContents.js';
import { CatalogStore } from '../catalog/CatalogStore.js';
import type { CatalogSnapshot, CatalogVariant, PluginStateRecord } from '../catalog/catalogTypes.js';
import { resolveRelativeDates } from '../canary/relativeDates.js';
import { EnvDenylist, type EnvDenylistOptions } from '../env/EnvDenylist.js';
import { mapCallToolError, type CallToolErrorResult } from '../error-mapper/ErrorMapper.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { HostErrorCode } from '../errors/registry.js';
import { HostEvents } from '../events/HostEvents.js';
import { Installer, type InstallOptions } from '../installer/Installer.js';
import type { PackageLimits } from '../installer/limits.js';
import type { ManifestPreset } from '../manifest/ManifestValidator.js';
import type { ManifestShape, RiskClass } from '../manifest/model.js';
import { NamespaceLock, type ProfileKind } from '../namespace/NamespaceLock.js';
import { silentLogger, systemClock, systemRandom, type Clock, type Logger, type Random } from '../ports/ports.js';
import { defaultProfileDir, ProfileLayout } from '../profile/ProfileLayout.js';
import { resolveWriteDir } from '../sandbox/writeDir.js';
import { SandboxSpawner, type SandboxSpawnerOptions } from '../sandbox/SandboxSpawner.js';
import { FileSecretStore, type SecretStore } from '../secrets/SecretStore.js';
import { HandshakeSession } from '../shapes/handshake/HandshakeSession.js';
import { McpSession } from '../shapes/mcp/McpSession.js';
import { NdjsonRpcSession } from '../shapes/ndjson-rpc/NdjsonRpcSession.js';
import type { CallProgress, PluginSession, ProcessLauncher, ToolResult } from '../shapes/PluginSession.js';
import { admitStart, CLEAR_CRASH_STATE, CRASH_BACKOFF_SCHEDULE_MS, recordFailure } from '../supervisor/CrashPolicy.js';
import { pluginInfo, pluginRow, type PluginInfo, type PluginRow } from './inventory.js';
import { crashStateOf, statusOf, withCrashState } from './pluginState.js';
import { PluginRuntime } from './PluginRuntime.js';

/** Default idle time before a running plugin is stopped: 5 minutes. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** Options of {@link PluginHost.open}. */
export interface PluginHostOptions {
  /** The host application's name; the default profile lives in `$XDG_DATA_HOME/<appName>/<profile>`. Default `mcp-plugin-host`. */
  readonly appName?: string;
  /** The profile name. Default `default`. */
  readonly profile?: string;
  /** The profile directory, overriding the XDG default. */
  readonly profileDir?: string;
  /** `dev` accepts unchecked local directories, the namespace override and the unsandboxed mode. Default `standard`. */
  readonly profileKind?: ProfileKind;
  /**
   * `gum` reproduces the GUM contract exactly (only `mcp-plugin`, GUM_ env
   * prefixes, Google reserved namespaces); `neutral` runs every shape with the
   * base denylist. Default `neutral`.
   */
  readonly preset?: ManifestPreset;
  /** Sandbox options (bubblewrap path, secret paths, grace periods, the dev-only unsandboxed mode). */
  readonly sandbox?: SandboxSpawnerOptions;
  /** A ready spawner, replacing the one built from `sandbox`. */
  readonly spawner?: SandboxSpawner;
  /** Where plugin credentials live. Default a 0600 file store inside the profile. */
  readonly secretStore?: SecretStore;
  /** Extra env denylist rules on top of the preset's. */
  readonly envDenylist?: Omit<EnvDenylistOptions, 'preset'>;
  /** Extra reserved namespace prefixes on top of the preset's. */
  readonly reservedNamespaces?: readonly string[];
  /** Public keys whose package signatures are trusted. */
  readonly trustedKeys?: readonly string[];
  /** Refuse packages not signed by a trusted key. */
  readonly requireSignatures?: boolean;
  /** Archive limits. */
  readonly packageLimits?: Partial<PackageLimits>;
  /** The environment plugins' allowlisted variables are read from. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Per-call timeout without an answer (reset by progress where the protocol has it). Default 30 s. */
  readonly callTimeoutMs?: number;
  /** Per-call hard cap. Default 300 s. */
  readonly maxTotalTimeoutMs?: number;
  /** Calls in flight at one plugin at once. Default 16 (MCP) / 1 (ndjson-rpc, as its protocol says). */
  readonly maxInFlight?: number;
  /** Idle time before a running plugin is stopped. Default {@link DEFAULT_IDLE_TIMEOUT_MS}. */
  readonly idleTimeoutMs?: number;
  /** The crash backoff ladder. Default 30, 60, 120, 240, 480 s. */
  readonly backoffScheduleMs?: readonly number[];
  /** Capabilities the host grants each handshake-shape plugin (its allow-list), by plugin id. */
  readonly handshakeCapabilities?: Readonly<Record<string, readonly string[]>>;
  /** Approves `high_stakes_write` calls; without it they are refused. */
  readonly confirm?: ConfirmationCallback;
  /**
   * When a plugin installed through this host becomes callable: `next-open`
   * (the contract's restart semantics) or `immediate`. Default `next-open`.
   */
  readonly activation?: 'next-open' | 'immediate';
  /** Time source (tests run the quarantine schedule in milliseconds with a fake). */
  readonly clock?: Clock;
  /** Randomness for txids and install roots. */
  readonly random?: Random;
  /** Structured logs (pino-compatible). Default silent. */
  readonly logger?: Logger;
}

/** What a confirmation callback is asked. */
export interface ConfirmationRequest {
  /** The operation id. */
  readonly op_id: string;
  /** The plugin that would run it. */
  readonly plugin_id: string;
  /** The tool's risk class. */
  readonly risk_class: RiskClass;
  /** The arguments it would be called with. */
  readonly args: unknown;
}

/** Approves or refuses a `high_stakes_write` call. */
export type ConfirmationCallback = (request: ConfirmationRequest) => boolean | Promise<boolean>;

/** Per-call options of {@link PluginHost.call}. */
export interface HostCallOptions {
  /** The highest risk class the caller accepts. Default `read`. */
  readonly maxRisk?: RiskClass;
  /** Overrides the host's confirmation callback for this call. */
  readonly confirm?: ConfirmationCallback;
  /** Time without an answer, in ms. */
  readonly timeoutMs?: number;
  /** Hard cap on the call, in ms. */
  readonly maxTotalTimeoutMs?: number;
  /** Cancels the call. */
  readonly signal?: AbortSignal;
  /** Receives progress. */
  readonly onProgress?: (progress: CallProgress) => void;
}

/** The result of a canary run. */
export interface CanaryOutcome {
  /** The plugin. */
  readonly plugin_id: string;
  /** `passive`: start and list tools; `live`: call the declared canary tool. */
  readonly mode: 'passive' | 'live';
  /** What happened. */
  readonly status: 'passed' | 'failed' | 'skipped';
  /** Why it failed or was skipped. */
  readonly error?: HostError;
}

/** What {@link PluginHost.install} returns. */
export interface InstallOutcome {
  /** The installed plugin's inventory view. */
  readonly plugin: PluginInfo;
  /** The install-time canary, when the plugin declares one. */
  readonly canary?: CanaryOutcome;
}

/** Options of {@link PluginHost.install}. */
export interface HostInstallOptions extends Omit<InstallOptions, 'initialStatus'> {
  /** Run the declared canary right after the install (live when credentials are present). Default true. */
  readonly canary?: boolean;
}

/** Options of {@link PluginHost.canary}. */
export interface CanaryOptions {
  /** Call the canary tool (live) instead of only starting the plugin and listing its tools. Default false. */
  readonly live?: boolean;
  /** Arguments overriding the declared canary arguments. */
  readonly args?: Readonly<Record<string, unknown>>;
}

/** An MCP resource payload a host can serve for its inventory. */
export interface InventoryResource {
  /** The resource's URI. */
  readonly uri: string;
  /** Always `application/json`. */
  readonly mimeType: 'application/json';
  /** The JSON text. */
  readonly text: string;
}

const RISK_RANK: Readonly<Record<RiskClass, number>> = { read: 0, write: 1, destructive: 2 };

/** Failures that count toward quarantine: the plugin could not be started or broke its protocol. */
const QUARANTINE_CODES: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  'PLUGIN_SPAWN_FAILED',
  'PLUGIN_CRASHED',
  'PLUGIN_HANDSHAKE_FAILED',
  'PLUGIN_TOOLS_MISMATCH',
  'PLUGIN_INVALID_JSON',
  'PLUGIN_MALFORMED_RESPONSE',
  'PLUGIN_FRAME_TOO_LARGE',
  'PLUGIN_EXECUTABLE_UNTRUSTED',
  'PLUGIN_PROTOCOL_VERSION_MISMATCH',
]);

const OP_ID = /^plug\.([a-z][a-z0-9-]{0,63})\.(.+)$/;

interface ResolvedOperation {
  readonly plugin: InstalledPlugin;
  readonly variant: CatalogVariant;
}

/**
 * The facade a host application uses: open a profile, install, list,
 * inspect, call, supervise and remove plugins. Every operation returns a
 * typed `Result`; expected failures are `HostError`s with stable codes.
 *
 * Plugins start on their first call, stay alive between calls and stop after
 * an idle period. A plugin that fails to start or breaks its protocol is
 * quarantined on the contract's backoff ladder (30, 60, 120, 240, 480 s) and
 * then permanently until `unquarantine`; the state survives host restarts.
 */
export class PluginHost {
  /** Typed events (also published on `node:diagnostics_channel`). */
  readonly events = new HostEvents();
  readonly #o: PluginHostOptions;
  readonly #layout: ProfileLayout;
  readonly #store: CatalogStore;
  readonly #spawner: SandboxSpawner;
  readonly #secrets: SecretStore;
  readonly #env: EnvDenylist;
  readonly #installer: Installer;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #logger: Logger;
  readonly #activeAtOpen: Set<string>;
  readonly #runtimes = new Map<string, PluginRuntime>();
  #snapshot: CatalogSnapshot;
  #closed = false;
  #callSeq = 0;

  private constructor(
    options: PluginHostOptions,
    parts: {
      layout: ProfileLayout;
      store: CatalogStore;
      spawner: SandboxSpawner;
      env: EnvDenylist;
      namespaceLock: NamespaceLock;
      snapshot: CatalogSnapshot;
    },
  ) {
    this.#o = options;
    this.#layout = parts.layout;
    this.#store = parts.store;
    this.#spawner = parts.spawner;
    this.#env = parts.env;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#logger = options.logger ?? silentLogger;
    this.#secrets = options.secretStore ?? new FileSecretStore(parts.layout.root);
    this.#snapshot = parts.snapshot;
    this.#activeAtOpen = new Set(Object.keys(parts.snapshot.contents.plugins));
    this.#installer = new Installer({
      store: parts.store,
      layout: parts.layout,
      envDenylist: parts.env,
      namespaceLock: parts.namespaceLock,
      profileKind: options.profileKind ?? 'standard',
      preset: options.preset ?? 'neutral',
      clock: this.#clock,
      random: this.#random,
      ...(options.trustedKeys === undefined ? {} : { trustedKeys: options.trustedKeys }),
      ...(options.requireSignatures === undefined ? {} : { requireSignatures: options.requireSignatures }),
      ...(options.packageLimits === undefined ? {} : { limits: options.packageLimits }),
    });
  }

  /**
   * Opens a profile: its catalog (recovering a consistent generation after a
   * crash), the sandbox (probed for real once per process) and the secret
   * store. Plugins installed since the last open become active now.
   */
  static open(options: PluginHostOptions = {}): ResultAsync<PluginHost, HostError> {
    const preset = options.preset ?? 'neutral';
    const profile = options.profile ?? 'default';
    const profileDir =
      options.profileDir ?? defaultProfileDir({ appName: options.appName ?? 'mcp-plugin-host', profile, ...(options.env ? { env: options.env } : {}) });
    const layout = new ProfileLayout(profileDir);
    const env = EnvDenylist.create({ preset, ...options.envDenylist });
    if (env.isErr()) return errAsync(env.error);
    const namespaceLock = NamespaceLock.create({
      preset,
      profileKind: options.profileKind ?? 'standard',
      ...(options.reservedNamespaces === undefined ? {} : { reserved: options.reservedNamespaces }),
    });
    if (namespaceLock.isErr()) return errAsync(namespaceLock.error);
    const spawner: ResultAsync<SandboxSpawner, HostError> = options.spawner
      ? okAsync(options.spawner)
      : SandboxSpawner.create({
          profileKind: options.profileKind ?? 'standard',
          ...(options.logger ? { logger: options.logger } : {}),
          ...options.sandbox,
        });
    const clock = options.clock ?? systemClock;
    return spawner.andThen((sandbox) =>
      CatalogStore.open({
        profileDir: layout.root,
        profile,
        clock,
        ...(options.random ? { random: options.random } : {}),
      }).andThen((store) =>
        store
          .transaction((current) => {
            const now = new Date(clock.now()).toISOString();
            let next = current;
            for (const [id, row] of Object.entries(current.states)) {
              if (row.activated_at !== null) continue;
              next = updatePluginState(next, id, (r) => {
                const activated = { ...r, activated_at: now };
                return { ...activated, status: statusOf(activated, false) };
              });
            }
            return next;
          })
          .map(
            (snapshot) =>
              new PluginHost(options, { layout, store, spawner: sandbox, env: env.value, namespaceLock: namespaceLock.value, snapshot }),
          ),
      ),
    );
  }

  /** The profile directory this host serves. */
  get profileDir(): string {
    return this.#layout.root;
  }

  /** Installs (or upgrades) a plugin from a directory or a `.tgz`/`.zip` archive, then runs its canary. */
  install(source: string, options: HostInstallOptions = {}): ResultAsync<InstallOutcome, HostError> {
    if (this.#closed) return errAsync(closedError());
    const { canary: runCanary = true, ...installOptions } = options;
    return this.#installer
      .install(source, {
        ...installOptions,
        initialStatus: async (m) => ((await this.#missingCredentials(m.plugin_id, m.requirements.needs_user_creds)).length > 0 ? 'needs_configuration' : 'installed_pending_restart'),
      })
      .andThen((installed) => {
        const id = installed.plugin_id;
        return this.#markNeedsConfiguration(id, installed.state?.status === 'needs_configuration')
          .andThen(() => this.#stopRuntime(id))
          .andThen(() => {
            if ((this.#o.activation ?? 'next-open') === 'immediate') this.#activeAtOpen.add(id);
            const declared = installed.descriptor?.canary !== undefined;
            if (!runCanary || !declared) return okAsync<CanaryOutcome | undefined, HostError>(undefined);
            return this.canary(id, { live: true }).map((c): CanaryOutcome | undefined => c);
          })
          .andThen((canary) =>
            this.info(id).map((plugin): InstallOutcome => (canary === undefined ? { plugin } : { plugin, canary })),
          );
      });
  }

  /** Runs every install check on a package without installing it (what the CLI's `validate` prints). */
  inspect(source: string, options: Omit<InstallOptions, 'initialStatus'> = {}): ReturnType<Installer['inspect']> {
    return this.#installer.inspect(source, options);
  }

  /** The `plugins` inventory, sorted by name. */
  list(): ResultAsync<readonly PluginRow[], HostError> {
    return this.#refresh().map((snapshot) => listPlugins(snapshot).map((p) => pluginRow(p, this.#pending(p.plugin_id))));
  }

  /** The `plugin/{name}` view of one plugin. */
  info(pluginId: string): ResultAsync<PluginInfo, HostError> {
    return this.#refresh().andThen((snapshot) => {
      const plugin = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: pluginId });
      if (plugin === undefined) return err(notInstalled(pluginId));
      return ok(pluginInfo(plugin, this.#pending(pluginId), snapshot.install_generation, this.#enforcedPolicy(plugin)));
    });
  }

  /**
   * The inventory as MCP resource payloads: `<scheme>://plugins` and
   * `<scheme>://plugin/{name}`, where the scheme defaults to the app name.
   */
  resource(uri: string): ResultAsync<InventoryResource, HostError> {
    const scheme = this.#o.appName ?? 'mcp-plugin-host';
    const asResource = (value: unknown): InventoryResource => ({ uri, mimeType: 'application/json', text: JSON.stringify(value) });
    if (uri === `${scheme}://plugins`) return this.list().map((rows) => asResource({ plugins: rows }));
    const prefix = `${scheme}://plugin/`;
    if (uri.startsWith(prefix)) return this.info(decodeURIComponent(uri.slice(prefix.length))).map(asResource);
    return errAsync(hostError('VARIANT_NOT_FOUND', `no inventory resource at ${uri}`, { details: { uri } }));
  }

  /** Removes a plugin (install root and rows; its namespace owner stays recorded). Its data directory and secrets are kept. */
  remove(pluginId: string): ResultAsync<void, HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#stopRuntime(pluginId)
      .andThen(() => this.#installer.remove(pluginId))
      .andThen(() => this.#refresh().map(() => undefined));
  }

  /** Clears quarantine, restarts the plugin and runs a passive canary (start + tool list check). */
  reload(pluginId: string): ResultAsync<CanaryOutcome, HostError> {
    return this.unquarantine(pluginId).andThen(() => this.canary(pluginId, { live: false }));
  }

  /** Clears quarantine (backoff or permanent) without running anything. */
  unquarantine(pluginId: string): ResultAsync<void, HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#stopRuntime(pluginId).andThen(() =>
      this.#updateState(pluginId, (row) => withCrashState(row, CLEAR_CRASH_STATE)).map(() => {
        this.events.emit('quarantine', { plugin_id: pluginId, quarantined: false, permanent: false, retry_count: 0 });
      }),
    );
  }

  /**
   * Stores a plugin's credentials (keyed by the names in `needs_user_creds`)
   * and runs the live canary; success clears `needs_configuration`.
   */
  setup(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<CanaryOutcome, HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#plugin(pluginId).andThen((plugin) => {
      const needed = plugin.descriptor?.needs_user_creds ?? [];
      const unknown = Object.keys(values).filter((k) => !needed.includes(k));
      if (unknown.length > 0) {
        return errAsync(
          hostError('HOST_INVALID_OPTIONS', `plugin '${pluginId}' does not declare ${unknown.length} of the given credentials`, {
            details: { plugin_id: pluginId, undeclared_count: unknown.length },
          }),
        );
      }
      return this.#secrets
        .set(pluginId, values)
        .andThen(() => this.#stopRuntime(pluginId))
        .andThen(() => this.canary(pluginId, { live: true }));
    });
  }

  /**
   * Runs a plugin's canary. Passive: start it and check its tool list. Live:
   * call the declared canary tool (relative dates like `+7d` resolved). A
   * failure soft-quarantines the plugin; missing credentials skip the canary
   * and record `needs_configuration`; a pass clears a canary quarantine.
   */
  canary(pluginId: string, options: CanaryOptions = {}): ResultAsync<CanaryOutcome, HostError> {
    if (this.#closed) return errAsync(closedError());
    const mode = options.live === true ? 'live' : 'passive';
    return this.#plugin(pluginId).andThen((plugin) =>
      ResultAsync.fromSafePromise(this.#missingCredentials(pluginId, plugin.descriptor?.needs_user_creds ?? [])).andThen((missing) => {
        if (missing.length > 0) {
          return this.#recordCanary(pluginId, 'skipped', true).map(
            (): CanaryOutcome => ({
              plugin_id: pluginId,
              mode,
              status: 'skipped',
              error: hostError('PLUGIN_NEEDS_CONFIGURATION', `plugin '${pluginId}' is missing ${missing.length} credential(s); run setup`, {
                details: { plugin_id: pluginId, missing_aliases: this.#aliasesOf(plugin, missing) },
              }),
            }),
          );
        }
        const spec = plugin.descriptor?.canary;
        const run: ResultAsync<unknown, HostError> =
          mode === 'live' && spec !== undefined
            ? this.#dispatch(plugin, spec.tool, resolveRelativeDates(options.args ?? spec.arguments, this.#clock.now()), {}, `canary:${spec.tool}`)
            : this.#runtime(plugin).andThen((rt) => rt.session.listTools());
        return new ResultAsync(
          (async (): Promise<Result<CanaryOutcome, HostError>> => {
            const outcome = await run;
            if (outcome.isOk()) {
              const recorded = await this.#recordCanary(pluginId, 'passed', false);
              return recorded.map(() => ({ plugin_id: pluginId, mode, status: 'passed' as const }));
            }
            const failure = outcome.error;
            const recorded = await this.#recordCanary(pluginId, 'failed', false).andThen(() =>
              this.#quarantine(pluginId, failure, 'canary_failed'),
            );
            return recorded.map(() => ({ plugin_id: pluginId, mode, status: 'failed' as const, error: failure }));
          })(),
        );
      }),
    );
  }

  /**
   * Calls an operation, `plug.<plugin_id>.<tool>`. Refuses unknown,
   * pending, unconfigured, quarantined, too-risky and unconfirmed calls with
   * their codes. An MCP `isError` result comes back as the mapped host error
   * (RATE_LIMITED, AUTH_REQUIRED, SERVICE_DOWN, INVALID_ARGS).
   */
  call(opId: string, args: unknown, options: HostCallOptions = {}): ResultAsync<ToolResult, HostError> {
    if (this.#closed) return errAsync(closedError());
    const resolved = this.#resolve(opId);
    if (resolved.isErr()) return errAsync(resolved.error);
    const { plugin, variant } = resolved.value;
    const id = plugin.plugin_id;
    if (this.#pending(id)) {
      return errAsync(hostError('PLUGIN_PENDING_RESTART', `plugin '${id}' was installed after this host opened`, { details: { plugin_id: id, op_id: opId } }));
    }
    if (plugin.state?.needs_configuration === true) {
      return errAsync(hostError('PLUGIN_NEEDS_CONFIGURATION', `plugin '${id}' needs its credentials; run setup`, { details: { plugin_id: id, op_id: opId } }));
    }
    const maxRisk = options.maxRisk ?? 'read';
    if (RISK_RANK[variant.risk_class] > RISK_RANK[maxRisk]) {
      return errAsync(
        hostError('PLUGIN_RISK_NOT_ALLOWED', `${opId} is a ${variant.risk_class} operation; the call accepts at most ${maxRisk}`, {
          details: { op_id: opId, risk_class: variant.risk_class, max_risk: maxRisk },
        }),
      );
    }
    const confirmed: ResultAsync<void, HostError> =
      variant.confirmation_policy === 'high_stakes_write' ? this.#confirm(options.confirm ?? this.#o.confirm, { op_id: opId, plugin_id: id, risk_class: variant.risk_class, args }) : okAsync(undefined);
    return confirmed.andThen(() => this.#dispatch(plugin, variant.tool_name, args, options, opId, 'VARIANT_QUARANTINED'));
  }

  /** Stops every plugin (whole process trees) and refuses further calls. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const runtimes = [...this.#runtimes.values()];
    this.#runtimes.clear();
    await Promise.all(runtimes.map((rt) => rt.close()));
  }

  #dispatch(
    plugin: InstalledPlugin,
    tool: string,
    args: unknown,
    options: HostCallOptions,
    opId: string,
    quarantineCode: 'PLUGIN_QUARANTINED' | 'VARIANT_QUARANTINED' = 'PLUGIN_QUARANTINED',
  ): ResultAsync<ToolResult, HostError> {
    const id = plugin.plugin_id;
    const current = this.#snapshotPlugin(id) ?? plugin;
    if (current.state !== undefined) {
      const admitted = admitStart(crashStateOf(current.state), this.#clock.now(), id, quarantineCode);
      if (admitted.isErr()) return errAsync(admitted.error);
    }
    const callId = ++this.#callSeq;
    const started = this.#clock.now();
    this.events.emit('call:start', { plugin_id: id, op_id: opId, call_id: callId });
    return this.#runtime(current).andThen((runtime) => {
      runtime.begin();
      const callOptions = {
        ...(options.timeoutMs === undefined ? (this.#o.callTimeoutMs === undefined ? {} : { timeoutMs: this.#o.callTimeoutMs }) : { timeoutMs: options.timeoutMs }),
        ...(options.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeoutMs: options.maxTotalTimeoutMs }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
      };
      return new ResultAsync(
        (async (): Promise<Result<ToolResult, HostError>> => {
          const result = await runtime.session.callTool(tool, args, callOptions);
          runtime.end();
          const mapped = result.andThen((r) => (r.isError && runtime.session.shape !== 'ndjson-rpc' && runtime.session.shape !== 'handshake' ? err(mapCallToolError(r.value as CallToolErrorResult)) : ok(r)));
          const ended = { plugin_id: id, op_id: opId, call_id: callId, duration_ms: this.#clock.now() - started, ok: mapped.isOk() };
          this.events.emit('call:end', mapped.isErr() ? { ...ended, code: mapped.error.code } : ended);
          if (result.isErr() && QUARANTINE_CODES.has(result.error.code)) {
            await this.#stopRuntime(id);
            this.events.emit('crash', { plugin_id: id, code: result.error.code, stderr_tail: String(result.error.details.stderr_tail ?? '') });
            const recorded = await this.#quarantine(id, result.error, 'crash');
            if (recorded.isErr()) this.#logger.error({ plugin_id: id, code: recorded.error.code }, 'could not record a plugin failure');
          }
          return mapped;
        })(),
      );
    });
  }

  #runtime(plugin: InstalledPlugin): ResultAsync<PluginRuntime, HostError> {
    const id = plugin.plugin_id;
    const existing = this.#runtimes.get(id);
    if (existing !== undefined && !existing.closed) return okAsync(existing);
    const session = this.#session(plugin);
    if (session.isErr()) return errAsync(session.error);
    const runtime = new PluginRuntime(session.value, this.#clock, this.#o.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, () => {
      if (this.#runtimes.get(id) === runtime) this.#runtimes.delete(id);
    });
    this.#runtimes.set(id, runtime);
    return okAsync(runtime);
  }

  #session(plugin: InstalledPlugin): Result<PluginSession, HostError> {
    const id = plugin.plugin_id;
    const launch = this.#launcher(plugin);
    const shape = (plugin.descriptor?.shape ?? 'mcp-plugin') as ManifestShape;
    const tools = [...new Set(plugin.variants.map((v) => v.tool_name))];
    const common = { launch, clock: this.#clock, logger: this.#logger };
    switch (shape) {
      case 'mcp-plugin':
        return ok(
          new McpSession({
            ...common,
            expectedTools: tools,
            ...(this.#o.callTimeoutMs === undefined ? {} : { defaultTimeoutMs: this.#o.callTimeoutMs }),
            ...(this.#o.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeoutMs: this.#o.maxTotalTimeoutMs }),
            ...(this.#o.maxInFlight === undefined ? {} : { maxInFlight: this.#o.maxInFlight }),
          }),
        );
      case 'ndjson-rpc':
        return NdjsonRpcSession.create({
          ...common,
          tools,
          respawn: true,
          ...(this.#o.callTimeoutMs === undefined ? {} : { callTimeoutMs: this.#o.callTimeoutMs }),
          ...(this.#o.maxInFlight === undefined ? {} : { maxInFlight: this.#o.maxInFlight }),
        });
      case 'handshake':
        return HandshakeSession.create({
          ...common,
          random: this.#random,
          pluginId: id,
          allowedCapabilities: this.#o.handshakeCapabilities?.[id] ?? [],
        });
      default:
        return err(hostError('PLUGIN_SHAPE_UNSUPPORTED', `plugin '${id}' has shape ${shape}, which this host cannot run from an install`, { details: { plugin_id: id, shape } }));
    }
  }

  #launcher(plugin: InstalledPlugin): ProcessLauncher {
    const id = plugin.plugin_id;
    const layout = this.#layout;
    const caps = plugin.descriptor?.capabilities ?? { network: false, fs_write_dir: '', env_allow: [] };
    return () => {
      if (this.#closed) return errAsync(closedError());
      const dataDir = layout.dataDir(id);
      const writeDir = resolveWriteDir(dataDir, caps.fs_write_dir);
      if (writeDir.isErr()) return errAsync(writeDir.error);
      return ResultAsync.fromPromise(
        mkdir(writeDir.value, { recursive: true, mode: 0o700 }),
        (cause) => hostError('HOST_IO_ERROR', `cannot create the data directory of '${id}'`, { cause }),
      )
        .andThen(() => this.#secrets.get(id))
        .andThen((credentials) =>
          this.#env.buildEnv({
            parentEnv: this.#o.env ?? process.env,
            envAllow: caps.env_allow,
            credentials: Object.fromEntries(Object.entries(credentials).filter(([k]) => (plugin.descriptor?.needs_user_creds ?? []).includes(k))),
            fixed: { HOME: dataDir, TMPDIR: writeDir.value },
            pluginId: id,
          }),
        )
        .andThen((env) =>
          verifyExecutableBinding(plugin.lock.binding, { copyDir: layout.execDir, random: this.#random }).andThen((executable) =>
            new ResultAsync(
              (async () => {
                const spawned = await this.#spawner.spawn({
                  executable,
                  env,
                  network: caps.network,
                  writeDir: writeDir.value,
                  hiddenPaths: [layout.root],
                  readOnlyPaths: [dataDir],
                });
                executable.release();
                return spawned;
              })(),
            ),
          ),
        )
        .map((process) => {
          this.events.emit('spawn', { plugin_id: id, pid: process.pid, sandboxed: this.#spawner.describe({ installRoot: plugin.lock.binding.install_root, network: caps.network, writeDir: writeDir.value, hiddenPaths: [layout.root] }).enforced, sha256: plugin.lock.binding.executable_sha256 });
          const off = process.onStderrLine((line) => this.events.emit('stderr', { plugin_id: id, line }));
          void process.exited.then((exit) => {
            off();
            this.events.emit('exit', { plugin_id: id, pid: process.pid, exit });
          });
          return process;
        });
    };
  }

  #enforcedPolicy(plugin: InstalledPlugin): ReturnType<SandboxSpawner['describe']> | null {
    const caps = plugin.descriptor?.capabilities;
    if (caps === undefined) return null;
    const writeDir = resolveWriteDir(this.#layout.dataDir(plugin.plugin_id), caps.fs_write_dir);
    if (writeDir.isErr()) return null;
    return this.#spawner.describe({
      installRoot: plugin.lock.binding.install_root,
      network: caps.network,
      writeDir: writeDir.value,
      hiddenPaths: [this.#layout.root],
      readOnlyPaths: [this.#layout.dataDir(plugin.plugin_id)],
    });
  }

  #confirm(callback: ConfirmationCallback | undefined, request: ConfirmationRequest): ResultAsync<void, HostError> {
    const denied = (why: string): HostError =>
      hostError('PLUGIN_CONFIRMATION_DENIED', `${request.op_id} needs confirmation: ${why}`, { details: { op_id: request.op_id } });
    if (callback === undefined) return errAsync(denied('no confirmation callback is configured'));
    return ResultAsync.fromPromise(Promise.resolve(callback(request)), () => denied('the confirmation callback failed')).andThen((yes) =>
      yes ? okAsync(undefined) : errAsync(denied('the confirmation callback refused it')),
    );
  }

  #resolve(opId: string): Result<ResolvedOperation, HostError> {
    const notFound = (): HostError => hostError('VARIANT_NOT_FOUND', `no operation ${JSON.stringify(opId)} is installed`, { details: { op_id: opId } });
    const m = OP_ID.exec(opId);
    const plugin = m ? this.#snapshotPlugin(m[1]!) : undefined;
    const variant = plugin?.variants.find((v) => v.op_id === opId);
    if (plugin === undefined || variant === undefined) return err(notFound());
    return ok({ plugin, variant });
  }

  #snapshotPlugin(pluginId: string): InstalledPlugin | undefined {
    return lookupPlugin(this.#snapshot, { profile: this.#snapshot.profile, plugin_id: pluginId });
  }

  #plugin(pluginId: string): ResultAsync<InstalledPlugin, HostError> {
    return this.#refresh().andThen((snapshot) => {
      const plugin = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: pluginId });
      return plugin === undefined ? err(notInstalled(pluginId)) : ok(plugin);
    });
  }

  #pending(pluginId: string): boolean {
    return !this.#activeAtOpen.has(pluginId);
  }

  #refresh(): ResultAsync<CatalogSnapshot, HostError> {
    return this.#store.snapshot().map((snapshot) => {
      this.#snapshot = snapshot;
      return snapshot;
    });
  }

  #updateState(pluginId: string, update: (row: PluginStateRecord) => PluginStateRecord): ResultAsync<void, HostError> {
    return this.#store
      .transaction((current) => {
        if (current.plugins[pluginId] === undefined) return err(notInstalled(pluginId));
        return ok(updatePluginState(current, pluginId, update));
      })
      .map((snapshot) => {
        this.#snapshot = snapshot;
      });
  }

  #quarantine(pluginId: string, failure: HostError, reason: string): ResultAsync<void, HostError> {
    const permanent = failure.code === 'PLUGIN_EXECUTABLE_UNTRUSTED';
    let entered: PluginStateRecord | undefined;
    return this.#updateState(pluginId, (row) => {
      const crash = recordFailure(
        crashStateOf(row),
        { code: failure.code, reason: permanent ? String(failure.details.reason ?? 'digest_mismatch') : reason, now: this.#clock.now(), permanent },
        this.#o.backoffScheduleMs ?? CRASH_BACKOFF_SCHEDULE_MS,
      );
      entered = withCrashState(row, crash);
      return entered;
    }).map(() => {
      if (entered === undefined) return;
      const next = entered.next_retry_at === null ? {} : { next_retry_at: Date.parse(entered.next_retry_at) };
      this.events.emit('quarantine', {
        plugin_id: pluginId,
        quarantined: true,
        permanent: entered.permanent_quarantine === true,
        retry_count: entered.retry_count,
        ...next,
      });
    });
  }

  #recordCanary(pluginId: string, status: 'passed' | 'failed' | 'skipped', needsConfiguration: boolean): ResultAsync<void, HostError> {
    const now = new Date(this.#clock.now()).toISOString();
    return this.#updateState(pluginId, (row) => {
      const failures = status === 'failed' ? (row.canary.consecutive_failures ?? 0) + 1 : 0;
      const cleared = status === 'passed' && row.quarantine_reason === 'canary_failed' ? withCrashState(row, CLEAR_CRASH_STATE) : row;
      const next: PluginStateRecord = {
        ...cleared,
        needs_configuration: needsConfiguration,
        canary: { status, last_run_at: now, consecutive_failures: failures },
      };
      return { ...next, status: statusOf(next, next.activated_at === null) };
    });
  }

  #markNeedsConfiguration(pluginId: string, needs: boolean): ResultAsync<void, HostError> {
    if (!needs) return okAsync(undefined);
    return this.#updateState(pluginId, (row) => ({ ...row, needs_configuration: true }));
  }

  #stopRuntime(pluginId: string): ResultAsync<void, HostError> {
    const runtime = this.#runtimes.get(pluginId);
    if (runtime === undefined) return okAsync(undefined);
    this.#runtimes.delete(pluginId);
    return ResultAsync.fromSafePromise(runtime.close());
  }

  async #missingCredentials(pluginId: string, needed: readonly string[]): Promise<string[]> {
    if (needed.length === 0) return [];
    const stored = await this.#secrets.get(pluginId);
    const values = stored.isOk() ? stored.value : {};
    return needed.filter((name) => values[name] === undefined || values[name] === '');
  }

  #aliasesOf(plugin: InstalledPlugin, envNames: readonly string[]): string[] {
    const descriptors = plugin.descriptor?.credential_descriptors ?? [];
    return envNames.map((name) => descriptors.find((d) => d.env === name)?.alias ?? 'unnamed');
  }
}

function closedError(): HostError {
  return hostError('HOST_CLOSED', 'this PluginHost was closed');
}

function notInstalled(pluginId: string): HostError {
  return hostError('PLUGIN_NOT_FOUND', `plugin '${pluginId}' is not installed in this profile`, { details: { plugin_id: pluginId } });
}
