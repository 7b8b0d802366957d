/**
 * `serveGateway`: every active plugin of a host as one MCP server, over
 * stdio and over Streamable HTTP. Each client (the stdio peer, each HTTP
 * session) gets its own low-level SDK `Server`, so schemas pass through
 * unchanged and sessions share nothing but the host.
 */
import type { Readable, Writable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { HostTelemetry, type HostTelemetryOptions } from '../observability/telemetry.js';
import type { PluginHost } from '../host/PluginHost.js';
import { ClientAsks } from './clientAsks.js';
import { offeredTo, type GatewayClientPolicy } from './clientPolicy.js';
import { numberRequestsFromOne } from '../shapes/mcp/requestIds.js';
import { callForClient, type ClientIdentity, type ToolCallClient } from './clientToolCall.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';
import { forwardLog, GatewaySubscriptions, GatewaySurface, serveSurface } from './gatewaySurface.js';
import { activeFingerprint, GatewayTools } from './gatewayTools.js';
import { listenHttp, type GatewayHttpOptions, type HttpListener } from './httpListener.js';
import type { PluginRequestParties } from './requestParties.js';
import { HttpToolCalls } from './httpToolCalls.js';
import type { BodyBudget, HttpSessionTransport } from './streamableHttpTransport.js';
import { connectStdio } from './stdioToolCalls.js';

/** Where the stdio transport reads and writes. Default this process's stdin and stdout. */
export interface GatewayStdioOptions {
  /** Where requests come from. */
  readonly stdin?: Readable;
  /** Where answers go. */
  readonly stdout?: Writable;
}

/** Options of {@link serveGateway}; at least one of `stdio` and `http` is needed. */
export interface GatewayOptions {
  /** The server name announced to clients. Default `mcp-plugin-host`. */
  readonly name?: string;
  /** The server version announced to clients. Default `0.0.0`. */
  readonly version?: string;
  /** The policy of the stdio client and of HTTP clients that hold the default token. */
  readonly policy?: GatewayClientPolicy;
  /** Serve one client over stdio. */
  readonly stdio?: GatewayStdioOptions | true;
  /** Serve clients over Streamable HTTP. */
  readonly http?: GatewayHttpOptions;
  /** How often the catalog is read again to notice installs, removals and quarantines, in ms. Default 2000. */
  readonly catalogPollMs?: number;
  /** Resource subscriptions one client may hold at once; one more is refused with GATEWAY_SUBSCRIPTION_LIMIT. Default 64. */
  readonly maxSubscriptionsPerClient?: number;
  /**
   * Plugins' sampling, elicitation and roots requests one client (the stdio client, an HTTP client's token with all
   * its sessions) may have waiting for its answer at once; one more is refused with a JSON-RPC error the plugin gets.
   * Default 16.
   */
  readonly maxPendingRequestsPerClient?: number;
  /** OpenTelemetry providers for the gateway's SERVER spans and `mcp.server.operation.duration`. Default the global ones. */
  readonly telemetry?: HostTelemetryOptions;
}

/** A running gateway. */
export interface GatewayHandle {
  /** The HTTP endpoint (`http://<host>:<port>/mcp`), when serving HTTP. */
  readonly url: string | undefined;
  /** The default bearer token (supplied or generated), when serving HTTP. */
  readonly token: string | undefined;
  /** HTTP sessions open now (0 without HTTP). */
  readonly sessions: number;
  /** Tells every connected client that the tool list changed (the gateway does so itself on plugin changes). */
  notifyToolsChanged(): void;
  /** Stops listening and disconnects every client; the host stays open. */
  close(): Promise<void>;
}

function invalid(message: string, option: string): HostError {
  return hostError('HOST_INVALID_OPTIONS', message, { details: { option } });
}

let clientCount = 0;

/** One client's MCP server: lists and calls the tools its policy lets it see; confirmations and plugin requests go to its client. */
function clientServer(
  host: PluginHost,
  tools: GatewayTools,
  options: GatewayOptions,
  policy: GatewayClientPolicy,
  client: ClientIdentity,
  telemetry: HostTelemetry,
  parties: PluginRequestParties,
  asks: ClientAsks,
): ToolCallClient {
  const server = new Server(
    { name: options.name ?? GATEWAY_DEFAULTS.serverName, version: options.version ?? '0.0.0' },
    { capabilities: { tools: { listChanged: true } } },
  );
  numberRequestsFromOne(server);
  const maxRisk = policy.maxRisk ?? options.policy?.maxRisk ?? GATEWAY_DEFAULTS.maxRisk;
  const caller = `gateway-client-${++clientCount}`;
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const listed = await tools.list();
    if (listed.isErr()) throw listed.error;
    return { tools: listed.value.filter((t) => offeredTo(policy, t.opId)).map((t) => t.tool) };
  });
  const calls: ToolCallClient = { host, server, policy, maxRisk, caller, identity: client, telemetry, parties, asks };
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    callForClient(calls, { name: request.params.name, arguments: request.params.arguments, progressToken: request.params._meta?.progressToken }, extra),
  );
  return calls;
}

/**
 * Which plugins a gateway offers, and the one place that decides its clients
 * are told the list changed. The poll, `catalog:changed` and `quarantine` all
 * only ask for a check; checks run one at a time against the last offered
 * set, so a change seen by several of them is told once.
 */
class OfferedPlugins {
  readonly #host: PluginHost;
  readonly #changed: () => void;
  #fingerprint: string;
  #checking = false;
  #again = false;
  /** An upgrade keeps the id and may keep the version, so the fingerprint alone does not show it. */
  #upgraded = false;

  constructor(host: PluginHost, fingerprint: string, changed: () => void) {
    this.#host = host;
    this.#fingerprint = fingerprint;
    this.#changed = changed;
  }

  /** Reads the plugins again (after the check in progress, if any) and tells the clients when what they are offered changed. */
  check(upgraded = false): void {
    this.#upgraded ||= upgraded;
    if (this.#checking) {
      this.#again = true;
      return;
    }
    if (this.#host.closed) return;
    this.#checking = true;
    void this.#host.list().match(
      (rows) => this.#checked(activeFingerprint(rows)),
      () => this.#checked(this.#fingerprint),
    );
  }

  #checked(fingerprint: string): void {
    const upgraded = this.#upgraded;
    this.#upgraded = false;
    if (fingerprint !== this.#fingerprint || upgraded) {
      this.#fingerprint = fingerprint;
      this.#changed();
    }
    this.#checking = false;
    if (this.#again) {
      this.#again = false;
      this.check();
    }
  }
}

/**
 * Serves every active plugin of `host` as one MCP server: `tools/list`
 * under op ids with the plugins' schemas, titles and annotations;
 * `tools/call` through `host.call` under each client's risk ceiling, with
 * failures as `isError` results carrying the host code; `list_changed` when
 * a plugin is installed, removed or quarantined. HTTP binds to loopback,
 * wants a bearer token and refuses foreign Origins. The host stays the
 * caller's: closing the gateway does not close it.
 */
export function serveGateway(host: PluginHost, options: GatewayOptions): ResultAsync<GatewayHandle, HostError> {
  if (options.stdio === undefined && options.http === undefined) return errAsync(invalid('serveGateway needs stdio, http or both', 'transport'));
  const pollMs = options.catalogPollMs ?? GATEWAY_DEFAULTS.catalogPollMs;
  if (!Number.isSafeInteger(pollMs) || pollMs <= 0) return errAsync(invalid(`catalogPollMs must be a positive integer, not ${String(pollMs)}`, 'catalogPollMs'));
  const tools = new GatewayTools(host);
  const telemetry = new HostTelemetry(options.telemetry);
  const surface = new GatewaySurface(host);
  const maxSubscriptions = options.maxSubscriptionsPerClient ?? GATEWAY_DEFAULTS.maxSubscriptionsPerClient;
  if (!Number.isSafeInteger(maxSubscriptions) || maxSubscriptions <= 0) {
    return errAsync(invalid(`maxSubscriptionsPerClient must be a positive integer, not ${String(maxSubscriptions)}`, 'maxSubscriptionsPerClient'));
  }
  const subscriptions = new GatewaySubscriptions(host, surface, maxSubscriptions);
  const maxPending = options.maxPendingRequestsPerClient ?? GATEWAY_DEFAULTS.maxPendingRequestsPerClient;
  if (!Number.isSafeInteger(maxPending) || maxPending <= 0) {
    return errAsync(invalid(`maxPendingRequestsPerClient must be a positive integer, not ${String(maxPending)}`, 'maxPendingRequestsPerClient'));
  }
  // One bound per HTTP client, whose sessions share its body budget: opening another session must not buy more.
  const asksByClient = new WeakMap<BodyBudget, ClientAsks>();
  const asksOf = (budget: BodyBudget): ClientAsks => {
    let asks = asksByClient.get(budget);
    if (asks === undefined) asksByClient.set(budget, (asks = new ClientAsks(maxPending, budget)));
    return asks;
  };
  const servers = new Set<Server>();
  const defaultPolicy = options.policy ?? {};
  const open = (policy: GatewayClientPolicy, clientName: string, transport: ClientIdentity['transport'], asks: ClientAsks): ToolCallClient => {
    const calls = clientServer(host, tools, options, policy, { name: clientName, transport }, telemetry, surface.parties, asks);
    const { server } = calls;
    serveSurface(server, surface, subscriptions, policy, calls.caller, asks);
    servers.add(server);
    server.onclose = () => {
      servers.delete(server);
      subscriptions.drop(server);
    };
    return calls;
  };
  const connect = (policy: GatewayClientPolicy, clientName: string, transport: HttpSessionTransport, budget: BodyBudget): Server => {
    const calls = open(policy, clientName, 'http', asksOf(budget));
    transport.routeFirst(new HttpToolCalls(calls, transport));
    return calls.server;
  };
  const notifyToolsChanged = (): void => {
    tools.invalidate();
    for (const server of servers) void server.sendToolListChanged().catch(() => undefined);
  };
  const notifySurfaceChanged = (list: 'resources' | 'prompts'): void => {
    surface.invalidate();
    for (const server of servers) void (list === 'resources' ? server.sendResourceListChanged() : server.sendPromptListChanged()).catch(() => undefined);
  };
  const notifyPluginsChanged = (): void => {
    notifyToolsChanged();
    notifySurfaceChanged('resources');
    notifySurfaceChanged('prompts');
  };

  return host.list().andThen((rows) => {
    const offered = new OfferedPlugins(host, activeFingerprint(rows), notifyPluginsChanged);
    const poll = setInterval(() => offered.check(), pollMs);
    poll.unref();
    const unsubscribers = [
      host.events.on('quarantine', () => offered.check()),
      host.events.on('catalog:changed', (change) => offered.check(change.upgraded.length > 0)),
      host.events.on('list_changed', (change) => (change.list === 'tools' ? notifyToolsChanged() : notifySurfaceChanged(change.list))),
      host.events.on('resource:updated', (update) => subscriptions.updated(update.plugin_id, update.uri)),
      host.events.on('resource:subscription_lost', (lost) => subscriptions.lost(lost.plugin_id, lost.uri)),
      host.events.on('log', (message) => {
        for (const server of servers) forwardLog(server, message);
      }),
    ];

    const stdio = options.stdio === true ? {} : options.stdio;
    const started: ResultAsync<HttpListener | undefined, HostError> =
      options.http === undefined ? okAsync(undefined) : listenHttp(options.http, defaultPolicy, connect);
    const stopWatching = (): void => {
      clearInterval(poll);
      for (const unsubscribe of unsubscribers) unsubscribe();
    };
    return started.mapErr((error) => (stopWatching(), error)).andThen((http) => {
      // The stdio transport only attaches listeners, so connecting it cannot fail for a reason of ours.
      const begin =
        stdio === undefined ? okAsync(undefined) : ResultAsync.fromSafePromise(connectStdio(open(defaultPolicy, GATEWAY_DEFAULTS.stdioClientName, 'stdio', new ClientAsks(maxPending)), stdio, STDIO_DEFAULT_MAX_BUFFER_SIZE));
      return begin.map(
        (): GatewayHandle => ({
          url: http?.url,
          token: http?.token,
          get sessions() {
            return http?.sessions ?? 0;
          },
          notifyToolsChanged,
          close: async () => {
            stopWatching();
            await http?.close();
            await Promise.all([...servers].map((s) => s.close()));
          },
        }),
      );
    });
  });
}
