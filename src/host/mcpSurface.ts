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
import { errAsync, ResultAsync } from 'neverthrow';
import { hostError, withDetails, type HostError } from '../errors/HostError.js';
import type { HostEvents } from '../events/HostEvents.js';
import type { Clock } from '../ports/ports.js';
import type { McpPluginNotice, McpSurface } from '../shapes/mcp/McpSurface.js';
import { startRefusal } from './admission.js';
import { closedError, notInstalled, type HostCatalog } from './hostCatalog.js';
import { checkArguments } from './hostConfig.js';
import type { PluginRuntimes } from './runtimes.js';

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

/** Turns a plugin's notification into the host event that carries it with the plugin id. */
export function emitNotice(events: HostEvents, pluginId: string, notice: McpPluginNotice): void {
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
      events.emit('log', { plugin_id: pluginId, level: notice.level, ...(notice.logger === undefined ? {} : { logger: notice.logger }), data: notice.data });
      return;
  }
}

/** What {@link PluginSurfaces} works with. */
export interface SurfaceParts {
  readonly catalog: HostCatalog;
  readonly runtimes: PluginRuntimes;
  readonly clock: Clock;
  readonly isClosed: () => boolean;
  /** Whether the plugin was installed after the host opened (not active yet). */
  readonly isPending: (pluginId: string) => boolean;
}

const withPlugin = (error: HostError, pluginId: string): HostError => (error.details.plugin_id === undefined ? withDetails(error, { plugin_id: pluginId }) : error);

function isStringRecord(value: unknown): value is Readonly<Record<string, string>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');
}

/**
 * The host's side of the MCP surface beyond tools. Each request starts the
 * plugin when it is not running, through the same admission (quarantine,
 * credentials, pending restart), checks and sandbox as a call, and holds
 * off its idle stop while it runs; a subscription holds it off until the
 * last one ends.
 */
export class PluginSurfaces {
  readonly #parts: SurfaceParts;

  constructor(parts: SurfaceParts) {
    this.#parts = parts;
  }

  /** Every resource the plugin lists. */
  resources(pluginId: string): ResultAsync<readonly Resource[], HostError> {
    return this.#use('resources', { pluginId }, (s) => s.listResources());
  }

  /** Every resource template the plugin lists. */
  resourceTemplates(pluginId: string): ResultAsync<readonly ResourceTemplate[], HostError> {
    return this.#use('resourceTemplates', { pluginId }, (s) => s.listResourceTemplates());
  }

  /** Reads one resource by the URI the plugin gives it. */
  readResource(pluginId: string, uri: string): ResultAsync<ReadResourceResult, HostError> {
    return this.#use('readResource', { pluginId, uri }, (s) => s.request('resources/read', { uri }));
  }

  /** Subscribes to a resource; its updates arrive as `resource:updated` events. */
  subscribeResource(pluginId: string, uri: string): ResultAsync<void, HostError> {
    return this.#use('subscribeResource', { pluginId, uri }, (s, hold) => s.subscribe(uri).map(() => hold(s.subscriptions.size > 0)));
  }

  /** Ends a subscription. */
  unsubscribeResource(pluginId: string, uri: string): ResultAsync<void, HostError> {
    return this.#use('unsubscribeResource', { pluginId, uri }, (s, hold) => s.unsubscribe(uri).map(() => hold(s.subscriptions.size > 0)));
  }

  /** Every prompt the plugin lists. */
  prompts(pluginId: string): ResultAsync<readonly Prompt[], HostError> {
    return this.#use('prompts', { pluginId }, (s) => s.listPrompts());
  }

  /** One prompt, filled in with `args`. */
  getPrompt(pluginId: string, name: string, args: Readonly<Record<string, string>> = {}): ResultAsync<GetPromptResult, HostError> {
    if (!isStringRecord(args)) return errAsync(hostError('HOST_INVALID_OPTIONS', 'args of PluginHost.getPrompt must map argument names to strings', { details: { option: 'args' } }));
    return this.#use('getPrompt', { pluginId, name }, (s) => s.request('prompts/get', { name, arguments: { ...args } }));
  }

  /** Completion values for a prompt argument or a resource template variable. */
  complete(pluginId: string, ref: CompletionReference, request: CompletionRequest): ResultAsync<CompleteResult['completion'], HostError> {
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
    return this.#use('complete', { pluginId }, (s) => s.request('completion/complete', params).map((answer) => answer.completion));
  }

  /** Sets the lowest level of log messages the plugin sends as `log` events. */
  setLogLevel(pluginId: string, level: LoggingLevel): ResultAsync<void, HostError> {
    if (!LOGGING_LEVELS.includes(level)) {
      return errAsync(hostError('HOST_INVALID_OPTIONS', `level of PluginHost.setLogLevel must be one of ${LOGGING_LEVELS.join(', ')}, got ${JSON.stringify(level)}`, { details: { option: 'level' } }));
    }
    return this.#use('setLogLevel', { pluginId }, (s) => s.setLogLevel(level));
  }

  #use<T>(
    method: string,
    strings: Readonly<Record<string, unknown>>,
    run: (surface: McpSurface, hold: (held: boolean) => void) => ResultAsync<T, HostError>,
  ): ResultAsync<T, HostError> {
    const { catalog, runtimes, clock, isClosed, isPending } = this.#parts;
    if (isClosed()) return errAsync(closedError());
    const invalid = checkArguments(method, strings);
    if (invalid !== undefined) return errAsync(invalid);
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
    runtime.begin();
    const ran = run(surface, (held) => runtime.hold(held));
    return new ResultAsync(
      (async () => {
        const outcome = await ran;
        runtime.end();
        return outcome.mapErr((error) => withPlugin(error, pluginId));
      })(),
    );
  }
}
