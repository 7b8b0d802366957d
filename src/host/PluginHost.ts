import { dirname } from 'node:path';
import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import { verifyExecutableBinding, type ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import { verifyModuleEntry } from '../binding/ModuleEntryBinding.js';
import { NODE_MAIN_GUARD } from '../binding/nodeMain.js';
import { recheckPinnedCode, verifyBindingTree } from '../binding/recheckPinnedCode.js';
import { listPlugins, lookupPlugin, updatePluginState, type InstalledPlugin } from '../catalog/catalogContents.js';
import { CatalogStore } from '../catalog/CatalogStore.js';
import type { CatalogContents, CatalogSnapshot, PluginStateRecord } from '../catalog/catalogTypes.js';
import { resolveRelativeDates } from './relativeDates.js';
import { EnvDenylist, type EnvDenylistOptions } from '../env/EnvDenylist.js';
import { mapCallToolError, type CallToolErrorResult } from '../error-mapper/ErrorMapper.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { HostErrorCode } from '../errors/registry.js';
import { HostEvents } from '../events/HostEvents.js';
import { Installer, type InstallOptions } from '../installer/Installer.js';
import type { PackageLimits } from '../installer/limits.js';
import type { ManifestPreset } from '../manifest/ManifestValidator.js';
import type { DeclaredCapabilities, ManifestShape, RiskClass } from '../manifest/model.js';
import { NamespaceLock, type ProfileKind } from '../namespace/NamespaceLock.js';
import { silentLogger, systemClock, systemRandom, type Clock, type Logger, type Random } from '../ports/ports.js';
import type { PluginProcess } from '../process/PluginProcess.js';
import type { VerifiedExecutable } from '../process/VerifiedExecutable.js';
import { defaultProfileDir, ProfileLayout } from '../profile/ProfileLayout.js';
import { openPluginDirectories, pluginDirectoryPaths } from '../sandbox/pluginDirectories.js';
import { writeDirComponents } from '../sandbox/writeDir.js';
import { pluginSearchPath } from '../env/pluginPath.js';
import { SandboxSpawner, type EnforcedPolicy, type SandboxPolicyRequest, type SandboxSpawnerOptions } from '../sandbox/SandboxSpawner.js';
import { FileSecretStore, type SecretStore } from '../secrets/SecretStore.js';
import { esmRunnerCommand } from '../shapes/esm/esmRunnerCommand.js';
import { EsmSession } from '../shapes/esm/EsmSession.js';
import { HandshakeSession } from '../shapes/handshake/HandshakeSession.js';
import { McpSession } from '../shapes/mcp/McpSession.js';
import { NdjsonRpcSession } from '../shapes/ndjson-rpc/NdjsonRpcSession.js';
import type { CallOptions, CallProgress, PluginSession, ProcessLauncher, ToolDescriptor, ToolResult } from '../shapes/PluginSession.js';
import { admitStart, CLEAR_CRASH_STATE, CRASH_BACKOFF_SCHEDULE_MS, recordFailure } from './CrashPolicy.js';
import { checkHostOptions } from './checkHostOptions.js';
import { aliasesOf, credentialsByEnv } from './credentials.js';
import { pluginInfo, pluginRow, type PluginInfo, type PluginRow } from './inventory.js';
import { hostOpId, operationIndex, riskAllowed, type NamedOperation } from './operations.js';
import { canaryHold, crashStateOf, inBackoff, withCrashState, withStatus } from './pluginState.js';
import { PluginRuntime } from './PluginRuntime.js';

/** Default idle time before a running plugin is stopped: 5 minutes. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/**
 * Default time a remove or an upgrade lets the plugin's calls in flight
 * finish before stopping it, when the host has no `callTimeoutMs`: 30 s.
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** Options of {@link PluginHost.open}. Every one is optional. */
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
  /**
   * Sandbox options (bubblewrap path, secret paths, grace periods, the dev-only
   * unsandboxed mode), including the caps of each plugin's whole process tree:
   * `memoryLimitBytes` and `maxProcesses` for every plugin, `pluginLimits` by
   * plugin id, `requireTreeLimits` to refuse hosts without control groups.
   */
  readonly sandbox?: SandboxSpawnerOptions;
  /** A ready spawner, replacing the one built from `sandbox`. */
  readonly spawner?: SandboxSpawner;
  /** Where plugin credentials live. Default a 0600 file store inside the profile, which the sandbox hides. */
  readonly secretStore?: SecretStore;
  /** Extra env denylist rules on top of the preset's. */
  readonly envDenylist?: Omit<EnvDenylistOptions, 'preset'>;
  /** Extra reserved namespace prefixes on top of the preset's. */
  readonly reservedNamespaces?: readonly string[];
  /** Public keys whose package signatures are trusted. */
  readonly trustedKeys?: readonly string[];
  /** Refuse packages not signed by a trusted key. Default false. */
  readonly requireSignatures?: boolean;
  /** Archive limits. */
  readonly packageLimits?: Partial<PackageLimits>;
  /** `PATH` searched once, at install, for `#!/usr/bin/env <program>` interpreters. Default `process.env.PATH`. */
  readonly interpreterSearchPath?: string;
  /** The environment plugins' allowlisted variables are read from (and `XDG_DATA_HOME`). Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Per-call time without an answer (reset by progress where the protocol has it). Default 30 s. */
  readonly callTimeoutMs?: number;
  /** Per-call hard cap. Default 300 s. */
  readonly maxTotalTimeoutMs?: number;
  /** Calls in flight at one plugin at once. Default 16 (MCP) / 1 (ndjson-rpc, as its protocol says). */
  readonly maxInFlight?: number;
  /** Idle time before a running plugin is stopped; 0 keeps plugins running until close. Default {@link DEFAULT_IDLE_TIMEOUT_MS}. */
  readonly idleTimeoutMs?: number;
  /** The crash backoff ladder; one failure more than it has steps quarantines for good. Default 30, 60, 120, 240, 480 s. */
  readonly backoffScheduleMs?: readonly number[];
  /**
   * The command that starts the ESM runner for `esm-module` plugins, before
   * its arguments (see `esmRunnerCommand`). Default: this Node binary
   * running `esm-runner.js` beside the built library, which exists in the built package;
   * code run from source (tsx, vitest) must point it at a built runner.
   */
  readonly esmRunnerArgv?: readonly string[];
  /** Capabilities the host grants each handshake-shape plugin (its allow-list), by plugin id. */
  readonly handshakeCapabilities?: Readonly<Record<string, readonly string[]>>;
  /** Approves `high_stakes_write` calls; without it they are refused. */
  readonly confirm?: ConfirmationCallback;
  /**
   * When a plugin installed through this host becomes callable: `next-open`
   * (the contract's restart semantics) or `immediate`. Default `next-open`.
   */
  readonly activation?: 'next-open' | 'immediate';
  /** Time source for supervision, idle stops, protocol timeouts and canary dates. Default the system clock. */
  readonly clock?: Clock;
  /** Randomness for txids, install roots and request ids. */
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

/** Approves (`true`) or refuses a `high_stakes_write` call. A throw or rejection refuses. */
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
  /** What the canary tool returned, for a live canary that passed. */
  readonly result?: unknown;
}

/** What {@link PluginHost.setup} returns: the live canary's outcome and what was stored. */
export interface SetupOutcome extends CanaryOutcome {
  /** The aliases of the credentials stored by this call (never their env names or values). */
  readonly stored: readonly string[];
}

/** What {@link PluginHost.install} returns. */
export interface InstallOutcome {
  /** The installed plugin's inventory view. */
  readonly plugin: PluginInfo;
  /** The install-time canary, when the plugin declares one. */
  readonly canary?: CanaryOutcome;
  /**
   * Present when the same package was already installed at this version:
   * nothing was written, no canary ran and a running plugin was left alone.
   */
  readonly unchanged?: true;
}

/** Options of {@link PluginHost.install}. */
export interface HostInstallOptions extends Omit<InstallOptions, 'initialStatus'> {
  /** Run the declared canary right after the install (skipped, with needs_configuration, when credentials are missing). Default true. */
  readonly canary?: boolean;
  /** How long the previous version's calls in flight may run before it is stopped; see {@link RemoveOptions.drainTimeoutMs}. */
  readonly drainTimeoutMs?: number;
}

/** Options of {@link PluginHost.canary}. */
export interface CanaryOptions {
  /** Call the canary tool (live) instead of only starting the plugin and listing its tools. Default false. */
  readonly live?: boolean;
  /** Arguments overriding the declared canary arguments (relative dates are resolved in these too). */
  readonly args?: Readonly<Record<string, unknown>>;
}

/** An MCP resource payload a host can serve for its inventory (`resources/read`). */
export interface InventoryResource {
  /** The resource's URI. */
  readonly uri: string;
  /** Always `application/json`. */
  readonly mimeType: 'application/json';
  /** The JSON text. */
  readonly text: string;
}

/** How a host advertises the inventory resources (`resources/list`, `resources/templates/list`). */
export interface InventoryResourceDescriptors {
  /** The fixed `plugins` resource. */
  readonly resources: readonly { readonly uri: string; readonly name: string; readonly description: string; readonly mimeType: 'application/json' }[];
  /** The `plugin/{name}` template. */
  readonly resourceTemplates: readonly {
    readonly uriTemplate: string;
    readonly name: string;
    readonly description: string;
    readonly mimeType: 'application/json';
  }[];
}

/** Options of {@link PluginHost.remove}. */
export interface RemoveOptions {
  /** Also forget the plugin's stored credentials. Default false: a reinstall finds them again. */
  readonly forgetSecrets?: boolean;
  /**
   * How long calls in flight may run before the plugin is stopped; a call
   * still running then fails with PLUGIN_CALL_INTERRUPTED. Default the
   * host's `callTimeoutMs`, else {@link DEFAULT_DRAIN_TIMEOUT_MS}.
   */
  readonly drainTimeoutMs?: number;
}

/** Failures that count toward quarantine: the plugin could not be started or broke its protocol. */
const QUARANTINE_CODES: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  'PLUGIN_SPAWN_FAILED',
  'PLUGIN_CRASHED',
  'PLUGIN_RESOURCE_LIMIT',
  'PLUGIN_HANDSHAKE_FAILED',
  'PLUGIN_TOOLS_MISMATCH',
  'PLUGIN_INVALID_JSON',
  'PLUGIN_MALFORMED_RESPONSE',
  'PLUGIN_FRAME_TOO_LARGE',
  'PLUGIN_EXECUTABLE_UNTRUSTED',
  'PLUGIN_PROTOCOL_VERSION_MISMATCH',
]);

/** Why a dispatch runs: a caller's call feeds the crash ladder; a canary keeps its own books. */
type DispatchPurpose = 'call' | 'canary';

/** What a dispatched call carries to its end. */
interface DispatchedCall {
  readonly id: string;
  readonly opId: string;
  readonly callId: number;
  readonly started: number;
  readonly purpose: DispatchPurpose;
}

const NO_CALL_OPTIONS: CallOptions = Object.freeze({});

interface OpenParts {
  readonly layout: ProfileLayout;
  readonly store: CatalogStore;
  readonly spawner: SandboxSpawner;
  readonly env: EnvDenylist;
  readonly namespaceLock: NamespaceLock;
  readonly snapshot: CatalogSnapshot;
}

/**
 * The facade a host application uses: open a profile, install, list,
 * inspect, call, supervise and remove plugins. Every operation returns a
 * typed `Result`; expected failures are `HostError`s with stable codes.
 *
 * Plugins start on their first call, stay alive between calls and stop after
 * an idle period; the executable binding is verified again before every
 * spawn. A plugin that fails to start or breaks its protocol waits on the
 * contract's backoff ladder (30, 60, 120, 240, 480 s); one more failure
 * quarantines it until `unquarantine` or `reload`. A failed canary holds it
 * until a canary passes. That state lives in plugin-state.json, so it
 * survives host restarts and is shared by every host on the profile.
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
  /** Plugins callable in this session: those installed when it opened, plus `immediate` installs. */
  readonly #active: Set<string>;
  readonly #runtimes = new Map<string, PluginRuntime>();
  /** Sessions of removed or upgraded plugins whose calls in flight are draining; close stops them too. */
  readonly #draining = new Set<PluginRuntime>();
  /** Plugins being removed or upgraded here: a call that would start them fails with this error meanwhile. */
  readonly #retiring = new Map<string, HostError>();
  /** The binding each runtime was built from: its launcher only ever starts that one. */
  readonly #runtimeBindings = new WeakMap<PluginRuntime, ExecutableBindingRecord>();
  /** When this host last recorded a failure of each plugin (epoch ms). */
  readonly #lastFailureAt = new Map<string, number>();
  #snapshot: CatalogSnapshot;
  #indexed: CatalogSnapshot | undefined;
  #index = new Map<string, InstalledPlugin>();
  #operations: ReadonlyMap<string, NamedOperation<InstalledPlugin>> = new Map();
  #closed = false;
  #callSeq = 0;

  private constructor(options: PluginHostOptions, parts: OpenParts) {
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
    this.#active = new Set(Object.keys(parts.snapshot.contents.plugins));
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
      ...(options.interpreterSearchPath === undefined ? {} : { searchPath: options.interpreterSearchPath }),
    });
  }

  /**
   * Opens a profile: its catalog (recovering a consistent generation after a
   * crash), the sandbox (probed for real once per process) and the secret
   * store. Plugins installed since the last open become active now.
   */
  static open(options: PluginHostOptions = {}): ResultAsync<PluginHost, HostError> {
    const checked = checkHostOptions(options);
    if (checked.isErr()) return errAsync(checked.error);
    const preset = options.preset ?? 'neutral';
    const profile = options.profile ?? 'default';
    const profileKind = options.profileKind ?? 'standard';
    const profileDir =
      options.profileDir ?? defaultProfileDir({ appName: options.appName ?? 'mcp-plugin-host', profile, ...(options.env ? { env: options.env } : {}) });
    const layout = new ProfileLayout(profileDir);
    const env = EnvDenylist.create({ preset, ...options.envDenylist, ...(options.logger ? { logger: options.logger } : {}) });
    if (env.isErr()) return errAsync(env.error);
    const namespaceLock = NamespaceLock.create({
      preset,
      profileKind,
      ...(options.reservedNamespaces === undefined ? {} : { reserved: options.reservedNamespaces }),
    });
    if (namespaceLock.isErr()) return errAsync(namespaceLock.error);
    const spawner: ResultAsync<SandboxSpawner, HostError> = options.spawner
      ? okAsync(options.spawner)
      : SandboxSpawner.create({ profileKind, ...(options.logger ? { logger: options.logger } : {}), ...options.sandbox });
    const clock = options.clock ?? systemClock;
    return spawner.andThen((sandbox) =>
      CatalogStore.open({ profileDir: layout.root, profile, clock, ...(options.random ? { random: options.random } : {}) })
        .andThen((store) => activateInstalled(store, clock).map((snapshot) => ({ store, snapshot })))
        .map(
          ({ store, snapshot }) =>
            new PluginHost(options, { layout, store, spawner: sandbox, env: env.value, namespaceLock: namespaceLock.value, snapshot }),
        ),
    );
  }

  /** The profile directory this host serves. */
  get profileDir(): string {
    return this.#layout.root;
  }

  /** Whether {@link PluginHost.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Installs (or upgrades) a plugin from a directory (dev profiles) or a
   * `.tgz`/`.zip` archive, then runs its declared canary. Until the next
   * open the plugin is inventory-only (`installed_pending_restart`) unless
   * the host was opened with `activation: 'immediate'`.
   */
  install(source: string, options: HostInstallOptions = {}): ResultAsync<InstallOutcome, HostError> {
    if (this.#closed) return errAsync(closedError());
    const { canary: runCanary = true, drainTimeoutMs, ...installOptions } = options;
    const immediate = this.#o.activation === 'immediate';
    return this.#installer
      .install(source, {
        ...installOptions,
        initialStatus: async (m) =>
          (await this.#missingCredentials(m.plugin_id, m.requirements.needs_user_creds)).length > 0 ? 'needs_configuration' : 'installed_pending_restart',
      })
      .andThen((installed) => {
        const id = installed.plugin_id;
        if (installed.unchanged === true) return this.info(id).map((plugin): InstallOutcome => ({ plugin, unchanged: true }));
        if (immediate) this.#active.add(id);
        else this.#active.delete(id);
        const needsConfiguration = installed.state?.status === 'needs_configuration';
        const now = this.#isoNow();
        return this.#updateState(id, (row) => ({
          ...row,
          needs_configuration: needsConfiguration,
          ...(immediate ? { activated_at: now } : {}),
        }))
          .andThen(() => this.#retireRuntime(id, 'upgraded', drainTimeoutMs))
          .andThen(() => {
            if (!runCanary || installed.descriptor?.canary === undefined) return okAsync<CanaryOutcome | undefined, HostError>(undefined);
            return this.canary(id, { live: true }).map((c): CanaryOutcome | undefined => c);
          })
          .andThen((canary) => this.#stopRuntime(id).map(() => canary))
          .andThen((canary) => this.info(id).map((plugin): InstallOutcome => (canary === undefined ? { plugin } : { plugin, canary })));
      });
  }

  /** Runs every install check on a package without installing it (what a CLI's `validate` prints). */
  inspect(source: string, options: Omit<InstallOptions, 'initialStatus'> = {}): ReturnType<Installer['inspect']> {
    if (this.#closed) return errAsync(closedError());
    return this.#installer.inspect(source, options);
  }

  /** The `plugins` inventory, sorted by name. */
  list(): ResultAsync<readonly PluginRow[], HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#refresh().map((snapshot) => listPlugins(snapshot).map((p) => pluginRow(p, this.#pending(p.plugin_id))));
  }

  /** The `plugin/{name}` view of one plugin: status, operations, provenance, safe credential descriptors, enforced sandbox. */
  info(pluginId: string): ResultAsync<PluginInfo, HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#plugin(pluginId).map((plugin) =>
      pluginInfo(plugin, this.#pending(pluginId), this.#snapshot.install_generation, this.#enforcedPolicy(plugin)),
    );
  }

  /** The URI scheme of the inventory resources: the app name. */
  get #scheme(): string {
    return this.#o.appName ?? 'mcp-plugin-host';
  }

  /** What a host's MCP server lists for the inventory: `<scheme>://plugins` and the `<scheme>://plugin/{name}` template. */
  resourceDescriptors(): InventoryResourceDescriptors {
    const scheme = this.#scheme;
    return {
      resources: [{ uri: `${scheme}://plugins`, name: 'plugins', description: 'Installed plugins and their status', mimeType: 'application/json' }],
      resourceTemplates: [
        { uriTemplate: `${scheme}://plugin/{name}`, name: 'plugin', description: 'One installed plugin in detail', mimeType: 'application/json' },
      ],
    };
  }

  /**
   * The inventory as MCP resource payloads: `<scheme>://plugins` (rows under
   * `plugins`) and `<scheme>://plugin/{name}`, where the scheme is the app name.
   */
  resource(uri: string): ResultAsync<InventoryResource, HostError> {
    if (this.#closed) return errAsync(closedError());
    const scheme = this.#scheme;
    const asResource = (value: unknown): InventoryResource => ({ uri, mimeType: 'application/json', text: JSON.stringify(value) });
    if (uri === `${scheme}://plugins`) return this.list().map((rows) => asResource({ plugins: rows }));
    const prefix = `${scheme}://plugin/`;
    if (uri.startsWith(prefix)) return this.info(decodeURIComponent(uri.slice(prefix.length))).map(asResource);
    return errAsync(hostError('VARIANT_NOT_FOUND', `no inventory resource at ${uri}`, { details: { uri } }));
  }

  /** Removes a plugin (install root and rows; its namespace owner stays recorded). Its data directory is kept. */
  remove(pluginId: string, options: RemoveOptions = {}): ResultAsync<void, HostError> {
    if (this.#closed) return errAsync(closedError());
    const removing = this.#retireRuntime(pluginId, 'removed', options.drainTimeoutMs, { keepRefusing: true })
      .andThen(() => this.#installer.remove(pluginId))
      .andThen(() => (options.forgetSecrets === true ? this.#secrets.delete(pluginId) : okAsync(undefined)))
      .andThen(() => {
        this.#active.delete(pluginId);
        return this.#refresh().map(() => undefined);
      });
    return new ResultAsync(
      (async () => {
        const result = await removing;
        this.#retiring.delete(pluginId);
        return result;
      })(),
    );
  }

  /** Clears quarantine, restarts the plugin and runs a passive canary (start + tool list check). */
  reload(pluginId: string): ResultAsync<CanaryOutcome, HostError> {
    return this.unquarantine(pluginId).andThen(() => this.canary(pluginId, { live: false }));
  }

  /** Clears quarantine (backoff, hold or permanent) without running anything. */
  unquarantine(pluginId: string): ResultAsync<void, HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#stopRuntime(pluginId)
      .andThen(() => this.#updateState(pluginId, (row) => withCrashState(row, CLEAR_CRASH_STATE)))
      .map(() => {
        this.#logger.info({ plugin_id: pluginId }, 'plugin unquarantined');
        this.events.emit('quarantine', { plugin_id: pluginId, quarantined: false, permanent: false, retry_count: 0 });
      });
  }

  /**
   * Stores a plugin's credentials and runs the live canary; a pass clears
   * `needs_configuration`. Keys are the descriptors' aliases (what people
   * see) or the declared env names; nothing undeclared is accepted.
   */
  setup(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<SetupOutcome, HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#plugin(pluginId).andThen((plugin) => {
      const byEnv = credentialsByEnv(plugin, values);
      if (byEnv.isErr()) return errAsync(byEnv.error);
      const stored = aliasesOf(plugin, Object.keys(byEnv.value));
      return this.#secrets
        .set(pluginId, byEnv.value)
        .andThen(() => this.#stopRuntime(pluginId))
        .andThen(() => this.canary(pluginId, { live: true }))
        .map((canary): SetupOutcome => ({ ...canary, stored }));
    });
  }

  /**
   * Runs a plugin's canary. Passive: start it and check its tool list. Live:
   * call the declared canary tool (relative dates like `+7d` resolved with
   * the host clock); without a declared canary, live runs the passive check.
   * A failure holds the plugin in quarantine until a canary passes; missing
   * credentials skip the canary and record `needs_configuration`; only a live
   * pass clears `needs_configuration`. A permanently quarantined plugin is
   * refused (unquarantine or reload it first).
   */
  canary(pluginId: string, options: CanaryOptions = {}): ResultAsync<CanaryOutcome, HostError> {
    if (this.#closed) return errAsync(closedError());
    const mode = options.live === true ? 'live' : 'passive';
    return this.#plugin(pluginId).andThen((plugin) => {
      if (plugin.state?.permanent_quarantine === true) {
        const refused = admitStart(crashStateOf(plugin.state), this.#clock.now(), pluginId, 'PLUGIN_QUARANTINED');
        if (refused.isErr()) return errAsync(refused.error);
      }
      return ResultAsync.fromSafePromise(this.#missingCredentials(pluginId, plugin.descriptor?.needs_user_creds ?? [])).andThen((missing) => {
        if (missing.length > 0) {
          const error = hostError('PLUGIN_NEEDS_CONFIGURATION', `plugin '${pluginId}' is missing ${missing.length} credential(s); run setup`, {
            details: { plugin_id: pluginId, missing_aliases: aliasesOf(plugin, missing) },
          });
          return this.#recordCanary(pluginId, { status: 'skipped' }).map((): CanaryOutcome => ({ plugin_id: pluginId, mode, status: 'skipped', error }));
        }
        return new ResultAsync(this.#runCanary(plugin, mode, options));
      });
    });
  }

  /**
   * Calls an operation, `plug.<plugin_id>.<tool>`. Refuses, in this order:
   * an unknown id (VARIANT_NOT_FOUND), a quarantined plugin
   * (VARIANT_QUARANTINED, with `retry_after_ms` inside a backoff window), one
   * missing credentials (PLUGIN_NEEDS_CONFIGURATION), one installed after
   * this host opened (PLUGIN_PENDING_RESTART), a tool above `maxRisk`
   * (PLUGIN_RISK_NOT_ALLOWED) and an unconfirmed `high_stakes_write` tool
   * (PLUGIN_CONFIRMATION_DENIED). An MCP `isError` result comes back as the
   * mapped host error (RATE_LIMITED, AUTH_REQUIRED, SERVICE_DOWN,
   * INVALID_ARGS); the other protocols' application errors come back as
   * `ok` results with `isError: true`.
   */
  call(opId: string, args: unknown, options: HostCallOptions = {}): ResultAsync<ToolResult, HostError> {
    if (this.#closed) return errAsync(closedError());
    const operation = this.#operation(opId);
    if (operation === undefined) {
      return errAsync(hostError('VARIANT_NOT_FOUND', `no operation ${JSON.stringify(opId)} is installed`, { details: { op_id: opId } }));
    }
    const { plugin, variant } = operation;
    const pluginId = plugin.plugin_id;
    const refused = this.#refusal(plugin, opId);
    if (refused !== undefined) return errAsync(refused);
    const maxRisk = options.maxRisk ?? 'read';
    if (!riskAllowed(variant.risk_class, maxRisk)) {
      return errAsync(
        hostError('PLUGIN_RISK_NOT_ALLOWED', `${opId} is a ${variant.risk_class} operation; the call accepts at most ${maxRisk}`, {
          details: { op_id: opId, risk_class: variant.risk_class, max_risk: maxRisk },
        }),
      );
    }
    if (variant.confirmation_policy !== 'high_stakes_write') return this.#dispatch(plugin, variant.tool_name, args, options, opId, 'call');
    return confirm(options.confirm ?? this.#o.confirm, { op_id: opId, plugin_id: pluginId, risk_class: variant.risk_class, args }).andThen(() =>
      this.#dispatch(plugin, variant.tool_name, args, options, opId, 'call'),
    );
  }

  /**
   * The tools the plugin offers, as it lists them now (MCP `tools/list`,
   * handshake `exposed_tools`; ndjson-rpc has no discovery, so its declared
   * tools). Starts the plugin if it is not running, through the same checks
   * and sandbox as a call; a list that differs from the manifest is
   * PLUGIN_TOOLS_MISMATCH with the undeclared and missing names.
   */
  tools(pluginId: string): ResultAsync<readonly ToolDescriptor[], HostError> {
    if (this.#closed) return errAsync(closedError());
    const plugin = this.#snapshotPlugin(pluginId);
    if (plugin === undefined) return errAsync(notInstalled(pluginId));
    const refused = this.#refusal(plugin, `plug.${pluginId}`);
    if (refused !== undefined) return errAsync(refused);
    return this.#runtime(plugin).asyncAndThen((runtime) => runtime.session.listTools());
  }

  /** Stops every plugin (whole process trees, calls in flight fail with HOST_CLOSED); every later operation fails with HOST_CLOSED. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const runtimes = [...this.#runtimes.values(), ...this.#draining];
    this.#runtimes.clear();
    await Promise.all(runtimes.map((rt) => rt.close()));
  }

  /** Why a call of `plugin` must not run now, by status precedence, or undefined. */
  #refusal(plugin: InstalledPlugin, opId: string): HostError | undefined {
    const id = plugin.plugin_id;
    const state = plugin.state;
    // The common case, a healthy active plugin, is decided without building its crash history.
    if (state !== undefined && state.quarantined_at === null && state.needs_configuration !== true && !this.#pending(id)) return undefined;
    if (state === undefined) {
      return hostError('VARIANT_QUARANTINED', `plugin '${id}' has no runtime state; reinstall it`, { details: { plugin_id: id, op_id: opId, reason: 'state_missing' } });
    }
    const admitted = admitStart(crashStateOf(state), this.#clock.now(), id, 'VARIANT_QUARANTINED');
    if (admitted.isErr()) return admitted.error;
    if (state.needs_configuration === true) {
      return hostError('PLUGIN_NEEDS_CONFIGURATION', `plugin '${id}' needs its credentials; run setup`, {
        details: { plugin_id: id, op_id: opId, credential_aliases: aliasesOf(plugin, plugin.descriptor?.needs_user_creds ?? []) },
      });
    }
    if (this.#pending(id)) {
      return hostError('PLUGIN_PENDING_RESTART', `plugin '${id}' was installed after this host opened; it becomes callable on the next open`, {
        details: { plugin_id: id, op_id: opId },
      });
    }
    return undefined;
  }

  async #runCanary(plugin: InstalledPlugin, mode: 'live' | 'passive', options: CanaryOptions): Promise<Result<CanaryOutcome, HostError>> {
    const id = plugin.plugin_id;
    const spec = plugin.descriptor?.canary;
    let outcome: Result<unknown, HostError>;
    if (mode === 'live' && spec !== undefined) {
      const variant = plugin.variants.find((v) => v.tool_name === spec.tool);
      const opId = variant === undefined ? `plug.${id}.${spec.tool}` : hostOpId(variant);
      const args = resolveRelativeDates(options.args ?? spec.arguments, this.#clock.now());
      outcome = await this.#dispatch(plugin, spec.tool, args, {}, opId, 'canary').map((r) => r.value);
    } else {
      outcome = await this.#runtime(plugin).asyncAndThen((rt) => rt.session.listTools());
    }
    if (outcome.isErr() || !this.#active.has(id)) await this.#stopRuntime(id);
    if (outcome.isOk()) {
      const recorded = await this.#recordCanary(id, { status: 'passed', live: mode === 'live' });
      const result = mode === 'live' && spec !== undefined ? { result: outcome.value } : {};
      return recorded.map((): CanaryOutcome => ({ plugin_id: id, mode, status: 'passed', ...result }));
    }
    const failure = outcome.error;
    this.#logger.warn({ plugin_id: id, code: failure.code, mode }, 'plugin canary failed');
    const recorded = await this.#recordCanary(id, { status: 'failed', code: failure.code });
    return recorded.map((): CanaryOutcome => ({ plugin_id: id, mode, status: 'failed', error: failure }));
  }

  #dispatch(
    plugin: InstalledPlugin,
    tool: string,
    args: unknown,
    options: HostCallOptions,
    opId: string,
    purpose: DispatchPurpose,
  ): ResultAsync<ToolResult, HostError> {
    const id = plugin.plugin_id;
    const taken = this.#runtime(plugin);
    if (taken.isErr()) return errAsync(taken.error);
    const runtime = taken.value;
    const callId = ++this.#callSeq;
    const started = this.#clock.now();
    if (this.events.wants('call:start')) this.events.emit('call:start', { plugin_id: id, op_id: opId, call_id: callId });
    runtime.begin();
    return new ResultAsync(this.#settle(runtime, tool, args, options, { id, opId, callId, started, purpose }));
  }

  /** Runs a dispatched call to its end: the session call, error mapping, the call:end event and the crash books. */
  async #settle(runtime: PluginRuntime, tool: string, args: unknown, options: HostCallOptions, call: DispatchedCall): Promise<Result<ToolResult, HostError>> {
    let result: Result<ToolResult, HostError>;
    try {
      result = await runtime.session.callTool(tool, args, this.#callOptions(options));
    } finally {
      runtime.end();
    }
    const { id, purpose } = call;
    let failure: HostError | undefined;
    let mapped = result;
    if (result.isErr()) {
      failure = stoppedBySibling(stoppedByRetirement(result.error, runtime, this.#closed), runtime, this.#closed);
      mapped = failure === result.error ? result : err(failure);
    } else if (result.value.isError && runtime.session.shape === 'mcp-plugin') {
      mapped = err(mapCallToolError(result.value.value as CallToolErrorResult));
    }
    if (this.events.wants('call:end')) {
      const ended = { plugin_id: id, op_id: call.opId, call_id: call.callId, duration_ms: this.#clock.now() - call.started, ok: mapped.isOk() };
      this.events.emit('call:end', mapped.isErr() ? { ...ended, code: mapped.error.code } : ended);
    }
    if (failure !== undefined) {
      if (QUARANTINE_CODES.has(failure.code)) await this.#pluginFailed(id, runtime, failure, purpose);
    } else if (purpose === 'call' && inBackoffNow(this.#snapshotPlugin(id))) {
      await this.#clearBackoff(id, call.started);
    }
    return mapped;
  }

  #callOptions(options: HostCallOptions): CallOptions {
    const timeoutMs = options.timeoutMs ?? this.#o.callTimeoutMs;
    const { maxTotalTimeoutMs, signal, onProgress } = options;
    // The common call sets none of them; it shares one empty object.
    if (timeoutMs === undefined && maxTotalTimeoutMs === undefined && signal === undefined && onProgress === undefined) return NO_CALL_OPTIONS;
    return {
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeoutMs }),
      ...(signal === undefined ? {} : { signal }),
      ...(onProgress === undefined ? {} : { onProgress }),
    };
  }

  /**
   * A plugin failed: stop its session and (for calls) put it on the backoff
   * ladder, once per process however many calls saw the process die. A
   * handshake session launches a process per call, so each failed launch
   * counts and the session's other calls go on.
   */
  async #pluginFailed(pluginId: string, runtime: PluginRuntime, failure: HostError, purpose: DispatchPurpose): Promise<void> {
    if (runtime.session.shape !== 'handshake') {
      const first = runtime.claimFailure(failure);
      await this.#stopRuntime(pluginId, runtime);
      if (!first) return;
    }
    this.#logger.warn({ plugin_id: pluginId, code: failure.code }, 'plugin failed');
    this.events.emit('crash', { plugin_id: pluginId, code: failure.code, stderr_tail: String(failure.details.stderr_tail ?? '') });
    if (purpose !== 'call') return;
    const recorded = await this.#recordCrash(pluginId, await this.#untrustedCause(pluginId, runtime, failure));
    if (recorded.isErr()) this.#logger.error({ plugin_id: pluginId, code: recorded.error.code }, 'could not record a plugin failure');
  }

  #runtime(plugin: InstalledPlugin): Result<PluginRuntime, HostError> {
    if (this.#closed) return err(closedError());
    const id = plugin.plugin_id;
    const retiring = this.#retiring.get(id);
    if (retiring !== undefined) return err(retiring);
    const existing = this.#runtimes.get(id);
    if (existing !== undefined && !existing.closed) return ok(existing);
    const session = this.#session(plugin);
    if (session.isErr()) return err(session.error);
    const runtime = new PluginRuntime(session.value, this.#clock, this.#o.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, () => {
      if (this.#runtimes.get(id) === runtime) this.#runtimes.delete(id);
      this.#logger.debug({ plugin_id: id }, 'idle plugin stopped');
    });
    this.#runtimes.set(id, runtime);
    this.#runtimeBindings.set(runtime, plugin.lock.binding);
    return ok(runtime);
  }

  #session(plugin: InstalledPlugin): Result<PluginSession, HostError> {
    const id = plugin.plugin_id;
    const o = this.#o;
    const launch = this.#launcher(plugin);
    const shape = (plugin.descriptor?.shape ?? 'mcp-plugin') as ManifestShape;
    const tools = [...new Set(plugin.variants.map((v) => v.tool_name))];
    const common = { launch, clock: this.#clock, logger: this.#logger };
    const mcp = {
      ...common,
      expectedTools: tools,
      ...(o.callTimeoutMs === undefined ? {} : { defaultTimeoutMs: o.callTimeoutMs }),
      ...(o.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeoutMs: o.maxTotalTimeoutMs }),
      ...(o.maxInFlight === undefined ? {} : { maxInFlight: o.maxInFlight }),
    };
    switch (shape) {
      case 'mcp-plugin':
        return ok(new McpSession(mcp));
      case 'esm-module':
        // The ESM runner serves the plugin over MCP; its launcher starts the runner on the verified entry.
        return ok(new EsmSession(mcp));
      case 'ndjson-rpc':
        return NdjsonRpcSession.create({
          ...common,
          tools,
          respawn: true,
          ...(o.callTimeoutMs === undefined ? {} : { callTimeoutMs: o.callTimeoutMs }),
          ...(o.maxInFlight === undefined ? {} : { maxInFlight: o.maxInFlight }),
        });
      case 'handshake':
        return HandshakeSession.create({
          ...common,
          random: this.#random,
          pluginId: id,
          allowedCapabilities: o.handshakeCapabilities?.[id] ?? [],
        });
      default:
        return err(hostError('PLUGIN_SHAPE_UNSUPPORTED', `plugin '${id}' has shape ${shape}, which this host cannot run from an install`, { details: { plugin_id: id, shape } }));
    }
  }

  /**
   * Starts one process of `plugin`: checks the catalog still pins the binding
   * this session was built for, builds the environment from the allowlist
   * and the declared credentials only, verifies the executable and spawns it
   * in the sandbox.
   */
  #launcher(plugin: InstalledPlugin): ProcessLauncher {
    const id = plugin.plugin_id;
    const binding = plugin.lock.binding;
    const caps = plugin.descriptor?.capabilities ?? { network: false, fs_write_dir: '', env_allow: [] };
    const declared = plugin.descriptor?.needs_user_creds ?? [];
    const dataRoot = dirname(this.#layout.dataDir(id));
    const policy = this.#sandboxPolicy(id, caps);
    const writeComponents = writeDirComponents(caps.fs_write_dir);
    const interpreter = binding.interpreter?.path ?? (plugin.descriptor?.shape === 'esm-module' ? (this.#o.esmRunnerArgv?.[0] ?? process.execPath) : undefined);
    return () => {
      if (this.#closed) return errAsync(closedError());
      if (policy.isErr()) return errAsync(policy.error);
      if (writeComponents.isErr()) return errAsync(writeComponents.error);
      return this.#checkStillInstalled(plugin)
        .andThen(() => this.#spawner.pluginIdentity(dataRoot, id))
        .andThen((identity) =>
          openPluginDirectories({ dataRoot, pluginId: id, writeComponents: writeComponents.value, fsWriteDir: caps.fs_write_dir, ...(identity === undefined ? {} : { owner: identity }) }).map(
            (directories) => ({ identity, directories }),
          ),
        )
        .andThen(({ identity, directories }) =>
          this.#secrets
            .get(id)
            .andThen((stored) =>
              this.#env.buildEnv({
                parentEnv: this.#o.env ?? process.env,
                envAllow: caps.env_allow,
                credentials: Object.fromEntries(Object.entries(stored).filter(([name]) => declared.includes(name))),
                fixed: { HOME: directories.data.path, TMPDIR: directories.write.path, PATH: pluginSearchPath(interpreter) },
                pluginId: id,
              }),
            )
            .andThen((env) =>
              // The spawner releases the verified descriptors and the directories whatever the outcome.
              this.#verifiedCode(plugin).andThen((executable) =>
                this.#spawner.spawn({
                  ...policy.value,
                  writeDir: directories.write.path,
                  executable,
                  env,
                  directories,
                  ...(identity === undefined ? {} : { identity }),
                  // The rest of the install root is checked while the sandbox is set up; the plugin runs only once it passed.
                  gate: () => verifyBindingTree(binding),
                }),
              ),
            )
            .orElse((error) => {
              directories.close();
              return errAsync(error);
            }),
        )
        .andThen((process) => this.#adopt(id, process, binding.executable_sha256));
    };
  }

  /**
   * Verifies the pinned code just before a spawn: the executable, or for an
   * `esm-module` plugin its entry module, re-hashed and copied (never
   * cached), whose verified bytes the child runs. Every other file of the
   * install root is checked against the binding's file list (unchanged stat
   * identities vouch for unchanged files) by the spawn's gate, before the
   * plugin runs.
   */
  #verifiedCode(plugin: InstalledPlugin): ResultAsync<VerifiedExecutable, HostError> {
    const binding = plugin.lock.binding;
    // A refused main file is reported as the tree check reports it, naming the file within its install root.
    return this.#verifiedMain(plugin).orElse((error) => verifyBindingTree(binding).andThen(() => errAsync(error)));
  }

  /** The pinned main file (the executable or the ESM entry), verified and ready to run. */
  #verifiedMain(plugin: InstalledPlugin): ResultAsync<VerifiedExecutable, HostError> {
    const binding = plugin.lock.binding;
    const options = { copyDir: this.#layout.execDir, random: this.#random };
    if (plugin.descriptor?.shape !== 'esm-module') return verifyExecutableBinding(binding, options);
    const runnerArgv = this.#o.esmRunnerArgv;
    return verifyModuleEntry(binding, options).andThen((verifiedEntry) =>
      esmRunnerCommand(binding.install_root, { verifiedEntry, ...(runnerArgv === undefined ? {} : { runnerArgv }) }),
    );
  }

  /** Another process may have upgraded or removed the plugin since this session was built; it then waits for the next open. */
  #checkStillInstalled(plugin: InstalledPlugin): ResultAsync<void, HostError> {
    const id = plugin.plugin_id;
    return this.#plugin(id).andThen((now) =>
      sameBinding(now.lock.binding, plugin.lock.binding)
        ? ok(undefined)
        : err(
            hostError('PLUGIN_PENDING_RESTART', `plugin '${id}' was reinstalled since this host started it; the new version is callable on the next open`, {
              details: { plugin_id: id },
            }),
          ),
    );
  }

  /** Wires a fresh process into the events, or stops it when the host closed while it was starting. */
  #adopt(pluginId: string, process: PluginProcess, sha256: string): ResultAsync<PluginProcess, HostError> {
    if (this.#closed) return ResultAsync.fromSafePromise(process.stop()).andThen(() => errAsync(closedError()));
    this.#logger.debug({ plugin_id: pluginId, pid: process.pid }, 'plugin process started');
    this.events.emit('spawn', { plugin_id: pluginId, pid: process.pid, sandboxed: this.#spawner.backendName !== 'none', sha256 });
    const off = process.onStderrLine((line) => this.events.emit('stderr', { plugin_id: pluginId, line }));
    void process.exited.then((exit) => {
      off();
      this.events.emit('exit', { plugin_id: pluginId, pid: process.pid, exit });
    });
    return okAsync(process);
  }

  /** What a plugin's sandbox allows: what `spawn` enforces and `info()` reports. */
  #sandboxPolicy(pluginId: string, caps: DeclaredCapabilities): Result<SandboxPolicyRequest, HostError> {
    const dataDir = this.#layout.dataDir(pluginId);
    return writeDirComponents(caps.fs_write_dir).map((components) => {
      const paths = pluginDirectoryPaths(dirname(dataDir), pluginId, components);
      return { network: caps.network, writeDir: paths.write, hiddenPaths: [this.#layout.root], readOnlyPaths: [paths.data], pluginId };
    });
  }

  #enforcedPolicy(plugin: InstalledPlugin): EnforcedPolicy | null {
    const caps = plugin.descriptor?.capabilities;
    if (caps === undefined) return null;
    const policy = this.#sandboxPolicy(plugin.plugin_id, caps);
    if (policy.isErr()) return null;
    const identity = this.#spawner.pluginIdentity(dirname(this.#layout.dataDir(plugin.plugin_id)), plugin.plugin_id);
    // The launch also mounts the pinned interpreter and, for Node under an integrity policy, the main-module guard.
    const pin = plugin.lock.binding.interpreter;
    const runtime = pin === undefined ? [] : [pin.path, ...(pin.kind === 'node' && pin.node_main === 'integrity_policy' ? [NODE_MAIN_GUARD] : [])];
    return this.#spawner.describe({
      ...policy.value,
      readOnlyPaths: [...(policy.value.readOnlyPaths ?? []), ...runtime],
      installRoot: plugin.lock.binding.install_root,
      ...(identity.isOk() && identity.value !== undefined ? { identity: identity.value } : {}),
    });
  }

  #snapshotPlugin(pluginId: string): InstalledPlugin | undefined {
    return this.#indexSnapshot().get(pluginId);
  }

  #operation(opId: string): NamedOperation<InstalledPlugin> | undefined {
    this.#indexSnapshot();
    return this.#operations.get(opId);
  }

  /** The snapshot's plugins by id; calls look plugins and operations up on every dispatch, so each snapshot is indexed once. */
  #indexSnapshot(): ReadonlyMap<string, InstalledPlugin> {
    if (this.#indexed !== this.#snapshot) {
      this.#indexed = this.#snapshot;
      const plugins = listPlugins(this.#snapshot);
      this.#index = new Map(plugins.map((p) => [p.plugin_id, p]));
      this.#operations = operationIndex(plugins);
    }
    return this.#index;
  }

  #plugin(pluginId: string): ResultAsync<InstalledPlugin, HostError> {
    return this.#refresh().andThen((snapshot) => {
      const plugin = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: pluginId });
      return plugin === undefined ? err(notInstalled(pluginId)) : ok(plugin);
    });
  }

  #pending(pluginId: string): boolean {
    return !this.#active.has(pluginId);
  }

  #isoNow(): string {
    return new Date(this.#clock.now()).toISOString();
  }

  #refresh(): ResultAsync<CatalogSnapshot, HostError> {
    return this.#store.snapshot().map((snapshot) => {
      this.#snapshot = snapshot;
      return snapshot;
    });
  }

  /** Rewrites one plugin's state row in a catalog transaction; returns the row as written. */
  #updateState(pluginId: string, update: (row: PluginStateRecord) => PluginStateRecord): ResultAsync<PluginStateRecord, HostError> {
    return this.#store
      .transaction((current) => {
        if (current.plugins[pluginId] === undefined || current.states[pluginId] === undefined) return err(notInstalled(pluginId));
        return ok(updatePluginState(current, pluginId, (row) => withStatus(update(row))));
      })
      .map((snapshot) => {
        this.#snapshot = snapshot;
        return snapshot.contents.states[pluginId]!;
      });
  }

  /**
   * Checks the code `runtime` ran again after it failed. A plugin whose code
   * changed on disk is quarantined for good now, not after the backoff
   * ladder; this also covers a Node plugin whose interpreter refused bytes
   * swapped in between the host's check and its own (the integrity policy).
   * Only while the catalog still pins that very binding: another process may
   * have upgraded the plugin and deleted the old install root meanwhile, and
   * the new install must not pay for the old one's missing files. An upgrade
   * publishes before it deletes, so reading the catalog after the check sees it.
   */
  async #untrustedCause(pluginId: string, runtime: PluginRuntime, failure: HostError): Promise<HostError> {
    const ran = this.#runtimeBindings.get(runtime);
    if (failure.code === 'PLUGIN_EXECUTABLE_UNTRUSTED' || ran === undefined) return failure;
    const checked = await recheckPinnedCode(ran);
    if (checked.isOk() || checked.error.code !== 'PLUGIN_EXECUTABLE_UNTRUSTED') return failure;
    const refreshed = await this.#refresh();
    if (refreshed.isErr()) return failure;
    const current = lookupPlugin(refreshed.value, { profile: refreshed.value.profile, plugin_id: pluginId });
    return current !== undefined && sameBinding(current.lock.binding, ran) ? checked.error : failure;
  }

  #recordCrash(pluginId: string, failure: HostError): ResultAsync<void, HostError> {
    const permanent = failure.code === 'PLUGIN_EXECUTABLE_UNTRUSTED';
    const reason = permanent ? String(failure.details.reason ?? 'digest_mismatch') : 'crash';
    this.#lastFailureAt.set(pluginId, this.#clock.now());
    return this.#updateState(pluginId, (row) =>
      withCrashState(
        row,
        recordFailure(crashStateOf(row), { code: failure.code, reason, now: this.#clock.now(), permanent }, this.#o.backoffScheduleMs ?? CRASH_BACKOFF_SCHEDULE_MS),
      ),
    ).map((row) => {
      const permanentNow = row.permanent_quarantine === true;
      this.#logger.warn({ plugin_id: pluginId, retry_count: row.retry_count, permanent: permanentNow, next_retry_at: row.next_retry_at }, 'plugin quarantined');
      this.events.emit('quarantine', {
        plugin_id: pluginId,
        quarantined: true,
        permanent: permanentNow,
        retry_count: row.retry_count,
        ...(row.next_retry_at === null ? {} : { next_retry_at: Date.parse(row.next_retry_at) }),
      });
    });
  }

  /**
   * A call that started at `callStarted` succeeded: the failure history is
   * cleared, unless a failure was recorded after that call began (a call
   * beside a failed launch proves nothing about the next launch).
   */
  #clearBackoff(pluginId: string, callStarted: number): ResultAsync<void, HostError> {
    // A failure recorded by an earlier host necessarily predates this call.
    const failedBefore = (row: PluginStateRecord): boolean => inBackoff(row) && (this.#lastFailureAt.get(pluginId) ?? -Infinity) < callStarted;
    const state = this.#snapshotPlugin(pluginId)?.state;
    if (state === undefined || !failedBefore(state)) return okAsync(undefined);
    return this.#updateState(pluginId, (row) => (failedBefore(row) ? withCrashState(row, CLEAR_CRASH_STATE) : row)).map(() => {
      this.#logger.info({ plugin_id: pluginId }, 'plugin recovered; failure history cleared');
      this.events.emit('quarantine', { plugin_id: pluginId, quarantined: false, permanent: false, retry_count: 0 });
    });
  }

  #recordCanary(
    pluginId: string,
    outcome: { readonly status: 'passed'; readonly live: boolean } | { readonly status: 'failed'; readonly code: string } | { readonly status: 'skipped' },
  ): ResultAsync<void, HostError> {
    const now = this.#clock.now();
    const canaryAt = new Date(now).toISOString();
    let wasQuarantined = false;
    return this.#updateState(pluginId, (row) => {
      wasQuarantined = row.quarantined_at !== null;
      switch (outcome.status) {
        case 'passed': {
          const cleared = row.permanent_quarantine === true ? row : withCrashState(row, CLEAR_CRASH_STATE);
          return {
            ...cleared,
            needs_configuration: outcome.live ? false : row.needs_configuration === true,
            canary: { status: 'passed', last_run_at: canaryAt, consecutive_failures: 0 },
          };
        }
        case 'failed':
          return {
            ...withCrashState(row, canaryHold(row, outcome.code, now)),
            canary: { status: 'failed', last_run_at: canaryAt, consecutive_failures: (row.canary.consecutive_failures ?? 0) + 1 },
          };
        case 'skipped':
          return { ...row, needs_configuration: true, canary: { status: 'skipped', last_run_at: canaryAt, consecutive_failures: row.canary.consecutive_failures ?? 0 } };
      }
    }).map((row) => {
      const quarantined = row.quarantined_at !== null;
      if (quarantined === wasQuarantined && outcome.status !== 'failed') return;
      this.events.emit('quarantine', {
        plugin_id: pluginId,
        quarantined,
        permanent: row.permanent_quarantine === true,
        retry_count: row.retry_count,
      });
    });
  }

  /**
   * Stops the plugin's session for a remove or an upgrade: no new call
   * starts it meanwhile (they fail with PLUGIN_CALL_INTERRUPTED), the calls
   * in flight get `drainTimeoutMs` to finish, and those still running then
   * fail with PLUGIN_CALL_INTERRUPTED rather than HOST_CLOSED. With
   * `keepRefusing` new calls stay refused until the caller clears
   * `#retiring` (a remove, until its rows are gone).
   */
  #retireRuntime(
    pluginId: string,
    reason: 'removed' | 'upgraded',
    drainTimeoutMs: number | undefined,
    options: { readonly keepRefusing?: boolean } = {},
  ): ResultAsync<void, HostError> {
    const interrupted = hostError('PLUGIN_CALL_INTERRUPTED', `plugin '${pluginId}' was ${reason} while this call ran; the call was stopped`, {
      details: { plugin_id: pluginId, reason },
    });
    this.#retiring.set(pluginId, interrupted);
    const runtime = this.#runtimes.get(pluginId);
    const drainMs = drainTimeoutMs ?? this.#o.callTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    const retire = async (): Promise<void> => {
      if (runtime !== undefined) {
        this.#runtimes.delete(pluginId);
        this.#draining.add(runtime);
        try {
          await runtime.retire(interrupted, drainMs);
        } finally {
          this.#draining.delete(runtime);
        }
      }
      if (options.keepRefusing !== true) this.#retiring.delete(pluginId);
    };
    return ResultAsync.fromSafePromise(retire());
  }

  /** Stops the plugin's running session, or only `runtime` when given (a newer session is left alone). */
  #stopRuntime(pluginId: string, runtime?: PluginRuntime): ResultAsync<void, HostError> {
    const current = this.#runtimes.get(pluginId);
    if (current === undefined || (runtime !== undefined && current !== runtime)) {
      return runtime === undefined ? okAsync(undefined) : ResultAsync.fromSafePromise(runtime.close());
    }
    this.#runtimes.delete(pluginId);
    return ResultAsync.fromSafePromise(current.close());
  }

  async #missingCredentials(pluginId: string, needed: readonly string[]): Promise<string[]> {
    if (needed.length === 0) return [];
    const stored = await this.#secrets.get(pluginId);
    const values = stored.isOk() ? stored.value : {};
    return needed.filter((name) => values[name] === undefined || values[name] === '');
  }
}

/** Marks every plugin installed since the last open as activated (one transaction, only when there is one). */
function activateInstalled(store: CatalogStore, clock: Clock): ResultAsync<CatalogSnapshot, HostError> {
  const activate = (current: CatalogContents): CatalogContents => {
    const now = new Date(clock.now()).toISOString();
    let next = current;
    for (const [id, row] of Object.entries(current.states)) {
      if (row.activated_at === null) next = updatePluginState(next, id, (r) => withStatus({ ...r, activated_at: now }));
    }
    return next;
  };
  return store.snapshot().andThen((snapshot) =>
    Object.values(snapshot.contents.states).some((row) => row.activated_at === null) ? store.transaction(activate) : okAsync(snapshot),
  );
}

/** A row with the status its conditions give (pending restart = never activated). */
function confirm(callback: ConfirmationCallback | undefined, request: ConfirmationRequest): ResultAsync<void, HostError> {
  const denied = (why: string): HostError =>
    hostError('PLUGIN_CONFIRMATION_DENIED', `${request.op_id} needs confirmation: ${why}`, { details: { op_id: request.op_id, plugin_id: request.plugin_id } });
  if (callback === undefined) return errAsync(denied('no confirmation callback is configured'));
  return ResultAsync.fromPromise(
    (async () => callback(request))(),
    () => denied('the confirmation callback failed'),
  ).andThen((approved) => (approved === true ? okAsync(undefined) : errAsync(denied('the confirmation callback refused it'))));
}

/** Whether the plugin is inside a backoff window (the common case, no window, costs no await). */
function inBackoffNow(plugin: InstalledPlugin | undefined): boolean {
  return plugin?.state !== undefined && inBackoff(plugin.state);
}

/**
 * A call whose session the host stopped because another call failed gets
 * that failure's code (its session reports HOST_CLOSED, which would wrongly
 * suggest the host itself was closed).
 */
function stoppedBySibling(error: HostError, runtime: PluginRuntime, hostClosed: boolean): HostError {
  const cause = runtime.failure;
  if (error.code !== 'HOST_CLOSED' || hostClosed || cause === undefined) return error;
  return hostError(cause.code, `the plugin was stopped because another call failed: ${cause.message}`, {
    details: { ...cause.details, stopped_by_other_call: true },
    cause,
  });
}

/**
 * A call cut short because its plugin was removed or upgraded gets the
 * retirement's PLUGIN_CALL_INTERRUPTED (its session reports HOST_CLOSED,
 * which would wrongly suggest the host itself was closed).
 */
function stoppedByRetirement(error: HostError, runtime: PluginRuntime, hostClosed: boolean): HostError {
  const retiredBy = runtime.retiredBy;
  return error.code === 'HOST_CLOSED' && !hostClosed && retiredBy !== undefined ? retiredBy : error;
}

/** Whether two catalog entries pin the same installed code (the same install root and digest). */
function sameBinding(a: ExecutableBindingRecord, b: ExecutableBindingRecord): boolean {
  return a.install_root === b.install_root && a.executable_sha256 === b.executable_sha256;
}

function closedError(): HostError {
  return hostError('HOST_CLOSED', 'this PluginHost was closed');
}

function notInstalled(pluginId: string): HostError {
  return hostError('PLUGIN_NOT_FOUND', `plugin '${pluginId}' is not installed in this profile`, { details: { plugin_id: pluginId } });
}
