/**
 * Resources, resource templates, prompts, completions and logging of a
 * host's MCP-speaking plugins (`mcp-plugin`, `esm-module`), and the
 * notifications they send turned into typed host events. The host
 * addresses every item by plugin id, so two plugins never collide here;
 * the gateway namespaces them for its clients (docs/gateway.md, "Names and URIs").
 */
import {
  LoggingLevelSchema,
  type CompleteRequest,
  type CompleteResult,
  type GetPromptResult,
  type LoggingLevel,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { err, errAsync, okAsync, ResultAsync } from 'neverthrow';
import { hostError, withDetails, type HostError } from '../errors/HostError.js';
import type { HostEventMap, HostEvents } from '../events/HostEvents.js';
import type { OptionSchema } from '../options/optionRules.js';
import type { Clock } from '../ports/ports.js';
import { redactJsonStrings, SecretRedactor, type KnownSecrets } from '../secrets/knownSecrets.js';
import { errorWithoutSecrets } from '../secrets/redactedErrors.js';
import type { McpPluginNotice, McpSurface, SurfaceRequestOptions } from '../shapes/mcp/McpSurface.js';
import { startRefusal } from './admission.js';
import type { ClientRequestHandlers } from './clientRequests.js';
import { stoppedByRetirement } from './drain.js';
import { closedError, notInstalled, type HostCatalog } from './hostCatalog.js';
import { checkArguments, METHOD_OPTION_SCHEMAS } from './hostConfig.js';
import type { PluginRuntime } from './PluginRuntime.js';
import type { PluginRuntimes } from './runtimes.js';
import type { Supervisor } from './Supervisor.js';

/** The levels of MCP log messages, lowest first, as the SDK's schema lists them. */
export const LOGGING_LEVELS: readonly LoggingLevel[] = LoggingLevelSchema.options;

/** What a completion is asked about: a prompt argument or a resource template variable. */
export type CompletionReference = CompleteRequest['params']['ref'];

/** The argument being completed, and the values of the others already chosen. */
export interface CompletionRequest {
  /** The argument's name and the text typed so far. */
  readonly argument: { readonly name: string; readonly value: string };
  /** Values of arguments already chosen, which may narrow the completion. */
  readonly context?: { readonly arguments?: Readonly<Record<string, string>> };
}

/**
 * Options of {@link PluginHost.getPrompt}, {@link PluginHost.readResource}
 * and {@link PluginHost.complete}: the requests beyond tools during which a
 * plugin may ask its client.
 */
export interface PluginRequestOptions {
  /**
   * Answers the plugin's sampling, elicitation and roots requests sent while
   * this request is in flight, instead of the host's `clientRequests` (the
   * gateway passes the asking client's, so they reach that client). As for a
   * call's own: only the kinds the plugin declares, each answer within
   * `clientRequestTimeoutMs` and never after this request ends; requests of
   * another party in flight at the plugin then make the plugin's request
   * unattributable, and it is refused.
   */
  readonly clientRequests?: ClientRequestHandlers;
  /**
   * Cancels the request: the plugin is sent `notifications/cancelled` for it,
   * what it asked its client meanwhile is abandoned (a forwarded request is
   * cancelled in turn), and the request fails with PLUGIN_CANCELLED, as a
   * call cancelled through `HostCallOptions.signal` does. The gateway passes
   * the signal of its client's request, so a client that cancels its
   * `prompts/get`, `resources/read` or `completion/complete` (or closes its
   * HTTP request) stops the plugin's work for it.
   */
  readonly signal?: AbortSignal;
}

/**
 * Turns a plugin's notification into the host event that carries it with the
 * plugin id; a log message's data has the secret values `secrets` knows
 * redacted, since a plugin that logs its configuration would hand its
 * credentials to every listener and gateway client.
 */
export function emitNotice(events: HostEvents, pluginId: string, notice: McpPluginNotice, secrets: SecretRedactor = SecretRedactor.none): void {
  switch (notice.kind) {
    case 'list_changed':
      events.emit('list_changed', {
        plugin_id: pluginId,
        list: notice.list,
        ...(notice.list === 'tools' && notice.mismatch !== undefined ? { code: notice.mismatch.code } : {}),
      });
      return;
    case 'resource_updated':
      events.emit('resource:updated', { plugin_id: pluginId, uri: notice.uri });
      return;
    case 'log':
      // Data nested too deep for a listener's recursive walk arrives as a marker (the transport's bound on every line).
      events.emit('log', {
        plugin_id: pluginId,
        level: notice.level,
        ...(notice.logger === undefined ? {} : { logger: secrets.redact(notice.logger) }),
        data: redactJsonStrings(notice.data, secrets),
        ...(notice.suppressed === undefined ? {} : { suppressed: notice.suppressed }),
      });
      return;
    case 'subscription_lost':
      events.emit('resource:subscription_lost', { plugin_id: pluginId, uri: notice.uri, code: notice.error.code, message: notice.error.message });
      return;
    case 'output_schema_unchecked':
      events.emit('output_schema:unchecked', {
        plugin_id: pluginId,
        tool: notice.tool,
        bound: notice.bound,
        ...(notice.schemaBytes === undefined ? {} : { schema_bytes: notice.schemaBytes }),
      });
      return;
    case 'answer_validation':
      events.emit('answer:validation', {
        plugin_id: pluginId,
        tool: notice.tool,
        schema: 'output',
        phase: notice.phase,
        ...(notice.phase === 'end' ? { outcome: notice.outcome, duration_ms: Math.round(notice.durationMs) } : {}),
      });
      return;
  }
}

/** What {@link PluginSurfaces} works with. */
export interface SurfaceParts {
  readonly catalog: HostCatalog;
  readonly runtimes: PluginRuntimes;
  /** Keeps the crash books: a plugin failing a surface request counts as one failing a call. */
  readonly supervisor: Supervisor;
  /** Where the plugins' exits are heard, and subscriptions a new process refused are told. */
  readonly events: HostEvents;
  readonly clock: Clock;
  readonly isClosed: () => boolean;
  /** Whether the plugin was installed after the host opened (not active yet). */
  readonly isPending: (pluginId: string) => boolean;
  /** The secret values the host gave its plugins: a failed request's error is handed on without them, as a failed call's is. */
  readonly knownSecrets: KnownSecrets;
}

/** The session options of a request beyond tools: the caller's own client-request handlers and signal, when it brought them. */
function surfaceOptions(options: PluginRequestOptions | undefined): SurfaceRequestOptions | undefined {
  if (options?.clientRequests === undefined && options?.signal === undefined) return undefined;
  return { ...(options.clientRequests === undefined ? {} : { clientRequests: options.clientRequests }), ...(options.signal === undefined ? {} : { signal: options.signal }) };
}

const withPlugin = (error: HostError, pluginId: string): HostError => (error.details.plugin_id === undefined ? withDetails(error, { plugin_id: pluginId }) : error);

function isStringRecord(value: unknown): value is Readonly<Record<string, string>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');
}

/** What the host asked of one plugin's surface: kept across its processes and sessions. */
interface WantedSurface {
  readonly subscriptions: Set<string>;
  logLevel?: LoggingLevel;
}

/**
 * The host's side of the MCP surface beyond tools. Each request starts the
 * plugin when it is not running, through the same admission (quarantine,
 * credentials, pending restart), checks and sandbox as a call, and holds
 * off its idle stop while it runs; a subscription holds it off until the
 * last one ends. A request that crashes the plugin counts toward quarantine
 * exactly as a crashed call does.
 *
 * The subscriptions and log level the host set belong to the plugin, not to
 * one process: every new session of the plugin (after a crash, a reload or
 * an upgrade) sets them again when its process starts. A plugin holding
 * subscriptions whose process dies on its own is counted as crashed and
 * started again as soon as its crash backoff allows, so updates resume
 * without a caller having to make a request.
 */
export class PluginSurfaces {
  readonly #parts: SurfaceParts;
  readonly #wanted = new Map<string, WantedSurface>();
  /** Pending restarts of plugins that died holding subscriptions, by plugin id: each cancels its timer. */
  readonly #resumes = new Map<string, () => void>();
  /** The session each running process was started for, by pid: an exit is the running session's only when it started the process. */
  readonly #spawnedBy = new Map<number, PluginRuntime>();

  constructor(parts: SurfaceParts) {
    this.#parts = parts;
    parts.events.on('spawn', (spawned) => {
      const runtime = parts.runtimes.running(spawned.plugin_id);
      if (runtime !== undefined) this.#spawnedBy.set(spawned.pid, runtime);
    });
    parts.events.on('exit', (exited) => this.#exited(exited));
    parts.events.on('quarantine', (quarantine) => {
      if (quarantine.quarantined && quarantine.next_retry_at !== undefined) this.#resumeAt(quarantine.plugin_id, quarantine.next_retry_at);
    });
    parts.events.on('resource:subscription_lost', (lost) => this.#forget(lost.plugin_id, lost.uri));
  }

  /**
   * Gives a new session of `pluginId` what the host asked of the plugin
   * before: its process subscribes and sets the level when it starts, and
   * the session is held from its idle stop while subscriptions remain.
   */
  adopt(pluginId: string, runtime: PluginRuntime): void {
    const wanted = this.#wanted.get(pluginId);
    const surface = runtime.session.surface;
    if (wanted === undefined || surface === undefined) return;
    surface.adopt({ subscriptions: [...wanted.subscriptions], ...(wanted.logLevel === undefined ? {} : { logLevel: wanted.logLevel }) });
    runtime.hold(wanted.subscriptions.size > 0);
  }

  /** Every resource the plugin lists. */
  resources(pluginId: string): ResultAsync<readonly Resource[], HostError> {
    return this.#use('resources', { pluginId }, (s) => s.listResources());
  }

  /** Every resource template the plugin lists. */
  resourceTemplates(pluginId: string): ResultAsync<readonly ResourceTemplate[], HostError> {
    return this.#use('resourceTemplates', { pluginId }, (s) => s.listResourceTemplates());
  }

  /** Reads one resource by the URI the plugin gives it; `options.clientRequests` answers what the plugin asks meanwhile, `options.signal` cancels it. */
  readResource(pluginId: string, uri: string, options?: PluginRequestOptions): ResultAsync<ReadResourceResult, HostError> {
    return this.#use('readResource', { pluginId, uri }, (s) => s.request('resources/read', { uri }, surfaceOptions(options)), { value: options, schema: METHOD_OPTION_SCHEMAS.readResource });
  }

  /** Subscribes to a resource; its updates arrive as `resource:updated` events, from every later process of the plugin too. */
  subscribeResource(pluginId: string, uri: string): ResultAsync<void, HostError> {
    return this.#use('subscribeResource', { pluginId, uri }, (s, hold) =>
      s.subscribe(uri).map(() => {
        this.#want(pluginId).subscriptions.add(uri);
        hold(true);
      }),
    );
  }

  /** Ends a subscription; a plugin that is not running is not started for it. */
  unsubscribeResource(pluginId: string, uri: string): ResultAsync<void, HostError> {
    const invalid = checkArguments('unsubscribeResource', { pluginId, uri });
    if (invalid !== undefined) return errAsync(invalid);
    this.#forget(pluginId, uri);
    if (this.#parts.runtimes.running(pluginId) === undefined) return okAsync(undefined);
    return this.#use('unsubscribeResource', { pluginId, uri }, (s, hold) => s.unsubscribe(uri).map(() => hold(s.subscriptions.size > 0)));
  }

  /** Every prompt the plugin lists. */
  prompts(pluginId: string): ResultAsync<readonly Prompt[], HostError> {
    return this.#use('prompts', { pluginId }, (s) => s.listPrompts());
  }

  /** One prompt, filled in with `args`; `options.clientRequests` answers what the plugin asks meanwhile, `options.signal` cancels it. */
  getPrompt(pluginId: string, name: string, args: Readonly<Record<string, string>> = {}, options?: PluginRequestOptions): ResultAsync<GetPromptResult, HostError> {
    if (!isStringRecord(args)) return errAsync(hostError('HOST_INVALID_OPTIONS', 'args of PluginHost.getPrompt must map argument names to strings', { details: { option: 'args' } }));
    return this.#use('getPrompt', { pluginId, name }, (s) => s.request('prompts/get', { name, arguments: { ...args } }, surfaceOptions(options)), { value: options, schema: METHOD_OPTION_SCHEMAS.getPrompt });
  }

  /** Completion values for a prompt argument or a resource template variable; `options.clientRequests` answers what the plugin asks meanwhile, `options.signal` cancels it. */
  complete(pluginId: string, ref: CompletionReference, request: CompletionRequest, options?: PluginRequestOptions): ResultAsync<CompleteResult['completion'], HostError> {
    const argument = request.argument as unknown;
    const shaped = typeof argument === 'object' && argument !== null && typeof (argument as { name?: unknown }).name === 'string' && typeof (argument as { value?: unknown }).value === 'string';
    if (!shaped) return errAsync(hostError('HOST_INVALID_OPTIONS', 'PluginHost.complete needs argument: { name, value } with two strings', { details: { option: 'argument' } }));
    const chosen = request.context?.arguments;
    if (chosen !== undefined && !isStringRecord(chosen)) {
      return errAsync(hostError('HOST_INVALID_OPTIONS', 'context.arguments of PluginHost.complete must map argument names to strings', { details: { option: 'context.arguments' } }));
    }
    const params: CompleteRequest['params'] = {
      ref,
      argument: { name: request.argument.name, value: request.argument.value },
      ...(chosen === undefined ? {} : { context: { arguments: { ...chosen } } }),
    };
    return this.#use('complete', { pluginId }, (s) => s.request('completion/complete', params, surfaceOptions(options)).map((answer) => answer.completion), {
      value: options,
      schema: METHOD_OPTION_SCHEMAS.complete,
    });
  }

  /** Sets the lowest level of log messages the plugin sends as `log` events, on every later process of the plugin too. */
  setLogLevel(pluginId: string, level: LoggingLevel): ResultAsync<void, HostError> {
    if (!LOGGING_LEVELS.includes(level)) {
      return errAsync(hostError('HOST_INVALID_OPTIONS', `level of PluginHost.setLogLevel must be one of ${LOGGING_LEVELS.join(', ')}, got ${JSON.stringify(level)}`, { details: { option: 'level' } }));
    }
    return this.#use('setLogLevel', { pluginId }, (s) =>
      s.setLogLevel(level).map(() => {
        this.#want(pluginId).logLevel = level;
      }),
    );
  }

  #want(pluginId: string): WantedSurface {
    let wanted = this.#wanted.get(pluginId);
    if (wanted === undefined) {
      wanted = { subscriptions: new Set() };
      this.#wanted.set(pluginId, wanted);
    }
    return wanted;
  }

  #forget(pluginId: string, uri: string): void {
    const wanted = this.#wanted.get(pluginId);
    wanted?.subscriptions.delete(uri);
    if (wanted?.subscriptions.size !== 0) return;
    this.#resumes.get(pluginId)?.();
    this.#resumes.delete(pluginId);
    this.#parts.runtimes.running(pluginId)?.hold(false);
  }

  /**
   * A process of a plugin holding subscriptions ended. When its session is
   * still the running one (the host did not stop it) and no call was in
   * flight, the process died on its own between requests: that is the
   * plugin's failure, counted like a crash during a call.
   */
  #exited(exited: HostEventMap['exit']): void {
    const pluginId = exited.plugin_id;
    const startedFor = this.#spawnedBy.get(exited.pid);
    this.#spawnedBy.delete(exited.pid);
    if (this.#parts.isClosed() || !this.#holdsSubscriptions(pluginId)) return;
    const runtime = this.#parts.runtimes.running(pluginId);
    // A call or request in flight sees the death itself and counts it, with its own account of it.
    if (runtime === undefined || runtime !== startedFor || runtime.inFlight > 0) return;
    const failure = hostError('PLUGIN_CRASHED', `plugin '${pluginId}' ${exited.exit.description} while it held resource subscriptions`, {
      details: { plugin_id: pluginId, pid: exited.pid, status: exited.exit.status },
    });
    void this.#parts.supervisor.pluginFailed(pluginId, runtime, failure, 'call');
  }

  #holdsSubscriptions(pluginId: string): boolean {
    return (this.#wanted.get(pluginId)?.subscriptions.size ?? 0) > 0;
  }

  /**
   * A plugin holding subscriptions failed and waits on its backoff until
   * `retryAt`: it is started again then (its new process subscribes), so
   * updates resume without a caller having to make a request. A start that
   * fails again counts, and the next step of the ladder schedules the next try.
   */
  #resumeAt(pluginId: string, retryAt: number): void {
    const { clock } = this.#parts;
    this.#resumes.get(pluginId)?.();
    this.#resumes.delete(pluginId);
    if (!this.#holdsSubscriptions(pluginId)) return;
    const cancel = clock.setTimer(() => {
      this.#resumes.delete(pluginId);
      if (this.#parts.isClosed() || !this.#holdsSubscriptions(pluginId)) return;
      void this.#use('resume', { pluginId }, (s) => s.capabilities().map(() => undefined));
    }, Math.max(0, retryAt - clock.now()));
    this.#resumes.set(pluginId, cancel);
  }

  #use<T>(
    method: string,
    strings: Readonly<Record<string, unknown>>,
    run: (surface: McpSurface, hold: (held: boolean) => void) => ResultAsync<T, HostError>,
    options?: { readonly value: unknown; readonly schema: OptionSchema },
  ): ResultAsync<T, HostError> {
    const { catalog, isClosed } = this.#parts;
    if (isClosed()) return errAsync(closedError());
    const invalid = checkArguments(method, strings, options);
    if (invalid !== undefined) return errAsync(invalid);
    // Another process may have removed, quarantined or upgraded the plugin since the last read: one stat tells.
    if (catalog.changedOnDisk()) return catalog.refresh().andThen(() => this.#useRead(method, strings, run));
    return this.#useRead(method, strings, run);
  }

  /** {@link PluginSurfaces.#use} on the snapshot now held. */
  #useRead<T>(
    method: string,
    strings: Readonly<Record<string, unknown>>,
    run: (surface: McpSurface, hold: (held: boolean) => void) => ResultAsync<T, HostError>,
  ): ResultAsync<T, HostError> {
    const { catalog, runtimes, supervisor, clock, isClosed, isPending } = this.#parts;
    if (isClosed()) return errAsync(closedError());
    const pluginId = strings.pluginId as string;
    const plugin = catalog.cachedPlugin(pluginId);
    if (plugin === undefined) return errAsync(notInstalled(pluginId));
    const refused = startRefusal(plugin, `plug.${pluginId}`, clock.now(), isPending(pluginId));
    if (refused !== undefined) return errAsync(refused);
    const taken = runtimes.take(plugin);
    if (taken.isErr()) return errAsync(taken.error);
    const runtime = taken.value;
    const surface = runtime.session.surface;
    if (surface === undefined) {
      const shape = runtime.session.shape;
      return errAsync(
        hostError('PLUGIN_METHOD_NOT_FOUND', `plugin '${pluginId}' has shape ${shape}, which has no resources, prompts, completions or logging`, {
          details: { plugin_id: pluginId, shape, method },
        }),
      );
    }
    const started = clock.now();
    runtime.begin();
    const ran = run(surface, (held) => runtime.hold(held));
    return new ResultAsync(
      (async () => {
        const outcome = await ran;
        runtime.end();
        if (outcome.isErr()) {
          // A start without a granted env variable names it, and is not counted (startEnvHints.ts).
          const failure = runtimes.withStartEnv(pluginId, stoppedByRetirement(outcome.error, runtime, isClosed()));
          if (supervisor.countsAgainstPlugin(failure)) await supervisor.pluginFailed(pluginId, runtime, failure, 'call');
          // The plugin wrote the error's text (a prompt or resource error quoting its request URL, key and all); the gateway hands it to every client.
          return err(errorWithoutSecrets(withPlugin(failure, pluginId), this.#parts.knownSecrets.redactor));
        }
        const cleared = supervisor.callSucceeded(pluginId, started);
        if (cleared !== undefined) await cleared;
        return outcome;
      })(),
    );
  }
}
