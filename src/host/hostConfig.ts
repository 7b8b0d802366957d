/**
 * The host's options, checked and defaulted once into one complete, frozen
 * {@link HostConfig}; and each call's budget (timeout, total cap, signal,
 * progress), resolved once from the call's options and the config. Every
 * shape's session reads its limits from these, never from the raw options.
 */
import { err, ok, type Result } from 'neverthrow';
import hostOptionData from '../../etc/host-options.json' with { type: 'json' };
import type { EnvDenylistOptions } from '../env/EnvDenylist.js';
import type { HostError } from '../errors/HostError.js';
import type { PackageLimits } from '../installer/limits.js';
import type { NpmSettings } from '../installer/npmFetch.js';
import type { ManifestPreset } from '../manifest/ManifestValidator.js';
import type { ProfileKind } from '../namespace/NamespaceLock.js';
import { checkOptions, invalidOption, isPlainObject, type OptionSchema } from '../options/optionRules.js';
import { silentLogger, systemClock, systemRandom, type Clock, type Logger, type Random } from '../ports/ports.js';
import { defaultProfileDir } from '../profile/ProfileLayout.js';
import { SANDBOX_BACKEND_CHOICES } from '../sandbox/backendChoice.js';
import type { SandboxSpawner, SandboxSpawnerOptions } from '../sandbox/SandboxSpawner.js';
import type { SecretStore } from '../secrets/SecretStore.js';
import type { AuditSink, CallerIdentity } from '../audit/auditRecord.js';
import { CallAuditor } from '../audit/callAudit.js';
import { KnownSecrets } from '../secrets/knownSecrets.js';
import { loggerWithoutSecrets } from '../secrets/loggerWithoutSecrets.js';
import { HostTelemetry } from '../observability/telemetry.js';
import { checkHostOutputProfiles, type HostOutputProfiles } from './resultShaping.js';
import type { EsmHostLoaderOptions } from '../shapes/esm/EsmLoaderOptions.js';
import type { ClientRequestHandlers } from '../shapes/mcp/clientRequests.js';
import type { CallOptions } from '../shapes/PluginSession.js';
import type { ConfirmationCallback, HostCallOptions, PluginHostOptions } from './PluginHost.js';

/** The shapes whose sessions take a limit on calls in flight. */
export type InFlightShape = keyof typeof hostOptionData.defaults.maxInFlight;

/**
 * What the host does with a plugin's stdout line that is not JSON-RPC:
 * `tolerate` drops it, counts it and emits it as a `stdout` event (published
 * servers print banners and logs there); `strict` treats it as a protocol
 * failure that ends the process and fails its calls.
 */
export type StdoutPolicy = 'tolerate' | 'strict';

/**
 * What a malformed answer of an ndjson-rpc plugin costs (a line that is not
 * JSON, a response that breaks the protocol's schema, a line over the frame
 * cap): `fail-call` fails the call concerned and leaves the child running, as
 * the mcptest protocol says; `stop-plugin` also stops the plugin and counts
 * it toward quarantine.
 */
export type NdjsonMalformedPolicy = 'fail-call' | 'stop-plugin';

/**
 * What happens after an ndjson-rpc plugin crashes: `sticky` (the mcptest
 * protocol) reports every later call as that crash until the plugin is
 * reloaded or unquarantined; `respawn` quarantines it on the backoff ladder
 * and starts a fresh process once the wait is over.
 */
export type NdjsonCrashPolicy = 'sticky' | 'respawn';

/** How the host runs one plugin, overriding the host-wide option of the same name (`PluginHostOptions.plugins`). */
export interface PluginRunOptions {
  /** Stdout lines that are not JSON-RPC (MCP-speaking shapes). */
  readonly stdout?: StdoutPolicy;
  /** Cap on one line the plugin writes, in bytes (every stdio shape). */
  readonly maxFrameBytes?: number;
  /** Time for the plugin to start: MCP `initialize` and the first `tools/list`, in ms. */
  readonly startupTimeoutMs?: number;
  /** Calls in flight at this plugin at once. */
  readonly maxInFlight?: number;
  /** The plugin's invocation timeout: time without an answer to a call, in ms (a call's own `timeoutMs` still wins). */
  readonly callTimeoutMs?: number;
  /** Time for a handshake-shape plugin to answer the handshake line of each launch, in ms. */
  readonly handshakeTimeoutMs?: number;
  /** What a malformed answer of an ndjson-rpc plugin costs. */
  readonly ndjsonMalformed?: NdjsonMalformedPolicy;
  /** What happens after an ndjson-rpc plugin crashes. */
  readonly ndjsonCrash?: NdjsonCrashPolicy;
}

/** A plugin's run settings: its own overrides, else the host's options, else the defaults. */
export interface PluginRunSettings {
  readonly stdout: StdoutPolicy;
  readonly maxFrameBytes: number;
  readonly startupTimeoutMs: number;
  /** Set only when the plugin's override or the host option names it; otherwise each shape's default applies. */
  readonly maxInFlight: number | undefined;
  readonly callTimeoutMs: number;
  readonly handshakeTimeoutMs: number;
  readonly ndjsonMalformed: NdjsonMalformedPolicy;
  readonly ndjsonCrash: NdjsonCrashPolicy;
}

/** Every option of {@link PluginHost.open}, checked, with its default filled in; frozen. */
export interface HostConfig {
  readonly appName: string;
  readonly profile: string;
  /** The profile directory: the option, else `<data home>/<appName>/<profile>`. */
  readonly profileDir: string;
  readonly profileKind: ProfileKind;
  readonly preset: ManifestPreset;
  /** The sandbox options, with the host's profile kind and logger unless they set their own. */
  readonly sandbox: SandboxSpawnerOptions;
  readonly spawner: SandboxSpawner | undefined;
  readonly secretStore: SecretStore | undefined;
  readonly credentialsFromEnv: boolean;
  readonly clientInfo: { readonly name: string; readonly version: string } | undefined;
  readonly envDenylist: Omit<EnvDenylistOptions, 'preset'>;
  readonly reservedNamespaces: readonly string[] | undefined;
  readonly trustedKeys: readonly string[] | undefined;
  readonly requireSignatures: boolean;
  readonly requireLicense: boolean;
  readonly durableInstall: boolean;
  readonly packageLimits: Partial<PackageLimits> | undefined;
  readonly interpreterSearchPath: string | undefined;
  readonly npm: NpmSettings | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly callTimeoutMs: number;
  readonly maxTotalTimeoutMs: number;
  /** Calls in flight at one plugin, by shape: the option for every shape, else each protocol's own default. */
  readonly maxInFlight: Readonly<Record<InFlightShape, number>>;
  readonly idleTimeoutMs: number;
  readonly stdout: StdoutPolicy;
  readonly maxFrameBytes: number;
  readonly startupTimeoutMs: number;
  /** The whole introspection start at install: the option, else the larger of `startupTimeoutMs` and the default. */
  readonly introspectionTimeoutMs: number;
  readonly handshakeTimeoutMs: number;
  readonly ndjsonMalformed: NdjsonMalformedPolicy;
  readonly ndjsonCrash: NdjsonCrashPolicy;
  /** Per-plugin overrides of the run options, by plugin id. */
  readonly plugins: Readonly<Record<string, PluginRunOptions>>;
  /** How long a remove or upgrade lets calls in flight finish: the host's `callTimeoutMs` when set, else 30 s. */
  readonly drainTimeoutMs: number;
  readonly backoffScheduleMs: readonly number[];
  readonly esmRunnerArgv: readonly string[] | undefined;
  readonly esmLoader: Readonly<EsmHostLoaderOptions>;
  readonly handshakeCapabilities: Readonly<Record<string, readonly string[]>>;
  readonly confirm: ConfirmationCallback | undefined;
  /** The host's callbacks for plugins' requests to their client. */
  readonly clientRequests: ClientRequestHandlers | undefined;
  /** The most time one answer to a plugin's client request may take. */
  readonly clientRequestTimeoutMs: number;
  readonly activation: 'next-open' | 'immediate';
  /** How often a host opened with `hotReload` reads the catalog generation; undefined without `hotReload`. */
  readonly hotReloadPollMs: number | undefined;
  /**
   * How often every host checks its profile's catalog for what other
   * processes did (a stat of one file, a read only when it changed): the
   * `hotReload` poll when set, else `etc/host-options.json` `catalogPollMs`.
   * Bounds how long a plugin another process removed or quarantined may
   * keep running here without calls (every call checks first).
   */
  readonly catalogPollMs: number;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** Writes the audit record of each call; absent without the `audit` option. */
  readonly audit: CallAuditor | undefined;
  /** The secret values the host gave its plugins, redacted from audit records and what plugins log or print. */
  readonly knownSecrets: KnownSecrets;
  /** The host's spans and metrics (no-ops without a provider). */
  readonly telemetry: HostTelemetry;
  /** The application's output profiles, checked. */
  readonly outputProfiles: HostOutputProfiles;
}

/** The defaults of the host's options, as `etc/host-options.json` lists them. */
export const HOST_OPTION_DEFAULTS = hostOptionData.defaults;

const DEFAULTS = HOST_OPTION_DEFAULTS;

// The CPU weight's range and the quota's shape are checked by SandboxSpawner.create, which names the field at fault.
const TREE_LIMIT_FIELDS: OptionSchema = { memoryBytes: { number: 'bytes', orFalse: true }, maxProcesses: { number: 'count', orFalse: true }, cpuWeight: { number: 'count', orFalse: true }, cpuQuota: 'object' };

/** The options of `sandbox` (those of `SandboxSpawner.create`). */
const SANDBOX_SCHEMA: OptionSchema = {
  dangerouslyRunUnsandboxed: 'boolean',
  profileKind: { oneOf: ['standard', 'dev'] },
  bwrapPath: 'string',
  backend: { oneOf: SANDBOX_BACKEND_CHOICES },
  launcherPath: 'string',
  sandboxExecPath: 'string',
  platform: 'string',
  proveAt: { oneOf: ['create', 'first_spawn'] },
  secretPaths: 'strings',
  homeDir: 'string',
  searchPath: 'string',
  logger: 'object',
  memoryLimitBytes: { number: 'bytes', orFalse: true },
  maxProcesses: { number: 'count', orFalse: true },
  cpuWeight: { number: 'count', orFalse: true },
  cpuQuota: 'object',
  pluginLimits: { recordOf: { fields: TREE_LIMIT_FIELDS } },
  controlGroups: { oneOf: ['auto', 'off'] },
  requireTreeLimits: 'boolean',
  prlimitPath: 'string',
  pluginUidRange: { fields: { first: 'count', count: 'count' } },
  setprivPath: 'string',
  egressResolver: 'object',
};

const STDOUT_RULE = { oneOf: ['tolerate', 'strict'] } as const;
const NDJSON_MALFORMED_RULE = { oneOf: ['fail-call', 'stop-plugin'] } as const;
const NDJSON_CRASH_RULE = { oneOf: ['sticky', 'respawn'] } as const;

/** The options of one entry of `plugins`. */
const PLUGIN_RUN_SCHEMA: OptionSchema = {
  stdout: STDOUT_RULE,
  maxFrameBytes: 'bytes',
  startupTimeoutMs: 'milliseconds',
  maxInFlight: 'count',
  callTimeoutMs: 'milliseconds',
  handshakeTimeoutMs: 'milliseconds',
  ndjsonMalformed: NDJSON_MALFORMED_RULE,
  ndjsonCrash: NDJSON_CRASH_RULE,
};

/** The callbacks answering plugins' requests to their client, for the host or one call. */
const CLIENT_REQUEST_HANDLERS_SCHEMA: OptionSchema = { sampling: 'function', elicitation: 'function', roots: 'function', caller: 'string' };

/** The options of {@link PluginHost.open}. */
const HOST_SCHEMA: OptionSchema = {
  appName: 'pathSegment',
  profile: 'pathSegment',
  profileDir: 'string',
  profileKind: { oneOf: ['standard', 'dev'] },
  preset: { oneOf: ['neutral', 'gum'] },
  sandbox: { fields: SANDBOX_SCHEMA },
  spawner: 'object',
  secretStore: 'object',
  credentialsFromEnv: 'boolean',
  clientInfo: { fields: { name: 'string', version: 'string' } },
  envDenylist: { fields: { extraPrefixes: 'strings', extraExact: 'strings', logger: 'object' } },
  reservedNamespaces: 'strings',
  trustedKeys: 'strings',
  requireSignatures: 'boolean',
  requireLicense: 'boolean',
  durableInstall: 'boolean',
  packageLimits: { fields: { maxArchiveBytes: 'bytes', maxExtractedBytes: 'bytes', maxEntries: 'count' } },
  interpreterSearchPath: 'string',
  npm: { fields: { cli: 'string', registry: 'string' } },
  env: 'stringRecord',
  callTimeoutMs: 'milliseconds',
  maxTotalTimeoutMs: 'milliseconds',
  maxInFlight: 'count',
  idleTimeoutMs: 'millisecondsOrZero',
  stdout: STDOUT_RULE,
  maxFrameBytes: 'bytes',
  startupTimeoutMs: 'milliseconds',
  introspectionTimeoutMs: 'milliseconds',
  handshakeTimeoutMs: 'milliseconds',
  ndjsonMalformed: NDJSON_MALFORMED_RULE,
  ndjsonCrash: NDJSON_CRASH_RULE,
  plugins: { recordOf: { fields: PLUGIN_RUN_SCHEMA } },
  backoffScheduleMs: { listOf: 'milliseconds' },
  esmRunnerArgv: 'strings',
  esmLoader: { fields: { strictCapabilities: 'boolean', strictTools: 'boolean', validateTool: 'function' } },
  handshakeCapabilities: { recordOf: 'strings' },
  confirm: 'function',
  clientRequests: { fields: CLIENT_REQUEST_HANDLERS_SCHEMA },
  clientRequestTimeoutMs: 'milliseconds',
  activation: { oneOf: ['next-open', 'immediate'] },
  hotReload: { fields: { pollMs: 'milliseconds' } },
  clock: 'object',
  random: 'object',
  logger: 'object',
  audit: { fields: { sink: 'object', arguments: 'boolean', secretFields: 'strings' } },
  telemetry: { fields: { tracerProvider: 'object', meterProvider: 'object' } },
  outputProfiles: { fields: { definitions: 'object', bindings: { recordOf: 'string' } } },
};

/** The per-call options of {@link PluginHost.call}. */
const CALL_SCHEMA: OptionSchema = {
  maxRisk: { oneOf: ['read', 'write', 'destructive'] },
  confirm: 'function',
  clientRequests: { fields: CLIENT_REQUEST_HANDLERS_SCHEMA },
  timeoutMs: 'milliseconds',
  maxTotalTimeoutMs: 'milliseconds',
  signal: 'abortSignal',
  onProgress: 'function',
  caller: { fields: { id: 'string', session: 'string', transport: 'string' } },
  presence: { fields: { sent: 'function', settled: 'function' } },
};

/** The options of a request beyond tools that may make the plugin ask its client (getPrompt, readResource, complete). */
const PLUGIN_REQUEST_SCHEMA: OptionSchema = { clientRequests: { fields: CLIENT_REQUEST_HANDLERS_SCHEMA }, signal: 'abortSignal' };

const INSPECT_SCHEMA: OptionSchema = {
  checksum: 'string',
  signature: 'signature',
  devAllowNamespaceConflict: 'boolean',
  firstParty: 'boolean',
  replace: 'boolean',
  allowDowngrade: 'boolean',
  allowSignerChange: 'boolean',
  grant: { fields: { network: 'boolean', fs_write_dir: 'string', env_allow: 'strings', egress: 'strings', client_requests: 'strings' } },
  settings: 'object',
  manifest: 'object',
  args: 'strings',
  bin: 'string',
  pythonIndexUrl: 'string',
};

/** The options of each public method that takes some, checked before the method does anything. */
export const METHOD_OPTION_SCHEMAS = {
  call: CALL_SCHEMA,
  install: { ...INSPECT_SCHEMA, canary: 'boolean', drainTimeoutMs: 'milliseconds', accept: 'function' },
  inspect: INSPECT_SCHEMA,
  remove: { forgetSecrets: 'boolean', drainTimeoutMs: 'milliseconds' },
  quarantine: { drainTimeoutMs: 'milliseconds' },
  canary: { live: 'boolean', args: 'object' },
  getPrompt: PLUGIN_REQUEST_SCHEMA,
  readResource: PLUGIN_REQUEST_SCHEMA,
  complete: PLUGIN_REQUEST_SCHEMA,
} as const satisfies Readonly<Record<string, OptionSchema>>;

/**
 * Checks the options of {@link PluginHost.open} (the object itself, unknown
 * keys at every level, each value by its kind) and fills every default.
 */
export function resolveHostConfig(options: unknown): Result<HostConfig, HostError> {
  const refused = checkOptions(options, HOST_SCHEMA, 'PluginHost.open');
  if (refused !== undefined) return err(refused);
  const o = (options ?? {}) as PluginHostOptions;
  if (o.audit !== undefined && typeof (o.audit.sink as Partial<AuditSink> | undefined)?.write !== 'function') {
    return err(invalidOption('audit.sink', 'must be an audit sink: an object with a write(record) method'));
  }
  const profilesRefused = o.outputProfiles === undefined ? undefined : checkHostOutputProfiles(o.outputProfiles);
  if (profilesRefused !== undefined) return err(profilesRefused);
  const profileKind = o.profileKind ?? (DEFAULTS.profileKind as ProfileKind);
  const profile = o.profile ?? DEFAULTS.profile;
  const appName = o.appName ?? DEFAULTS.appName;
  const env = o.env ?? process.env;
  const knownSecrets = new KnownSecrets();
  // Records quote plugins' text (a dropped stdout line, a failed call's message): the secrets the host gave them stay out.
  const logger = o.logger === undefined ? silentLogger : loggerWithoutSecrets(o.logger, knownSecrets);
  const maxInFlight = o.maxInFlight;
  return ok(
    Object.freeze({
      appName,
      profile,
      profileDir: o.profileDir ?? defaultProfileDir({ appName, profile, env }),
      profileKind,
      preset: o.preset ?? (DEFAULTS.preset as ManifestPreset),
      sandbox: Object.freeze({ profileKind, ...(o.logger === undefined ? {} : { logger }), ...o.sandbox }),
      spawner: o.spawner,
      secretStore: o.secretStore,
      credentialsFromEnv: o.credentialsFromEnv ?? false,
      clientInfo: o.clientInfo === undefined ? undefined : Object.freeze({ ...o.clientInfo }),
      envDenylist: Object.freeze({ ...o.envDenylist, ...(o.logger === undefined ? {} : { logger }) }),
      reservedNamespaces: o.reservedNamespaces,
      trustedKeys: o.trustedKeys,
      requireSignatures: o.requireSignatures ?? DEFAULTS.requireSignatures,
      requireLicense: o.requireLicense ?? (o.preset ?? DEFAULTS.preset) === 'gum',
      durableInstall: o.durableInstall ?? DEFAULTS.durableInstall,
      packageLimits: o.packageLimits,
      interpreterSearchPath: o.interpreterSearchPath,
      npm: o.npm,
      env,
      callTimeoutMs: o.callTimeoutMs ?? DEFAULTS.callTimeoutMs,
      maxTotalTimeoutMs: o.maxTotalTimeoutMs ?? DEFAULTS.maxTotalTimeoutMs,
      maxInFlight: Object.freeze(
        maxInFlight === undefined ? { ...DEFAULTS.maxInFlight } : { 'mcp-plugin': maxInFlight, 'esm-module': maxInFlight, 'ndjson-rpc': maxInFlight },
      ),
      idleTimeoutMs: o.idleTimeoutMs ?? DEFAULTS.idleTimeoutMs,
      stdout: o.stdout ?? (DEFAULTS.stdout as StdoutPolicy),
      maxFrameBytes: o.maxFrameBytes ?? DEFAULTS.maxFrameBytes,
      startupTimeoutMs: o.startupTimeoutMs ?? DEFAULTS.startupTimeoutMs,
      introspectionTimeoutMs: o.introspectionTimeoutMs ?? Math.max(o.startupTimeoutMs ?? DEFAULTS.startupTimeoutMs, DEFAULTS.introspectionTimeoutMs),
      handshakeTimeoutMs: o.handshakeTimeoutMs ?? DEFAULTS.handshakeTimeoutMs,
      ndjsonMalformed: o.ndjsonMalformed ?? (DEFAULTS.ndjsonMalformed as NdjsonMalformedPolicy),
      ndjsonCrash: o.ndjsonCrash ?? (DEFAULTS.ndjsonCrash as NdjsonCrashPolicy),
      plugins: Object.freeze({ ...o.plugins }),
      drainTimeoutMs: o.callTimeoutMs ?? DEFAULTS.drainTimeoutMs,
      backoffScheduleMs: Object.freeze([...(o.backoffScheduleMs ?? DEFAULTS.backoffScheduleMs)]),
      esmRunnerArgv: o.esmRunnerArgv,
      esmLoader: Object.freeze({ ...o.esmLoader }),
      handshakeCapabilities: o.handshakeCapabilities ?? {},
      confirm: o.confirm,
      clientRequests: o.clientRequests,
      clientRequestTimeoutMs: o.clientRequestTimeoutMs ?? DEFAULTS.clientRequestTimeoutMs,
      activation: o.activation ?? (DEFAULTS.activation as HostConfig['activation']),
      hotReloadPollMs: o.hotReload === undefined ? undefined : (o.hotReload.pollMs ?? DEFAULTS.hotReloadPollMs),
      catalogPollMs: o.hotReload === undefined ? DEFAULTS.catalogPollMs : (o.hotReload.pollMs ?? DEFAULTS.hotReloadPollMs),
      clock: o.clock ?? systemClock,
      random: o.random ?? systemRandom,
      logger,
      audit: o.audit === undefined ? undefined : new CallAuditor(o.audit, o.clock ?? systemClock, knownSecrets),
      knownSecrets,
      telemetry: new HostTelemetry(o.telemetry),
      outputProfiles: o.outputProfiles ?? {},
    }),
  );
}

/** The run settings of one plugin: its entry in `plugins`, else the host's options. */
export function pluginRunSettings(config: HostConfig, pluginId: string): PluginRunSettings {
  const own = Object.hasOwn(config.plugins, pluginId) ? config.plugins[pluginId] : undefined;
  return {
    stdout: own?.stdout ?? config.stdout,
    maxFrameBytes: own?.maxFrameBytes ?? config.maxFrameBytes,
    startupTimeoutMs: own?.startupTimeoutMs ?? config.startupTimeoutMs,
    maxInFlight: own?.maxInFlight,
    callTimeoutMs: own?.callTimeoutMs ?? config.callTimeoutMs,
    handshakeTimeoutMs: own?.handshakeTimeoutMs ?? config.handshakeTimeoutMs,
    ndjsonMalformed: own?.ndjsonMalformed ?? config.ndjsonMalformed,
    ndjsonCrash: own?.ndjsonCrash ?? config.ndjsonCrash,
  };
}

/**
 * A call's budget: its own timeout and total cap, else the plugin's timeout
 * (its `plugins` entry, else the host's) and the host's cap, with its signal
 * and progress callback, whose turn it takes at the plugin's in-flight
 * slots, and who is told when it holds one. Calls that set none of these,
 * to a plugin without a timeout of its own, share one object per host.
 */
export function callBudget(config: HostConfig, options: HostCallOptions, pluginId?: string): CallOptions {
  const { timeoutMs, maxTotalTimeoutMs, signal, onProgress, caller, presence } = options;
  // Only the timeout is read here: building the plugin's whole run settings cost every call about 0.5 µs.
  const own = pluginId !== undefined && Object.hasOwn(config.plugins, pluginId) ? config.plugins[pluginId] : undefined;
  const pluginTimeoutMs = own?.callTimeoutMs ?? config.callTimeoutMs;
  const plain =
    timeoutMs === undefined && maxTotalTimeoutMs === undefined && signal === undefined && onProgress === undefined && caller === undefined && presence === undefined;
  if (plain && pluginTimeoutMs === config.callTimeoutMs) return defaultBudget(config);
  // One object, keys added in place: spreads made an object per optional key (a gateway call has three of them).
  const budget: { -readonly [K in keyof CallOptions]: CallOptions[K] } = { timeoutMs: timeoutMs ?? pluginTimeoutMs, maxTotalTimeoutMs: maxTotalTimeoutMs ?? config.maxTotalTimeoutMs };
  if (signal !== undefined) budget.signal = signal;
  if (onProgress !== undefined) budget.onProgress = onProgress;
  if (caller !== undefined) budget.caller = fairShareKey(caller);
  if (presence !== undefined) budget.presence = presence;
  return budget;
}

/** The last key {@link fairShareKey} made for each caller object, with the transport and id it was made of. */
const fairShareKeys = new WeakMap<CallerIdentity, { readonly transport: string | undefined; readonly id: string; readonly key: string }>();

/**
 * Whose turn a call takes at its plugin's in-flight slots: the caller's id
 * and transport, not its session, so that a gateway client holding one token
 * gets one turn however many sessions it opens. Also whose budget of
 * backtracking schema matches the call's arguments spend.
 */
export function fairShareKey(caller: CallerIdentity): string {
  // A gateway connection passes one caller object to all its calls, each of which asks twice (its turn, its schema budget);
  // the key is kept with what it was made of, so a caller object changed since is keyed afresh.
  const { transport, id } = caller;
  const known = fairShareKeys.get(caller);
  if (known !== undefined && known.transport === transport && known.id === id) return known.key;
  // As JSON, so that no id an application picks can spell another caller's transport and id.
  const key = JSON.stringify([transport ?? null, id]);
  fairShareKeys.set(caller, { transport, id, key });
  return key;
}

const defaultBudgets = new WeakMap<HostConfig, CallOptions>();

function defaultBudget(config: HostConfig): CallOptions {
  let budget = defaultBudgets.get(config);
  if (budget === undefined) {
    budget = Object.freeze({ timeoutMs: config.callTimeoutMs, maxTotalTimeoutMs: config.maxTotalTimeoutMs });
    defaultBudgets.set(config, budget);
  }
  return budget;
}

/** A public method's arguments: each named string argument must be a string, and its options must fit the method's schema. */
export function checkArguments(
  method: string,
  strings: Readonly<Record<string, unknown>>,
  options?: { readonly value: unknown; readonly schema: OptionSchema },
): HostError | undefined {
  // A key loop, not Object.entries: every call passes its op id here, and the entries were an array per key.
  for (const name in strings) {
    const value = strings[name];
    if (typeof value !== 'string') return invalidOption(name, `of PluginHost.${method} must be a string, got ${describeArgument(value)}`);
  }
  return options === undefined ? undefined : checkOptions(options.value, options.schema, `PluginHost.${method}`);
}

function describeArgument(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

/** The arguments of {@link PluginHost.setup}: a plugin id and credential values, each a string. */
export function checkSetupArguments(pluginId: unknown, values: unknown): HostError | undefined {
  const refused = checkArguments('setup', { pluginId });
  if (refused !== undefined) return refused;
  if (!isPlainObject(values)) return invalidOption('values', `of PluginHost.setup must map credential names to strings, got ${describeArgument(values)}`);
  const bad = Object.entries(values).find(([, value]) => typeof value !== 'string');
  return bad === undefined ? undefined : invalidOption(`values.${bad[0]}`, `of PluginHost.setup must be a string, got ${describeArgument(bad[1])}`);
}
