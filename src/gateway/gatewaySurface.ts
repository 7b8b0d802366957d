/**
 * Resources, resource templates, prompts and completions of every active
 * plugin, as one gateway offers them. Prompts are named like op ids,
 * `plug.<plugin_id>.<prompt>`. Resource URIs and templates keep the
 * plugin's own spelling, so the links a plugin puts in its tool results can
 * be read as they are; the gateway routes each by a map of who lists it.
 * A URI or template that two plugins list is offered only in the qualified
 * form `plug.<plugin_id>:<uri>`, which is always accepted (docs/gateway.md,
 * "Names and URIs").
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import {
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CompleteRequest,
  type CompleteResult,
  type GetPromptResult,
  type LoggingLevel,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import type { HostEventMap } from '../events/HostEvents.js';
import { LOGGING_LEVELS, type PluginRequestOptions } from '../host/mcpSurface.js';
import { pluginIdOf } from '../host/operations.js';
import type { CompletionRequest, PluginHost } from '../host/PluginHost.js';
import type { ClientAsks } from './clientAsks.js';
import { forwardedRequests, type GatewayRequestExtra } from './clientForwarding.js';
import { offeredTo, type GatewayClientPolicy } from './clientPolicy.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';
import { InvalidatedCache } from './invalidatedCache.js';
import { PluginRequestParties } from './requestParties.js';

const QUALIFIED_URI = /^plug\.([a-z][a-z0-9-]{0,63}):(.+)$/s;

/** A resource, template or prompt as the gateway lists it, with the plugin that serves it. */
interface Offered<T> {
  readonly pluginId: string;
  /** The plugin's own URI, template or name. */
  readonly own: string;
  /** What the gateway lists it as. */
  readonly item: T;
}

/** Everything the active plugins offer beyond tools, with the routes back to them. */
interface SurfaceIndex {
  readonly resources: readonly Offered<Resource>[];
  readonly templates: readonly (Offered<ResourceTemplate> & { readonly matcher: UriTemplate })[];
  readonly prompts: readonly Offered<Prompt>[];
  readonly active: ReadonlySet<string>;
}

/** Where a gateway URI leads: a plugin and the URI it knows. */
export interface ResourceRoute {
  readonly pluginId: string;
  readonly uri: string;
}

/** The qualified form of a plugin's URI or template. */
export const qualifiedUri = (pluginId: string, uri: string): string => `plug.${pluginId}:${uri}`;

/** The gateway name of a plugin's prompt. */
export const promptName = (pluginId: string, name: string): string => `plug.${pluginId}.${name}`;

const orEmpty = <T>(listed: ResultAsync<readonly T[], HostError>): Promise<readonly T[]> =>
  // A plugin without the capability, or one that cannot start now, offers nothing here; its tools still say why.
  listed.match(
    (items) => items,
    (): readonly T[] => [],
  );

/** Keeps each spelling once: a spelling two plugins share is qualified for both. */
function spell<T>(entries: readonly { pluginId: string; own: string; item: T }[], rename: (item: T, spelled: string) => T): Offered<T>[] {
  const owners = new Map<string, Set<string>>();
  for (const e of entries) owners.set(e.own, (owners.get(e.own) ?? new Set()).add(e.pluginId));
  return entries.map((e) => ((owners.get(e.own)?.size ?? 0) > 1 ? { ...e, item: rename(e.item, qualifiedUri(e.pluginId, e.own)) } : e));
}

function notFound(what: string, details: Record<string, unknown>): HostError {
  return hostError('GATEWAY_ITEM_NOT_FOUND', `no active plugin offered to this client serves ${what}`, { details });
}

/** The resources, templates and prompts of one host's active plugins, cached until {@link GatewaySurface.invalidate}. */
export class GatewaySurface {
  readonly #host: PluginHost;
  readonly #surface = new InvalidatedCache(() => this.#build());
  /** The clients with requests at each plugin, to which its log messages are attributed. */
  readonly parties = new PluginRequestParties();

  constructor(host: PluginHost) {
    this.#host = host;
  }

  /** Forgets what the plugins listed; the next request asks them again. */
  invalidate(): void {
    this.#surface.invalidate();
  }

  /** The resources `policy` lets its client see. */
  resources(policy: GatewayClientPolicy): ResultAsync<readonly Resource[], HostError> {
    return this.#index().map((index) => index.resources.filter((r) => offeredTo(policy, `plug.${r.pluginId}.`)).map((r) => r.item));
  }

  /** The resource templates `policy` lets its client see. */
  templates(policy: GatewayClientPolicy): ResultAsync<readonly ResourceTemplate[], HostError> {
    return this.#index().map((index) => index.templates.filter((t) => offeredTo(policy, `plug.${t.pluginId}.`)).map((t) => t.item));
  }

  /** The prompts `policy` lets its client see, under their gateway names. */
  prompts(policy: GatewayClientPolicy): ResultAsync<readonly Prompt[], HostError> {
    return this.#index().map((index) => index.prompts.filter((p) => offeredTo(policy, p.item.name)).map((p) => p.item));
  }

  /**
   * The plugin behind a URI the client names: the qualified form, or a URI
   * that exactly one plugin lists or its templates match.
   */
  route(policy: GatewayClientPolicy, uri: string): ResultAsync<ResourceRoute, HostError> {
    return this.#index().andThen((index) => {
      const qualified = QUALIFIED_URI.exec(uri);
      const offered = (pluginId: string): boolean => index.active.has(pluginId) && offeredTo(policy, `plug.${pluginId}.`);
      if (qualified !== null) {
        const [, pluginId = '', own = ''] = qualified;
        return offered(pluginId) ? okAsync({ pluginId, uri: own }) : errAsync(notFound(`the URI ${JSON.stringify(uri)}`, { uri }));
      }
      const listed = index.resources.filter((r) => r.item.uri === uri && offered(r.pluginId)).map((r) => r.pluginId);
      const templated = index.templates.filter((t) => t.item.uriTemplate === t.own && offered(t.pluginId) && t.matcher.match(uri) !== null).map((t) => t.pluginId);
      // A URI one plugin lists and another's template matches is ambiguous too: else any plugin could take over reads of another's URIs by listing them.
      const matching = [...new Set([...listed, ...templated])];
      const [only, ...others] = matching;
      if (only !== undefined && others.length === 0) return okAsync({ pluginId: only, uri });
      if (only !== undefined) {
        return errAsync(
          notFound(`the URI ${JSON.stringify(uri)} alone: the resources or templates of ${matching.join(', ')} all match it`, {
            uri,
            plugins: matching,
            qualified: matching.map((id) => qualifiedUri(id, uri)),
          }),
        );
      }
      return errAsync(notFound(`the URI ${JSON.stringify(uri)}`, { uri }));
    });
  }

  /**
   * Reads a resource for `client` through its route; contents at the URI the
   * plugin was asked for are labelled with the client's URI. `asked` forwards
   * what the plugin asks its client meanwhile to that client, and cancels the
   * read when the client cancels its request.
   */
  read(policy: GatewayClientPolicy, uri: string, client: object, asked: PluginRequestOptions): ResultAsync<ReadResourceResult, HostError> {
    return this.route(policy, uri).andThen((route) =>
      this.#for(client, route.pluginId, () => this.#host.readResource(route.pluginId, route.uri, asked)).map((read) => ({
        ...read,
        contents: read.contents.map((c) => (c.uri === route.uri ? { ...c, uri } : c)),
      })),
    );
  }

  /** A prompt by its gateway name, for `client`; `asked` forwards what the plugin asks its client meanwhile to that client, and cancels it with the client's request. */
  getPrompt(
    policy: GatewayClientPolicy,
    name: string,
    args: Readonly<Record<string, string>> | undefined,
    client: object,
    asked: PluginRequestOptions,
  ): ResultAsync<GetPromptResult, HostError> {
    return this.#promptRoute(policy, name).andThen((route) => this.#for(client, route.pluginId, () => this.#host.getPrompt(route.pluginId, route.own, args ?? {}, asked)));
  }

  /** `ask`, a request of `client` at `pluginId`, counted among that plugin's parties while it runs. */
  #for<T>(client: object, pluginId: string, ask: () => ResultAsync<T, HostError>): ResultAsync<T, HostError> {
    return new ResultAsync(this.parties.during(pluginId, client, ask));
  }

  /**
   * Completions for `client` for a prompt argument (gateway prompt name) or a
   * template variable (the template as listed); `asked` forwards what the
   * plugin asks its client meanwhile to that client, and cancels the
   * completion with the client's request.
   */
  complete(policy: GatewayClientPolicy, params: CompleteRequest['params'], client: object, asked: PluginRequestOptions): ResultAsync<CompleteResult['completion'], HostError> {
    const chosen = params.context?.arguments;
    const request: CompletionRequest = { argument: params.argument, ...(chosen === undefined ? {} : { context: { arguments: chosen } }) };
    const ref = params.ref;
    if (ref.type === 'ref/prompt') {
      return this.#promptRoute(policy, ref.name).andThen((route) =>
        this.#for(client, route.pluginId, () => this.#host.complete(route.pluginId, { type: 'ref/prompt', name: route.own }, request, asked)),
      );
    }
    return this.#index().andThen((index) => {
      const template = index.templates.find((t) => t.item.uriTemplate === ref.uri && offeredTo(policy, `plug.${t.pluginId}.`));
      if (template === undefined) return errAsync(notFound(`the resource template ${JSON.stringify(ref.uri)}`, { uri: ref.uri }));
      return this.#for(client, template.pluginId, () => this.#host.complete(template.pluginId, { type: 'ref/resource', uri: template.own }, request, asked));
    });
  }

  #promptRoute(policy: GatewayClientPolicy, name: string): ResultAsync<Offered<Prompt>, HostError> {
    return this.#index().andThen((index) => {
      const prompt = pluginIdOf(name) === undefined ? undefined : index.prompts.find((p) => p.item.name === name);
      if (prompt === undefined || !offeredTo(policy, name)) return errAsync(notFound(`a prompt named ${JSON.stringify(name)}`, { prompt: name }));
      return okAsync(prompt);
    });
  }

  #index(): ResultAsync<SurfaceIndex, HostError> {
    return this.#surface.get();
  }

  #build(): ResultAsync<SurfaceIndex, HostError> {
    const host = this.#host;
    return host.list().andThen((rows) => {
      const active = rows.filter((r) => r.status === 'active').map((r) => r.name);
      return ResultAsync.fromSafePromise(
        Promise.all(
          active.map(async (pluginId) => ({
            pluginId,
            resources: await orEmpty(host.resources(pluginId)),
            templates: await orEmpty(host.resourceTemplates(pluginId)),
            prompts: await orEmpty(host.prompts(pluginId)),
          })),
        ),
      ).map((perPlugin): SurfaceIndex => {
        const resources = spell(
          perPlugin.flatMap((p) => p.resources.map((item) => ({ pluginId: p.pluginId, own: item.uri, item }))),
          (item, uri) => ({ ...item, uri }),
        );
        const templates = spell(
          perPlugin.flatMap((p) => p.templates.map((item) => ({ pluginId: p.pluginId, own: item.uriTemplate, item }))),
          (item, uriTemplate) => ({ ...item, uriTemplate }),
        ).map((t) => ({ ...t, matcher: new UriTemplate(t.own) }));
        const prompts = perPlugin.flatMap((p) => p.prompts.map((item) => ({ pluginId: p.pluginId, own: item.name, item: { ...item, name: promptName(p.pluginId, item.name) } })));
        return { resources, templates, prompts, active: new Set(active) };
      });
    });
  }
}

/** A client that hears of updates to the resources it subscribed to, under the URIs it subscribed with (a client's `Server`). */
export interface ResourceUpdateSink {
  sendResourceUpdated(params: { uri: string }): Promise<void>;
}

const routeKey = (route: ResourceRoute): string => `${route.pluginId}\n${route.uri}`;

/**
 * How many subscriptions a client's URIs count for: one per plugin resource,
 * and one per URI not routed yet; only those not routed yet when `routingOnly`.
 */
function heldCount(held: ReadonlyMap<string, string | undefined>, routingOnly: boolean): number {
  const resources = new Set<string>();
  let routing = 0;
  for (const key of held.values()) {
    if (key === undefined) routing += 1;
    else resources.add(key);
  }
  return routingOnly ? routing : resources.size + routing;
}

/**
 * The gateway's resource subscriptions: the host subscribes once per plugin
 * resource, whatever number of clients asked, and ends it with the last of
 * them. Each client holds at most `maxPerClient` (its subscriptions and
 * those it is making), counted as the plugins see them: the plain and the
 * qualified spelling of one resource are one subscription. Its
 * subscriptions end when it goes away.
 */
export class GatewaySubscriptions {
  readonly #host: PluginHost;
  readonly #surface: GatewaySurface;
  readonly #maxPerClient: number;
  /** By plugin resource: each subscribed client and the URIs it used for it. */
  readonly #byRoute = new Map<string, { readonly route: ResourceRoute; readonly clients: Map<ResourceUpdateSink, Set<string>> }>();
  /** The URIs each client holds or is subscribing to, with the plugin resource each leads to once routed (undefined before). */
  readonly #held = new Map<ResourceUpdateSink, Map<string, string | undefined>>();
  /** Plugin resources asked for whose answer has not come yet, with how many asks are out. */
  readonly #asking = new Map<string, number>();

  /**
   * @param host - The host whose plugins are subscribed to.
   * @param surface - Routes a client's URI to a plugin.
   * @param maxPerClient - Subscriptions one client may hold at once.
   */
  constructor(host: PluginHost, surface: GatewaySurface, maxPerClient: number = GATEWAY_DEFAULTS.maxSubscriptionsPerClient) {
    this.#host = host;
    this.#surface = surface;
    this.#maxPerClient = maxPerClient;
  }

  /** Subscribes `client` to the resource `uri` leads to; GATEWAY_SUBSCRIPTION_LIMIT past its cap. */
  subscribe(client: ResourceUpdateSink, policy: GatewayClientPolicy, uri: string): ResultAsync<void, HostError> {
    const held = this.#held.get(client) ?? new Map<string, string | undefined>();
    if (held.has(uri)) return okAsync(undefined);
    const limited = (holding: number): HostError =>
      hostError('GATEWAY_SUBSCRIPTION_LIMIT', `this client already holds ${holding} resource subscriptions, the most one client may hold`, {
        details: { uri, limit: this.#maxPerClient },
      });
    // Until its URI is routed a subscription counts as a resource of its own; routed, as the resource the plugin sees.
    if (heldCount(held, true) >= this.#maxPerClient) return errAsync(limited(heldCount(held, true)));
    this.#held.set(client, held.set(uri, undefined));
    return this.#surface
      .route(policy, uri)
      .andThen((route) => {
        const key = routeKey(route);
        if (held.has(uri)) {
          held.delete(uri);
          const holding = heldCount(held, false);
          const another = [...held.values()].includes(key);
          if (!another && holding >= this.#maxPerClient) return errAsync(limited(holding));
          held.set(uri, key);
        }
        const add = (): ResultAsync<void, HostError> => {
          // The client went away (drop) while the plugin was asked: nothing may hold its server, nor the plugin's
          // subscription for it, unless another client holds the resource or is still asking for it.
          if (this.#held.get(client)?.has(uri) !== true) {
            return this.#byRoute.has(key) || this.#asking.has(key) ? okAsync(undefined) : this.#host.unsubscribeResource(route.pluginId, route.uri);
          }
          const current = this.#byRoute.get(key) ?? { route, clients: new Map<ResourceUpdateSink, Set<string>>() };
          this.#byRoute.set(key, current);
          current.clients.set(client, (current.clients.get(client) ?? new Set()).add(uri));
          return okAsync(undefined);
        };
        if (this.#byRoute.has(key)) return add();
        this.#asking.set(key, (this.#asking.get(key) ?? 0) + 1);
        return new ResultAsync(this.#surface.parties.during(route.pluginId, client, () => this.#host.subscribeResource(route.pluginId, route.uri)))
          .andThen(() => {
            this.#answered(key);
            return add();
          })
          .orElse((error) => {
            this.#answered(key);
            return errAsync(error);
          });
      })
      .orElse((error) => {
        this.#unhold(client, uri);
        return errAsync(error);
      });
  }

  /** Ends `client`'s subscription under `uri`; an unknown one is no error. */
  unsubscribe(client: ResourceUpdateSink, uri: string): ResultAsync<void, HostError> {
    for (const [key, entry] of this.#byRoute) {
      const uris = entry.clients.get(client);
      if (uris?.delete(uri) !== true) continue;
      if (uris.size === 0) entry.clients.delete(client);
      this.#unhold(client, uri);
      return this.#release(key);
    }
    return okAsync(undefined);
  }

  /** Ends every subscription of a client that went away; the plugins are unsubscribed from what no other client holds. */
  drop(client: ResourceUpdateSink): void {
    this.#held.delete(client);
    for (const [key, entry] of this.#byRoute) {
      if (entry.clients.delete(client)) void this.#release(key);
    }
  }

  /** Forgets a plugin resource the host no longer holds (its new process refused the subscription): no update of it will come. */
  lost(pluginId: string, uri: string): void {
    const key = routeKey({ pluginId, uri });
    const entry = this.#byRoute.get(key);
    if (entry === undefined) return;
    this.#byRoute.delete(key);
    for (const [client, uris] of entry.clients) for (const spelled of uris) this.#unhold(client, spelled);
  }

  #answered(key: string): void {
    const asks = (this.#asking.get(key) ?? 1) - 1;
    if (asks === 0) this.#asking.delete(key);
    else this.#asking.set(key, asks);
  }

  #unhold(client: ResourceUpdateSink, uri: string): void {
    const held = this.#held.get(client);
    held?.delete(uri);
    if (held?.size === 0) this.#held.delete(client);
  }

  /** Passes a plugin's resource update to every client subscribed to it. */
  updated(pluginId: string, uri: string): void {
    const entry = this.#byRoute.get(routeKey({ pluginId, uri }));
    for (const [client, uris] of entry?.clients ?? []) for (const spelled of uris) void client.sendResourceUpdated({ uri: spelled }).catch(() => undefined);
  }

  #release(key: string): ResultAsync<void, HostError> {
    const entry = this.#byRoute.get(key);
    if (entry === undefined || entry.clients.size > 0) return okAsync(undefined);
    this.#byRoute.delete(key);
    // Another client's subscribe to the same resource is still at the plugin: its answer makes the route anew.
    if (this.#asking.has(key)) return okAsync(undefined);
    return this.#host.unsubscribeResource(entry.route.pluginId, entry.route.uri);
  }
}

const logForwarders = new WeakMap<Server, (message: HostEventMap['log']) => void>();

/**
 * Passes a plugin's log message to a client served by {@link serveSurface}
 * when its policy offers the plugin, the message is attributed to it or to no
 * client ({@link PluginRequestParties}), and it is at or above the level
 * the client set (`logging/setLevel`; every level until it does). The logger
 * is `plug.<plugin_id>`, or `plug.<plugin_id>:<logger>` when the plugin names one.
 */
export function forwardLog(server: Server, message: HostEventMap['log']): void {
  logForwarders.get(server)?.(message);
}

/** A host failure as the JSON-RPC error a client gets for a resources, prompts or completion request. */
function requestError(error: HostError): McpError {
  const code = error.code === 'GATEWAY_ITEM_NOT_FOUND' || error.code === 'PLUGIN_INVALID_PARAMS' ? ErrorCode.InvalidParams : ErrorCode.InternalError;
  return new McpError(code, `${error.code}: ${error.message}`, { code: error.code, message: error.message, hint: error.hint });
}

async function answer<T>(outcome: ResultAsync<T, HostError>): Promise<T> {
  const settled = await outcome;
  if (settled.isErr()) throw requestError(settled.error);
  return settled.value;
}

/**
 * What the host is given for a client's `prompts/get`, `resources/read` or
 * `completion/complete`: that client answers the plugin's requests meanwhile,
 * and the request's signal (aborted by the client's `notifications/cancelled`,
 * or over HTTP by its closing the POST) cancels it at the plugin, as a tool
 * call's does.
 */
function askedBy(server: Server, extra: GatewayRequestExtra, caller: string, asks: ClientAsks): PluginRequestOptions {
  return { clientRequests: forwardedRequests(server, extra, caller, asks), signal: extra.signal };
}

/**
 * Announces and handles resources, templates, subscriptions, prompts,
 * completions and the log level on one client's server (before it connects), within its policy (its subscriptions end with
 * {@link GatewaySubscriptions.drop} when it closes). A failure is a JSON-RPC error
 * whose message starts with the host code, which `data.code` also holds.
 * What a plugin asks its client while it answers a `prompts/get`,
 * `resources/read` or `completion/complete` goes to this client, on that
 * request, as during its tool calls; `caller` names the client, as its tool
 * calls do, so that its requests at one plugin are one party, and `asks`
 * bounds those requests of plugins waiting for it, as for its tool calls. A client that
 * cancels one of those requests cancels it at the plugin, and with it what
 * the plugin asked it meanwhile.
 */
export function serveSurface(server: Server, surface: GatewaySurface, subscriptions: GatewaySubscriptions, policy: GatewayClientPolicy, caller: string, asks: ClientAsks): void {
  server.registerCapabilities({ resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true }, completions: {}, logging: {} });
  let level: LoggingLevel | undefined;
  server.setRequestHandler(SetLevelRequestSchema, (request) => {
    level = request.params.level;
    return {};
  });
  logForwarders.set(server, (message) => {
    if (level !== undefined && LOGGING_LEVELS.indexOf(message.level) < LOGGING_LEVELS.indexOf(level)) return;
    if (!offeredTo(policy, `plug.${message.plugin_id}.`) || !surface.parties.mayHear(message.plugin_id, server)) return;
    const logger = message.logger === undefined ? `plug.${message.plugin_id}` : `plug.${message.plugin_id}:${message.logger}`;
    void server.sendLoggingMessage({ level: message.level, logger, data: message.data }).catch(() => undefined);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: [...(await answer(surface.resources(policy)))] }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [...(await answer(surface.templates(policy)))] }));
  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => answer(surface.read(policy, request.params.uri, server, askedBy(server, extra, caller, asks))));
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    await answer(subscriptions.subscribe(server, policy, request.params.uri));
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    await answer(subscriptions.unsubscribe(server, request.params.uri));
    return {};
  });
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [...(await answer(surface.prompts(policy)))] }));
  server.setRequestHandler(GetPromptRequestSchema, (request, extra) =>
    answer(surface.getPrompt(policy, request.params.name, request.params.arguments, server, askedBy(server, extra, caller, asks))),
  );
  server.setRequestHandler(CompleteRequestSchema, async (request, extra) => ({
    completion: await answer(surface.complete(policy, request.params, server, askedBy(server, extra, caller, asks))),
  }));
}
