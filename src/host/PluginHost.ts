import type {
  CompleteResult,
  GetPromptResult,
  LoggingLevel,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { lstat } from 'node:fs/promises';
import { errAsync, okAsync, ResultAsync, type Result } from 'neverthrow';
import { listPlugins, lookupPlugin, type InstalledPlugin } from '../catalog/catalogContents.js';
import { CatalogStore } from '../catalog/CatalogStore.js';
import type { CatalogSnapshot } from '../catalog/catalogTypes.js';
import { EnvDenylist, type EnvDenylistOptions } from '../env/EnvDenylist.js';
import { hostError, type HostError } from '../errors/HostError.js';
import { HostEvents, type HostEventSubscriptions } from '../events/HostEvents.js';
import { Installer, type InstallInspection, type InstallResult, type PackageInstallChoices } from '../installer/Installer.js';
import type { PackageLimits } from '../installer/limits.js';
import type { NpmSettings } from '../installer/npmFetch.js';
import type { WrapOptions, WrappedServer } from '../installer/wrapNpmSource.js';
import type { ManifestPreset } from '../manifest/ManifestValidator.js';
import { NamespaceLock, type ProfileKind } from '../namespace/NamespaceLock.js';
import type { Clock, Logger, Random } from '../ports/ports.js';
import { ProfileLayout } from '../profile/ProfileLayout.js';
import { SandboxSpawner, type SandboxSpawnerOptions } from '../sandbox/SandboxSpawner.js';
import { PreferredSecretStore } from '../secrets/KeychainSecretStore.js';
import type { SecretStore } from '../secrets/SecretStore.js';
import type { HostAuditOptions } from '../audit/callAudit.js';
import type { HostTelemetryOptions } from '../observability/telemetry.js';
import type { TrustCallback } from '../installer/trust.js';
import type { EsmHostLoaderOptions } from '../shapes/esm/EsmLoaderOptions.js';
import type { CallResult, ToolDescriptor } from '../shapes/PluginSession.js';
import type { ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import { confirm, frozenJsonCopy, riskRefusal, startRefusal, type ConfirmationCallback } from './admission.js';
import type { ClientRequestHandlers } from './clientRequests.js';
import { Canaries, type CanaryOptions, type CanaryOutcome } from './canaries.js';
import { aliasesOf, credentialsByEnv, CredentialSource, packageOrigin, UNKNOWN_ORIGIN } from './credentials.js';
import { errorWithoutSecrets } from '../secrets/redactedErrors.js';
import { CallSchemas } from './callSchemas.js';
import { ResultShaper, type HostOutputProfiles } from './resultShaping.js';
import { CallDispatcher, callError, type HostCallOptions } from './dispatch.js';
import type { QuarantineOptions, RemoveOptions } from './drain.js';
import { activateInstalled, closedError, HostCatalog, notInstalled, sameBinding } from './hostCatalog.js';
import { CatalogWatch } from './catalogWatch.js';
import type { NamedOperation } from './operations.js';
import {
  checkArguments,
  checkSetupArguments,
  HOST_OPTION_DEFAULTS,
  METHOD_OPTION_SCHEMAS,
  resolveHostConfig,
  type HostConfig,
  type NdjsonCrashPolicy,
  type NdjsonMalformedPolicy,
  type PluginRunOptions,
  type StdoutPolicy,
} from './hostConfig.js';
import { pluginInfo, pluginRow, type PluginInfo, type PluginRow } from './inventory.js';
import { PluginLauncher } from './launcher.js';
import { inventoryDescriptors, readInventoryResource, type InventoryResource, type InventoryResourceDescriptors } from './resources.js';
import { PluginRuntimes } from './runtimes.js';
import { ToolListRecords } from './toolListRecords.js';
import { PluginSurfaces, type CompletionReference, type CompletionRequest, type PluginRequestOptions } from './mcpSurface.js';
import { Supervisor } from './Supervisor.js';

export type { ConfirmationCallback, ConfirmationRequest } from './admission.js';
export type { ClientRequestContext, ClientRequestHandlers, ElicitationCallback, RootsCallback, SamplingCallback } from './clientRequests.js';
export type { CanaryOptions, CanaryOutcome } from './canaries.js';
export type { HostCallOptions } from './dispatch.js';
export type { NdjsonCrashPolicy, NdjsonMalformedPolicy, PluginRunOptions, StdoutPolicy } from './hostConfig.js';
export type { QuarantineOptions, RemoveOptions } from './drain.js';
export type { CompletionReference, CompletionRequest, PluginRequestOptions } from './mcpSurface.js';
export type { InventoryResource, InventoryResourceDescriptors } from './resources.js';

/** Default idle time before a running plugin is stopped: 5 minutes (from `etc/host-options.json`). */
export const DEFAULT_IDLE_TIMEOUT_MS: number = HOST_OPTION_DEFAULTS.idleTimeoutMs;

/**
 * Default time a remove or an upgrade lets the plugin's calls in flight
 * finish before stopping it, when the host has no `callTimeoutMs`: 30 s (from `etc/host-options.json`).
 */
export const DEFAULT_DRAIN_TIMEOUT_MS: number = HOST_OPTION_DEFAULTS.drainTimeoutMs;

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
   * `memoryLimitBytes`, `maxProcesses`, `cpuWeight` and `cpuQuota` for every
   * plugin, `pluginLimits` by plugin id, `requireTreeLimits` to refuse hosts
   * without control groups.
   */
  readonly sandbox?: SandboxSpawnerOptions;
  /** A ready spawner, replacing the one built from `sandbox`. */
  readonly spawner?: SandboxSpawner;
  /**
   * Where plugin credentials live. Default: the OS keychain where one
   * answers (Linux: the Secret Service through `secret-tool`, looked up with
   * `env`), else a 0600 file store inside the profile, which the sandbox hides.
   */
  readonly secretStore?: SecretStore;
  /**
   * Also take each plugin's declared credentials (`needs_user_creds`) from
   * `env`, as the GUM contract passes them through from the user's
   * environment; a value set there wins over a stored one. Only declared
   * names are read, and the env denylist still applies. Default false:
   * credentials come from the secret store alone.
   */
  readonly credentialsFromEnv?: boolean;
  /**
   * The `clientInfo` MCP-speaking plugins receive in `initialize` (the GUM
   * contract's host sends `{"name":"gum","version":...}`). Default
   * `{ name: 'mcp-plugin-host', version: <this library's version> }`.
   */
  readonly clientInfo?: { readonly name: string; readonly version: string };
  /** Extra env denylist rules on top of the preset's. */
  readonly envDenylist?: Omit<EnvDenylistOptions, 'preset'>;
  /** Extra reserved namespace prefixes on top of the preset's. */
  readonly reservedNamespaces?: readonly string[];
  /** Public keys whose package signatures are trusted. */
  readonly trustedKeys?: readonly string[];
  /** Refuse packages not signed by a trusted key. Default false. */
  readonly requireSignatures?: boolean;
  /**
   * Refuse packages installed from an archive or a registry that ship no
   * LICENSE file at their root (PLUGIN_LICENSE_MISSING), as the GUM author
   * guide requires; local directories are exempt. Default true under the
   * `gum` preset, false under `neutral`.
   */
  readonly requireLicense?: boolean;
  /**
   * Make every install durable before it is committed: each file and
   * directory of the new install root, and the folders it was moved into,
   * are fsynced before the catalog transaction names it. Without it (the
   * default) the catalog is durable but the installed files may not be: after
   * a power loss a committed plugin can have empty or missing files, which its
   * tree check refuses at the next start (it fails closed; installing it again
   * repairs it). Costs about one fsync per file: 200–350 ms for a published
   * server of 2,600 files. Default false.
   */
  readonly durableInstall?: boolean;
  /** Archive limits. */
  readonly packageLimits?: Partial<PackageLimits>;
  /** `PATH` searched once, at install, for `#!/usr/bin/env <program>` interpreters. Default `process.env.PATH`. */
  readonly interpreterSearchPath?: string;
  /**
   * Which npm fetches `npm:` sources (`cli`: an `npm-cli.js`, run with this
   * Node) and which registry it asks. Default: the npm shipped with this
   * Node, https://registry.npmjs.org/.
   */
  readonly npm?: NpmSettings;
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
  /**
   * What an MCP-speaking plugin's stdout line that is not JSON-RPC does:
   * `tolerate` (default, so published servers that print banners or logs
   * work) drops and counts it and emits a `stdout` event; `strict` fails the
   * plugin's calls with PLUGIN_INVALID_JSON or PLUGIN_MALFORMED_RESPONSE.
   */
  readonly stdout?: StdoutPolicy;
  /** Cap on one line a plugin writes, in bytes; an MCP answer over it fails that call only (PLUGIN_RESULT_TOO_LARGE). Default 1 MiB. */
  readonly maxFrameBytes?: number;
  /** Time for an MCP-speaking plugin to start (`initialize` and the first `tools/list`). Default 30 s. */
  readonly startupTimeoutMs?: number;
  /**
   * Time for the whole one start of a server that ships no manifest (an npm
   * server, an MCP Bundle) at install or wrap, to list its tools: its
   * `initialize` and every `tools/list` page, each of which gets
   * `startupTimeoutMs` as at any start. Default the larger of
   * `startupTimeoutMs` and 120 s, so a tight `startupTimeoutMs` does not
   * refuse a server that lists many tools over many pages.
   */
  readonly introspectionTimeoutMs?: number;
  /**
   * Time for a handshake-shape plugin to answer the handshake line of each
   * launch (its invocation timeout is `callTimeoutMs`). Default 5 s.
   */
  readonly handshakeTimeoutMs?: number;
  /**
   * What a malformed answer of an ndjson-rpc plugin (not JSON, not the
   * protocol's response shape, over the frame cap) costs: `fail-call`
   * (default, the mcptest protocol) fails that call and leaves the child
   * running; `stop-plugin` also stops the plugin and counts it toward quarantine.
   */
  readonly ndjsonMalformed?: NdjsonMalformedPolicy;
  /**
   * After an ndjson-rpc plugin crashes: `sticky` (default, the mcptest
   * protocol) reports every later call as that crash (`details.sticky`)
   * until `reload` or `unquarantine`; `respawn` quarantines it on the backoff
   * ladder and starts a fresh process when the wait is over.
   */
  readonly ndjsonCrash?: NdjsonCrashPolicy;
  /**
   * Run options of single plugins, by plugin id, overriding `stdout`,
   * `maxFrameBytes`, `startupTimeoutMs`, `maxInFlight`, `callTimeoutMs`,
   * `handshakeTimeoutMs`, `ndjsonMalformed` and `ndjsonCrash`.
   */
  readonly plugins?: Readonly<Record<string, PluginRunOptions>>;
  /** The crash backoff ladder; one failure more than it has steps quarantines for good. Default 30, 60, 120, 240, 480 s. */
  readonly backoffScheduleMs?: readonly number[];
  /**
   * The command that starts the ESM runner for `esm-module` plugins, before
   * its arguments (see `esmRunnerCommand`). Default: this Node binary
   * running `esm-runner.js` beside the built library, which exists in the built package;
   * code run from source (tsx, vitest) must point it at a built runner.
   */
  readonly esmRunnerArgv?: readonly string[];
  /**
   * The Open Discovery loader's strict modes (`STRICT_CAPABILITIES`,
   * `STRICT_TOOLS`) for every installed `esm-module` plugin, off by default
   * as in the seed (`esmLoaderOptionsFromEnv` reads them from the
   * environment), and `validateTool`, the application's check of each tool
   * such a plugin lists (the seed's tool validation manager).
   */
  readonly esmLoader?: EsmHostLoaderOptions;
  /** Capabilities the host grants each handshake-shape plugin (its allow-list), by plugin id. */
  readonly handshakeCapabilities?: Readonly<Record<string, readonly string[]>>;
  /** Approves `high_stakes_write` calls; without it they are refused. */
  readonly confirm?: ConfirmationCallback;
  /**
   * Answers plugins' requests to their client (`sampling/createMessage`,
   * `elicitation/create`, `roots/list`), each called with the request and the
   * plugin id, for plugins whose manifest declares that kind
   * (`declared_capabilities.client_requests`). A kind without a callback, or
   * not declared, is refused at once with a JSON-RPC error. A call's own
   * `clientRequests` wins over these.
   */
  readonly clientRequests?: ClientRequestHandlers;
  /** The most time one answer to a plugin's client request may take; it never outlives the call that caused it. Default 60 s. */
  readonly clientRequestTimeoutMs?: number;
  /**
   * When a plugin installed through this host becomes callable: `next-open`
   * (the contract's restart semantics) or `immediate`. Default `next-open`.
   */
  readonly activation?: 'next-open' | 'immediate';
  /**
   * Hot reload: read the profile's catalog generation every `pollMs`
   * (default 1 s) and follow what any process installs, removes or upgrades
   * there, without reopening: installed plugins are callable at once (none is
   * pending restart), removed ones are gone, and a removed or upgraded
   * plugin's running process finishes its calls in flight (up to the drain
   * deadline) before it stops, the next call starting the new version. Each
   * such generation is a `catalog:changed` event; a gateway on this host
   * tells its clients `tools/list_changed`. Off by default (the contract's
   * restart semantics).
   */
  readonly hotReload?: { readonly pollMs?: number };
  /** Time source for supervision, idle stops, protocol timeouts and canary dates. Default the system clock. */
  readonly clock?: Clock;
  /** Randomness for txids, install roots and request ids. */
  readonly random?: Random;
  /** Structured logs (pino-compatible). Default silent. */
  readonly logger?: Logger;
  /**
   * An audit record per call (caller, op id, plugin version and code digest,
   * outcome, duration; arguments only with `arguments: true`, secret fields
   * redacted), written to `sink` (e.g. a `JsonlAuditSink`). The host never
   * closes the sink: the application does, after closing the host.
   */
  readonly audit?: HostAuditOptions;
  /** OpenTelemetry providers to use instead of the global ones; without any, spans and metrics cost nothing. */
  readonly telemetry?: HostTelemetryOptions;
  /**
   * The application's output profiles: definitions, and bindings by qualified
   * tool name that replace (or add) a tool's profile. Checked at open
   * (HOST_INVALID_OPTIONS with the problems).
   */
  readonly outputProfiles?: HostOutputProfiles;
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

/** Options of {@link PluginHost.inspect}: how a package is trusted and checked. */
export type HostInspectOptions = PackageInstallChoices;

/** Options of {@link PluginHost.install}. */
export interface HostInstallOptions extends HostInspectOptions {
  /** Run the declared canary right after the install (skipped, with needs_configuration, when credentials are missing). Default true. */
  readonly canary?: boolean;
  /**
   * Shown the plugin's namespace owner, terms of service, risk, license and
   * powers after every check passed and before anything is written; false
   * refuses the install with PLUGIN_TRUST_DECLINED. Not asked again when the
   * same namespace owner installed the plugin before (kept across remove),
   * unless an upgrade of the installed plugin asks for a power it does not
   * have (the network, another writable directory, an env name, an egress
   * destination or a client request kind), or makes a tool easier to call
   * (a lower risk class, a new tool above read, a dropped high_stakes_write
   * confirmation: `TrustRequest.risk_changes`; new powers:
   * `TrustRequest.added_capabilities`).
   * Without it, calling install is the acceptance, except of such an
   * upgrade or reinstall: tools made easier to call, or a power the plugin did
   * not have that this install's `grant` does not name, are refused with
   * PLUGIN_TRUST_DECLINED (`details.reason: 'risk_lowered'` or
   * `'capabilities_widened'`, `details.added_capabilities`).
   * A server that ships no manifest is started once to list its tools; that
   * start is judged first, before any of its code runs: with network it is
   * asked about (`TrustRequest.stage: 'introspection'`), and without this
   * callback what the install would refuse whatever the server lists (a
   * registry change, an ungranted power or credential name, another
   * namespace owner, a signer change) is refused before it.
   */
  readonly accept?: TrustCallback;
  /** How long the previous version's calls in flight may run before it is stopped; see {@link RemoveOptions.drainTimeoutMs}. */
  readonly drainTimeoutMs?: number;
}

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
  readonly #events = new HostEvents();
  readonly #config: HostConfig;
  readonly #layout: ProfileLayout;
  readonly #secrets: SecretStore;
  readonly #installer: Installer;
  readonly #catalog: HostCatalog;
  readonly #toolLists: ToolListRecords;
  readonly #launcher: PluginLauncher;
  readonly #runtimes: PluginRuntimes;
  readonly #supervisor: Supervisor;
  readonly #dispatcher: CallDispatcher;
  readonly #canaries: Canaries;
  readonly #surfaces: PluginSurfaces;
  /**
   * Plugins callable in this session without hot reload, with the install
   * each may run: those installed when it opened, plus `immediate` installs.
   * A plugin whose catalog entry pins another install (an upgrade, or a
   * remove and reinstall, by this host or another process) is pending restart.
   */
  readonly #active: Map<string, ExecutableBindingRecord>;
  readonly #credentials: CredentialSource;
  /** Whether the host was opened with `hotReload`. */
  readonly #hotReload: boolean;
  /** Follows what other processes do to the profile: everything with `hotReload`, else what must stop now. */
  readonly #watch: CatalogWatch;
  #closed = false;
  /** Aborted by {@link PluginHost.close}, before its plugins stop: ends waits no process holds (answer validations). */
  readonly #closing = new AbortController();

  /** Typed events, subscribe-only (each is also published on `node:diagnostics_channel`). */
  get events(): HostEventSubscriptions {
    return this.#events.subscriptions;
  }

  private constructor(config: HostConfig, parts: OpenParts) {
    const { clock, random, logger } = config;
    const events = this.#events;
    const isClosed = (): boolean => this.#closed;
    this.#config = config;
    this.#layout = parts.layout;
    this.#secrets = config.secretStore ?? new PreferredSecretStore({ profileDir: parts.layout.root, appName: config.appName, env: config.env });
    this.#active = new Map(Object.entries(parts.snapshot.contents.plugins).map(([id, locked]) => [id, locked.binding]));
    this.#installer = new Installer({
      store: parts.store,
      layout: parts.layout,
      envDenylist: parts.env,
      hostEnv: config.env,
      namespaceLock: parts.namespaceLock,
      profileKind: config.profileKind,
      preset: config.preset,
      clock,
      random,
      requireSignatures: config.requireSignatures,
      requireLicense: config.requireLicense,
      durableInstall: config.durableInstall,
      ...(config.trustedKeys === undefined ? {} : { trustedKeys: config.trustedKeys }),
      ...(config.packageLimits === undefined ? {} : { limits: config.packageLimits }),
      ...(config.interpreterSearchPath === undefined ? {} : { searchPath: config.interpreterSearchPath }),
      ...(config.npm === undefined ? {} : { npm: config.npm }),
      spawner: parts.spawner,
      // A server started once at install to list its tools gets the time any start of it gets for each request, and the whole start its own cap.
      introspectionTimeoutMs: config.introspectionTimeoutMs,
      startupTimeoutMs: config.startupTimeoutMs,
    });
    const catalog = new HostCatalog(parts.store, parts.snapshot);
    const credentials = new CredentialSource(this.#secrets, config.credentialsFromEnv ? config.env : undefined);
    this.#credentials = credentials;
    const launcher = new PluginLauncher({ layout: parts.layout, spawner: parts.spawner, credentials, env: parts.env, catalog, events, logger, random, config, isClosed });
    const toolLists = new ToolListRecords(parts.layout.root, logger, random);
    const runtimes = new PluginRuntimes({
      launcher,
      config,
      clock,
      logger,
      random,
      events,
      isClosed,
      onSessionCreated: (id, runtime) => this.#surfaces.adopt(id, runtime),
      onUnseenStartFailure: (id, runtime, failure) => void this.#supervisor.startFailedUnseen(id, runtime, failure),
      toolLists,
    });
    const supervisor = new Supervisor({ catalog, runtimes, events, clock, logger, backoffScheduleMs: config.backoffScheduleMs });
    const dispatcher = new CallDispatcher({ runtimes, supervisor, events, clock, config, isClosed, closing: this.#closing.signal, schemas: new CallSchemas(parts.layout, events), shaper: new ResultShaper(parts.layout, config.outputProfiles) });
    this.#catalog = catalog;
    this.#toolLists = toolLists;
    this.#launcher = launcher;
    this.#runtimes = runtimes;
    this.#supervisor = supervisor;
    this.#dispatcher = dispatcher;
    this.#canaries = new Canaries({ catalog, credentials, runtimes, dispatcher, supervisor, clock, logger, isActive: (id) => !this.#pending(id) });
    this.#surfaces = new PluginSurfaces({ catalog, runtimes, supervisor, events, clock, isClosed, isPending: (id) => this.#pending(id), knownSecrets: config.knownSecrets });
    this.#hotReload = config.hotReloadPollMs !== undefined;
    const mode = this.#hotReload ? 'hot' : 'restart';
    this.#watch = new CatalogWatch({ catalog, runtimes, events, logger, mode, pollMs: config.catalogPollMs, drainTimeoutMs: config.drainTimeoutMs });
    this.#watch.start();
  }

  /**
   * The profile directory {@link PluginHost.open} would use with `options`
   * (`profileDir`, else `$XDG_DATA_HOME/<appName>/<profile>`), the options
   * checked as open checks them (HOST_INVALID_OPTIONS). Nothing is created:
   * a caller that only reads a profile can tell a missing one from an empty
   * one without making it (open makes the directory and its layout).
   */
  static profileDirFor(options: PluginHostOptions = {}): Result<string, HostError> {
    return resolveHostConfig(options).map((config) => config.profileDir);
  }

  /**
   * Opens a profile: its catalog (recovering a consistent generation after a
   * crash), the sandbox (probed for real once per process) and the secret
   * store. Plugins installed since the last open become active now.
   */
  static open(options: PluginHostOptions = {}): ResultAsync<PluginHost, HostError> {
    const resolved = resolveHostConfig(options);
    if (resolved.isErr()) return errAsync(resolved.error);
    const config = resolved.value;
    const { preset, profile, profileKind } = config;
    const layout = new ProfileLayout(config.profileDir);
    const env = EnvDenylist.create({ preset, ...config.envDenylist });
    if (env.isErr()) return errAsync(env.error);
    const namespaceLock = NamespaceLock.create({
      preset,
      profileKind,
      ...(config.reservedNamespaces === undefined ? {} : { reserved: config.reservedNamespaces }),
    });
    if (namespaceLock.isErr()) return errAsync(namespaceLock.error);
    // The spawner exists before the host whose events its egress proxy reports on.
    let opened: PluginHost | undefined;
    const spawner: ResultAsync<SandboxSpawner, HostError> = config.spawner
      ? okAsync(config.spawner)
      : SandboxSpawner.create({
          ...config.sandbox,
          onEgress: (event) => {
            config.audit?.connection(event);
            if (opened !== undefined) opened.#events.emit('egress', event);
          },
        });
    const clock = config.clock;
    return spawner.andThen((sandbox) =>
      CatalogStore.open({ profileDir: layout.root, profile, clock, random: config.random })
        .andThen((store) => activateInstalled(store, clock).map((snapshot) => ({ store, snapshot })))
        .map(
          ({ store, snapshot }) =>
            (opened = new PluginHost(config, { layout, store, spawner: sandbox, env: env.value, namespaceLock: namespaceLock.value, snapshot })),
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
    const refused = checkArguments('install', { source }, { value: options, schema: METHOD_OPTION_SCHEMAS.install });
    if (refused !== undefined) return errAsync(refused);
    return this.#config.telemetry.install(source, () => this.#install(source, options));
  }

  #install(source: string, options: HostInstallOptions): ResultAsync<InstallOutcome, HostError> {
    const { canary: runCanary = true, drainTimeoutMs, ...installOptions } = options;
    const immediate = this.#config.activation === 'immediate';
    return this.#installer
      .install(source, {
        ...installOptions,
        // The package's origin is known once it is bound; until the row below is written, a missing credential is assumed.
        initialStatus: async (m) => {
          await this.#bindUnboundCredentials(m.plugin_id);
          return m.requirements.needs_user_creds.length > 0 ? 'needs_configuration' : 'installed_pending_restart';
        },
      })
      .andThen((installed) => {
        const id = installed.plugin_id;
        if (installed.unchanged === true) return this.info(id).map((plugin): InstallOutcome => ({ plugin, unchanged: true }));
        if (immediate) this.#active.set(id, installed.lock.binding);
        else this.#active.delete(id);
        this.#catalog.noteOwnInstall(id, installed.lock.binding);
        return ResultAsync.fromSafePromise(this.#credentialsMissing(installed)).andThen((needsConfiguration) => this.#recordInstall(installed, needsConfiguration, runCanary, drainTimeoutMs));
      });
  }

  /**
   * Whether the installed package lacks a declared credential. Values stored
   * under its id for another package are withheld, and said so in the log:
   * the user runs setup for this one.
   */
  async #credentialsMissing(installed: InstallResult): Promise<boolean> {
    const needed = installed.descriptor?.needs_user_creds ?? [];
    if ((await this.#credentials.missing(installed, needed)).length === 0) return false;
    if (await this.#credentials.storedForAnother(installed)) {
      this.#config.logger.warn(
        { plugin_id: installed.plugin_id, origin: packageOrigin(installed.lock) },
        'the credentials stored for this plugin id were set up for another package; they are withheld from this one until setup is run for it',
      );
    }
    return true;
  }

  /**
   * Records an origin on credentials stored before origins were, before a
   * package replaces (or first takes) the id: the package installed now; with
   * none installed but one installed before (its namespace owner or data
   * directory kept by a remove), an origin no package has (see
   * {@link CredentialSource.bindUnbound}). Values put in the store before any
   * install under the id in this profile (an application or the testing kit
   * giving a plugin its credentials ahead) are left for the first package.
   */
  async #bindUnboundCredentials(pluginId: string): Promise<void> {
    const snapshot = await this.#catalog.refresh();
    const previous = snapshot.isOk() ? lookupPlugin(snapshot.value, { profile: snapshot.value.profile, plugin_id: pluginId }) : undefined;
    let origin: string | undefined;
    if (previous !== undefined) origin = packageOrigin(previous.lock);
    else if (!snapshot.isOk() || Object.hasOwn(snapshot.value.contents.namespace_owners, pluginId) || (await pathExists(this.#layout.dataDir(pluginId)))) origin = UNKNOWN_ORIGIN;
    if (origin !== undefined) await this.#recordCredentialsOrigin(pluginId, origin);
  }

  /** {@link CredentialSource.bindUnbound}, a failure logged: a store that cannot be read or written now fails later reads the same way, so nothing is given then. */
  async #recordCredentialsOrigin(pluginId: string, origin: string): Promise<void> {
    const bound = await this.#credentials.bindUnbound(pluginId, origin);
    if (bound.isErr()) this.#config.logger.warn({ plugin_id: pluginId, code: bound.error.code }, 'could not record the origin of stored credentials');
  }

  #recordInstall(installed: InstallResult, needsConfiguration: boolean, runCanary: boolean, drainTimeoutMs: number | undefined): ResultAsync<InstallOutcome, HostError> {
    const id = installed.plugin_id;
    const immediate = this.#config.activation === 'immediate';
    const now = new Date(this.#config.clock.now()).toISOString();
    return this.#catalog
      .updateState(id, (row) => ({
        ...row,
        needs_configuration: needsConfiguration,
        ...(immediate ? { activated_at: now } : {}),
      }))
      .andThen(() => this.#runtimes.retire(id, 'upgraded', drainTimeoutMs ?? this.#config.drainTimeoutMs))
      .andThen(() => {
        if (!runCanary || installed.descriptor?.canary === undefined) return okAsync<CanaryOutcome | undefined, HostError>(undefined);
        return this.canary(id, { live: true }).map((c): CanaryOutcome | undefined => c);
      })
      .andThen((canary) => this.#runtimes.stop(id).map(() => canary))
      .andThen((canary) => this.info(id).map((plugin): InstallOutcome => (canary === undefined ? { plugin } : { plugin, canary })));
  }

  /** Runs every install check on a package without installing it (what a CLI's `validate` prints). */
  inspect(source: string, options: HostInspectOptions = {}): ResultAsync<InstallInspection, HostError> {
    if (this.#closed) return errAsync(closedError());
    const refused = checkArguments('inspect', { source }, { value: options, schema: METHOD_OPTION_SCHEMAS.inspect });
    if (refused !== undefined) return errAsync(refused);
    return this.#installer.inspect(source, options);
  }

  /** The `plugins` inventory, sorted by name. */
  list(): ResultAsync<readonly PluginRow[], HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#catalog.refresh().map((snapshot) => listPlugins(snapshot).map((p) => pluginRow(p, this.#pending(p.plugin_id, p))));
  }

  /** The `plugin/{name}` view of one plugin: status, operations, provenance, safe credential descriptors, enforced sandbox. */
  info(pluginId: string): ResultAsync<PluginInfo, HostError> {
    if (this.#closed) return errAsync(closedError());
    const refused = checkArguments('info', { pluginId });
    if (refused !== undefined) return errAsync(refused);
    return this.#catalog
      .plugin(pluginId)
      .map((plugin) =>
        pluginInfo(plugin, this.#pending(pluginId, plugin), this.#catalog.snapshot.install_generation, this.#launcher.startRefusal ?? this.#launcher.enforcedPolicy(plugin)),
      );
  }

  /** What a host's MCP server lists for the inventory: `<scheme>://plugins` and the `<scheme>://plugin/{name}` template. */
  resourceDescriptors(): InventoryResourceDescriptors {
    return inventoryDescriptors(this.#config.appName);
  }

  /**
   * The inventory as MCP resource payloads: `<scheme>://plugins` (rows under
   * `plugins`) and `<scheme>://plugin/{name}`, where the scheme is the app name.
   */
  resource(uri: string): ResultAsync<InventoryResource, HostError> {
    if (this.#closed) return errAsync(closedError());
    const refused = checkArguments('resource', { uri });
    if (refused !== undefined) return errAsync(refused);
    return readInventoryResource(uri, this.#config.appName, { list: () => this.list(), info: (id) => this.info(id) });
  }

  /**
   * Removes a plugin (install root and rows; its namespace owner stays
   * recorded). Its data directory is kept, and its stored credentials unless
   * `forgetSecrets`; kept ones reach a later install of the same package
   * only. With `forgetSecrets`, an id not installed (removed before) is not
   * an error: its stored credentials are deleted.
   */
  remove(pluginId: string, options: RemoveOptions = {}): ResultAsync<void, HostError> {
    if (this.#closed) return errAsync(closedError());
    const refused = checkArguments('remove', { pluginId }, { value: options, schema: METHOD_OPTION_SCHEMAS.remove });
    if (refused !== undefined) return errAsync(refused);
    const forget = options.forgetSecrets === true;
    const removing = this.#catalog.refresh().andThen((snapshot) => {
      const installed = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: pluginId });
      // Credentials kept after a plain remove must stay deletable: without this, forgetting them needed a reinstall.
      if (installed === undefined && forget) return this.#secrets.delete(pluginId);
      return ResultAsync.fromSafePromise(installed === undefined || forget ? Promise.resolve() : this.#bindKeptCredentials(installed))
        .andThen(() => this.#runtimes.retire(pluginId, 'removed', options.drainTimeoutMs ?? this.#config.drainTimeoutMs, { keepRefusing: true }))
        .andThen(() => this.#installer.remove(pluginId))
        .andThen(() => ResultAsync.fromSafePromise(this.#toolLists.discard(pluginId)))
        .andThen(() => (forget ? this.#secrets.delete(pluginId).mapErr((error) => removedButKept(pluginId, error)) : okAsync(undefined)))
        .andThen(() => {
          this.#active.delete(pluginId);
          return this.#catalog.refresh().map(() => undefined);
        });
    });
    return new ResultAsync(
      (async () => {
        const result = await removing;
        this.#runtimes.release(pluginId);
        return result;
      })(),
    );
  }

  /**
   * Records the removed package as the origin of credentials stored before
   * origins were, so that a reinstall of the same package finds them. Should
   * it fail, the next install finds the id removed (its namespace owner or
   * data directory kept) and records an origin no package has.
   */
  #bindKeptCredentials(installed: InstalledPlugin): Promise<void> {
    return this.#recordCredentialsOrigin(installed.plugin_id, packageOrigin(installed.lock));
  }

  /**
   * Quarantines a plugin now, until `unquarantine` or `reload` (reason
   * `operator`, permanent): its calls are refused with VARIANT_QUARANTINED,
   * and its running process drains (up to `drainTimeoutMs`) and stops. The
   * quarantine is in the profile's catalog, so every other host on the
   * profile refuses the plugin from its next call on and stops its process
   * there too, within its catalog poll (1 s) even without calls.
   */
  quarantine(pluginId: string, options: QuarantineOptions = {}): ResultAsync<void, HostError> {
    if (this.#closed) return errAsync(closedError());
    const refused = checkArguments('quarantine', { pluginId }, { value: options, schema: METHOD_OPTION_SCHEMAS.quarantine });
    if (refused !== undefined) return errAsync(refused);
    return this.#supervisor
      .quarantine(pluginId)
      .andThen(() => this.#runtimes.retire(pluginId, 'quarantined', options.drainTimeoutMs ?? this.#config.drainTimeoutMs));
  }

  /** Clears quarantine, restarts the plugin and runs a passive canary (start + tool list check). */
  reload(pluginId: string): ResultAsync<CanaryOutcome, HostError> {
    return this.unquarantine(pluginId).andThen(() => this.canary(pluginId, { live: false }));
  }

  /** Clears quarantine (backoff, hold or permanent) without running anything. */
  unquarantine(pluginId: string): ResultAsync<void, HostError> {
    if (this.#closed) return errAsync(closedError());
    const refused = checkArguments('unquarantine', { pluginId });
    if (refused !== undefined) return errAsync(refused);
    return this.#runtimes.stop(pluginId).andThen(() => this.#supervisor.unquarantine(pluginId));
  }

  /**
   * Stores a plugin's credentials and runs the live canary; a pass clears
   * `needs_configuration`. Keys are the descriptors' aliases (what people
   * see) or the declared env names; nothing undeclared is accepted.
   */
  setup(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<SetupOutcome, HostError> {
    if (this.#closed) return errAsync(closedError());
    const refused = checkSetupArguments(pluginId, values);
    if (refused !== undefined) return errAsync(refused);
    return this.#catalog.plugin(pluginId).andThen((plugin) => {
      const byEnv = credentialsByEnv(plugin, values);
      if (byEnv.isErr()) return errAsync(byEnv.error);
      const stored = aliasesOf(plugin, Object.keys(byEnv.value));
      // Stored for the package installed now: another package later installed under this id does not get them.
      return this.#credentials
        .store(plugin, byEnv.value)
        .andThen(() => this.#runtimes.stop(pluginId))
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
    const refused = checkArguments('canary', { pluginId }, { value: options, schema: METHOD_OPTION_SCHEMAS.canary });
    if (refused !== undefined) return errAsync(refused);
    // A failed canary's error quotes what the plugin wrote (its stdout banner, its tool error); setup hands it to the CLI and the application.
    return this.#canaries.run(pluginId, options).map((outcome) => (outcome.error === undefined ? outcome : { ...outcome, error: this.#withoutSecrets(outcome.error) }));
  }

  /** `error` without the secret values this host gave its plugins (what a plugin wrote may quote them). */
  #withoutSecrets(error: HostError): HostError {
    return errorWithoutSecrets(error, this.#config.knownSecrets.redactor);
  }

  /**
   * Calls an operation, `plug.<plugin_id>.<tool>`. Refuses, in this order:
   * an unknown id (VARIANT_NOT_FOUND), a quarantined plugin
   * (VARIANT_QUARANTINED, with `retry_after_ms` inside a backoff window), one
   * missing credentials (PLUGIN_NEEDS_CONFIGURATION), one installed after
   * this host opened (PLUGIN_PENDING_RESTART), a tool above `maxRisk`
   * (PLUGIN_RISK_NOT_ALLOWED), arguments that break the tool's request
   * schema (INVALID_ARGS with `details.pointer`, before the plugin starts)
   * and an unconfirmed `high_stakes_write` tool (PLUGIN_CONFIRMATION_DENIED:
   * the confirmation is asked only for arguments that passed); a
   * success that breaks its response schema is
   * PLUGIN_RESPONSE_SCHEMA_VIOLATION. Results of `mcp-plugin` and
   * `esm-module` plugins follow the result semantics of
   * `ErrorMapper.mapToolResult`: a GUM error envelope becomes its mapped
   * code (RATE_LIMITED, AUTH_REQUIRED, SERVICE_DOWN, INVALID_ARGS), any
   * other `isError` result PLUGIN_TOOL_ERROR with the result intact in
   * `details.result`, and a success is `ok` with `shape` set, which types
   * `value` as the MCP `CallToolResult`; the other protocols' application
   * errors come back as `ok` results with `isError: true`. The call's
   * `timeoutMs` and `signal` count from this moment, while the plugin starts
   * too. Every error carries `details.plugin_id` (when the operation exists)
   * and `details.op_id`.
   */
  call(opId: string, args: unknown, options: HostCallOptions = {}): ResultAsync<CallResult, HostError> {
    // Another process may have removed, quarantined or upgraded the plugin since the last read: one stat tells, and only then is the catalog read.
    if (this.#closed || !this.#catalog.changedOnDisk()) return this.#lookedUp(opId, args, options);
    return new ResultAsync(
      (async () => {
        const read = await this.#catalog.refresh();
        return this.#lookedUp(opId, args, options, read.isErr() ? read.error : undefined);
      })(),
    );
  }

  /** A call on the snapshot now held; `unread` is why the catalog could not be read again, which fails the call (a quarantine may be in what was not read). */
  #lookedUp(opId: string, args: unknown, options: HostCallOptions, unread?: HostError): ResultAsync<CallResult, HostError> {
    const { audit, telemetry, clock } = this.#config;
    const operation = this.#closed ? undefined : this.#catalog.operation(opId);
    const plugin = operation?.plugin;
    const caller = typeof options.caller?.id === 'string' ? options.caller : undefined;
    const started = audit === undefined ? 0 : clock.now();
    // Without a tracer or meter the span's facts and the closure around the call would be garbage at once.
    const outcome = telemetry.observesNothing()
      ? unread === undefined
        ? this.#call(opId, operation, args, options)
        : errAsync<CallResult, HostError>(unread)
      : telemetry.call(
          { opId, toolName: operation?.variant.tool_name, pluginId: plugin?.plugin_id, pluginVersion: plugin?.lock.version, shape: plugin?.descriptor?.shape, callerId: caller?.id },
          () => (unread === undefined ? this.#call(opId, operation, args, options) : errAsync(unread)),
        );
    if (audit === undefined) return outcome;
    return new ResultAsync(
      (async () => {
        const result = await outcome;
        audit.record({ opId, plugin, args, caller, started }, result);
        return result;
      })(),
    );
  }

  /** `operation` is what `call` looked up for its span: looked up once per call. */
  #call(opId: string, operation: NamedOperation<InstalledPlugin> | undefined, args: unknown, options: HostCallOptions): ResultAsync<CallResult, HostError> {
    if (this.#closed) return errAsync(closedError());
    const invalid = checkArguments('call', { opId }, { value: options, schema: METHOD_OPTION_SCHEMAS.call });
    if (invalid !== undefined) return errAsync(invalid);
    if (operation === undefined) {
      return errAsync(hostError('VARIANT_NOT_FOUND', `no operation ${JSON.stringify(opId)} is installed`, { details: { op_id: opId } }));
    }
    const { plugin, variant } = operation;
    const refused =
      startRefusal(plugin, opId, this.#config.clock.now(), this.#pending(plugin.plugin_id, plugin)) ?? riskRefusal(opId, variant, options.maxRisk ?? 'read');
    if (refused !== undefined) return errAsync(callError(refused, { id: plugin.plugin_id, opId }));
    if (variant.confirmation_policy !== 'high_stakes_write') return this.#dispatcher.dispatch(plugin, variant.tool_name, args, options, opId, 'call');
    const invalidArgs = this.#dispatcher.argumentRefusal(plugin, variant.tool_name, args, opId, options.caller);
    if (invalidArgs !== undefined) return errAsync(invalidArgs);
    // What was approved is what runs: the callback and the caller both hold `args` while the question is open, so both see and dispatch one frozen copy.
    const approved = frozenJsonCopy(args);
    if (approved === undefined) {
      return errAsync(callError(hostError('INVALID_ARGS', `the arguments of '${variant.tool_name}' are not JSON`, { details: { tool: variant.tool_name } }), { id: plugin.plugin_id, opId }));
    }
    return confirm(options.confirm ?? this.#config.confirm, { op_id: opId, plugin_id: plugin.plugin_id, risk_class: variant.risk_class, args: approved.value }).andThen(() =>
      this.#dispatcher.dispatch(plugin, variant.tool_name, approved.value, options, opId, 'call'),
    );
  }

  /**
   * The tools the plugin offers, as it lists them now (MCP `tools/list`,
   * handshake `exposed_tools`; ndjson-rpc has no discovery, so its declared
   * tools). Starts the plugin if it is not running, through the same checks
   * and sandbox as a call, and a start that fails counts toward quarantine
   * as one for a call does; a list that differs from the manifest is
   * PLUGIN_TOOLS_MISMATCH with the undeclared and missing names. MCP tools
   * come with their `title`, `inputSchema`, `outputSchema` and
   * `annotations` as the plugin states them.
   */
  tools(pluginId: string): ResultAsync<readonly ToolDescriptor[], HostError> {
    if (this.#closed) return errAsync(closedError());
    const invalid = checkArguments('tools', { pluginId });
    if (invalid !== undefined) return errAsync(invalid);
    return this.#catalog.current().andThen(() => {
      const plugin = this.#catalog.cachedPlugin(pluginId);
      if (plugin === undefined) return errAsync(notInstalled(pluginId));
      const refused = startRefusal(plugin, `plug.${pluginId}`, this.#config.clock.now(), this.#pending(pluginId, plugin));
      if (refused !== undefined) return errAsync(refused);
      // The list may start the plugin: a start that fails here counts toward quarantine as one for a call does.
      return this.#runtimes.take(plugin).asyncAndThen((runtime) =>
        runtime.session.listTools().orElse((listed) => {
          // A start without a granted env variable names it, and is not counted (startEnvHints.ts).
          const failure = this.#runtimes.withStartEnv(pluginId, listed);
          return ResultAsync.fromSafePromise(
            this.#supervisor.countsAgainstPlugin(failure) ? this.#supervisor.pluginFailed(pluginId, runtime, failure, 'call') : Promise.resolve(),
          ).andThen(() => errAsync(this.#withoutSecrets(failure)));
        }),
      );
    });
  }

  /**
   * The resources an MCP-speaking plugin (`mcp-plugin`, `esm-module`) lists,
   * every page, with their URIs as the plugin gives them. Starts the plugin
   * as {@link PluginHost.tools} does. A plugin that does not announce the
   * `resources` capability, and a plugin of another shape, is
   * PLUGIN_METHOD_NOT_FOUND; the plugin's own failures keep their codes, with
   * `details.plugin_id`.
   */
  resources(pluginId: string): ResultAsync<readonly Resource[], HostError> {
    return this.#surfaces.resources(pluginId);
  }

  /** The resource templates an MCP-speaking plugin lists (as {@link PluginHost.resources}). */
  resourceTemplates(pluginId: string): ResultAsync<readonly ResourceTemplate[], HostError> {
    return this.#surfaces.resourceTemplates(pluginId);
  }

  /**
   * Reads one resource of a plugin by the URI the plugin gives it (listed, or
   * filled in from one of its templates). A URI the plugin does not know is
   * the plugin's error (usually PLUGIN_INVALID_PARAMS). A plugin may ask its
   * client while it reads: `options.clientRequests` answers that instead of
   * the host's callbacks. `options.signal` withdraws the read
   * (PLUGIN_CANCELLED; the plugin is told).
   */
  readResource(pluginId: string, uri: string, options?: PluginRequestOptions): ResultAsync<ReadResourceResult, HostError> {
    return this.#surfaces.readResource(pluginId, uri, options);
  }

  /**
   * Subscribes to a plugin's resource: each update arrives as a
   * `resource:updated` event with the plugin id and URI. While any
   * subscription is open the plugin is not stopped for being idle. The host
   * keeps the subscription until `unsubscribeResource`: every new process of
   * the plugin (after a crash, a reload or an upgrade) subscribes again when
   * it starts, and a plugin that dies holding subscriptions counts as crashed
   * and is started again when its crash backoff allows. A new process that
   * refuses the subscription ends it with a `resource:subscription_lost` event.
   * PLUGIN_METHOD_NOT_FOUND when the plugin does not announce `resources.subscribe`.
   */
  subscribeResource(pluginId: string, uri: string): ResultAsync<void, HostError> {
    return this.#surfaces.subscribeResource(pluginId, uri);
  }

  /** Ends a subscription made with {@link PluginHost.subscribeResource}; one that does not exist is no error, and a plugin not running is not started for it. */
  unsubscribeResource(pluginId: string, uri: string): ResultAsync<void, HostError> {
    return this.#surfaces.unsubscribeResource(pluginId, uri);
  }

  /** The prompts an MCP-speaking plugin lists, with their arguments (as {@link PluginHost.resources}). */
  prompts(pluginId: string): ResultAsync<readonly Prompt[], HostError> {
    return this.#surfaces.prompts(pluginId);
  }

  /**
   * One prompt of a plugin, by the name the plugin gives it, filled in with
   * `args`. A plugin may ask its client (sample, elicit) while it fills the
   * prompt in: `options.clientRequests` answers that instead of the host's callbacks.
   * `options.signal` withdraws the request (PLUGIN_CANCELLED; the plugin is told).
   */
  getPrompt(pluginId: string, name: string, args: Readonly<Record<string, string>> = {}, options?: PluginRequestOptions): ResultAsync<GetPromptResult, HostError> {
    return this.#surfaces.getPrompt(pluginId, name, args, options);
  }

  /**
   * Completion values (`completion/complete`) for an argument of one of the
   * plugin's prompts (`{ type: 'ref/prompt', name }`) or a variable of one of
   * its resource templates (`{ type: 'ref/resource', uri: <template> }`).
   * PLUGIN_METHOD_NOT_FOUND when the plugin does not announce `completions`.
   * `options.clientRequests` answers what the plugin asks its client meanwhile;
   * `options.signal` withdraws the request (PLUGIN_CANCELLED; the plugin is told).
   */
  complete(pluginId: string, ref: CompletionReference, request: CompletionRequest, options?: PluginRequestOptions): ResultAsync<CompleteResult['completion'], HostError> {
    return this.#surfaces.complete(pluginId, ref, request, options);
  }

  /**
   * Sets the lowest level of the log messages a plugin sends
   * (`logging/setLevel`); each arrives as a `log` event carrying the plugin
   * id. The level is set again on each new process of the plugin's session.
   * PLUGIN_METHOD_NOT_FOUND when the plugin does not announce `logging`.
   */
  setLogLevel(pluginId: string, level: LoggingLevel): ResultAsync<void, HostError> {
    return this.#surfaces.setLogLevel(pluginId, level);
  }

  /**
   * The manifest an `npm:<name>@<version>` (or `npm:<path>.tgz`) server would
   * be installed with, for a person to review before installing it with the
   * `manifest` option: the package's own, or one generated from the server's
   * `tools/list` in a sandboxed start (no network, a throwaway data
   * directory), marked `needs_review`. Nothing is installed.
   */
  wrap(source: string, options: WrapOptions = {}): ResultAsync<WrappedServer, HostError> {
    if (this.#closed) return errAsync(closedError());
    return this.#installer.wrap(source, options);
  }

  /** Stops every plugin (whole process trees, calls in flight fail with HOST_CLOSED); every later operation fails with HOST_CLOSED. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    this.#watch.stop();
    await this.#runtimes.closeAll();
    this.#launcher.close();
    await this.#toolLists.settled();
    this.#catalog.close();
  }

  /** Whether `plugin` (the catalog's entry for `pluginId` now) waits for the next open in this host. */
  #pending(pluginId: string, plugin: InstalledPlugin | undefined = this.#catalog.cachedPlugin(pluginId)): boolean {
    if (this.#hotReload) return false;
    const active = this.#active.get(pluginId);
    return active === undefined || plugin === undefined || !sameBinding(active, plugin.lock.binding);
  }
}

/**
 * The error of a remove whose plugin is gone but whose credentials could not
 * be deleted: it says so, so nobody takes the plugin for still installed.
 */
function removedButKept(pluginId: string, error: HostError): HostError {
  return hostError(error.code, `plugin '${pluginId}' was removed, but its stored credentials could not be deleted: ${error.message}`, {
    details: { ...error.details, plugin_id: pluginId, removed: true, credentials_deleted: false },
    hint: `The plugin is no longer installed. Delete its credentials with 'remove ${pluginId} --forget-secrets' (it works on a removed plugin) once the secret store is reachable.`,
    cause: error,
  });
}

/** Whether anything is at `path` (a failure to look counts as something: the caller then withholds). */
async function pathExists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    (e: NodeJS.ErrnoException) => e.code !== 'ENOENT',
  );
}
