/**
 * One `tools/call` of one gateway client, whichever way it arrived (the
 * SDK server's request handler, or the stdio and HTTP fast paths that
 * parse the frame themselves): the client's filter, `host.call` under its risk ceiling
 * with its confirmations, forwarded plugin requests, cancellation and
 * progress, inside the gateway's SERVER span.
 */
import { getEventListeners } from 'node:events';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, McpError, type CallToolResult, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { CallerIdentity } from '../audit/auditRecord.js';
import { hostError } from '../errors/HostError.js';
import { isJsonObject, isRequestId } from '../framing/jsonRpcValues.js';
import { pluginIdOf } from '../host/operations.js';
import type { HostCallOptions } from '../host/dispatch.js';
import type { PluginHost } from '../host/PluginHost.js';
import type { RiskClass } from '../manifest/model.js';
import type { HostTelemetry } from '../observability/telemetry.js';
import type { ClientAsks } from './clientAsks.js';
import { clientAnswers, type GatewayRequestExtra } from './clientForwarding.js';
import { offeredTo, type GatewayClientPolicy } from './clientPolicy.js';
import type { PluginRequestParties } from './requestParties.js';
import type { FastRequestRoute } from './stdioTransport.js';
import { SlotMap } from './slotMap.js';
import { errorResult, toolResult } from './toolResults.js';

/** Who a client server serves, as the audit records and spans name the caller: the HTTP client's name (`default` for the default token) or `stdio`. */
export interface ClientIdentity {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Everything fixed about one client's calls. */
export interface ToolCallClient {
  readonly host: PluginHost;
  readonly server: Server;
  readonly policy: GatewayClientPolicy;
  readonly maxRisk: RiskClass;
  /** Names the client to the host, so that its calls in flight at one plugin count as one party. */
  readonly caller: string;
  readonly identity: ClientIdentity;
  readonly telemetry: HostTelemetry;
  /** Where its calls are counted at their plugin while they are there, so that the plugin's log messages reach this client alone. */
  readonly parties: PluginRequestParties;
  /** The plugin requests waiting for this client's answer, bounded for the client as a whole (all its HTTP sessions). */
  readonly asks: ClientAsks;
}

/** What a `tools/call` asks, once its frame is checked. */
export interface ToolCallParams {
  readonly name: string;
  readonly arguments?: Record<string, unknown> | undefined;
  readonly progressToken?: string | number | undefined;
}

/** The caller the host is told of for `client`'s calls in HTTP session `sessionId` (none over stdio). */
export function callerOf(client: ToolCallClient, sessionId: string | undefined): CallerIdentity {
  const { name, transport } = client.identity;
  return sessionId === undefined ? { id: name, transport } : { id: name, transport, session: sessionId };
}

/**
 * Runs one `tools/call` of `client`; a failure is an `isError` result
 * carrying the host code, never a rejection. `caller` is what
 * {@link callerOf} gives for the call's session: a fast route makes it once
 * for all the calls of its connection.
 */
export async function callForClient(client: ToolCallClient, params: ToolCallParams, extra: GatewayRequestExtra, caller: CallerIdentity = callerOf(client, extra.sessionId)): Promise<CallToolResult> {
  const opId = params.name;
  if (!offeredTo(client.policy, opId)) {
    return errorResult(hostError('VARIANT_NOT_FOUND', `no operation ${JSON.stringify(opId)} is offered to this client`, { details: { op_id: opId } }));
  }
  const { identity } = client;
  const { progressToken } = params;
  const pluginId = pluginIdOf(opId);
  const { confirm, clientRequests } = clientAnswers(client.server, extra, client.caller, client.asks);
  // Built as one object, keys added in place: host.call checks each of them, and spreads would allocate one object per key group.
  const options: Mutable<HostCallOptions> = { maxRisk: client.maxRisk, confirm, clientRequests, signal: extra.signal, caller };
  if (pluginId !== undefined) options.presence = client.parties.presence(pluginId, client.server);
  if (progressToken !== undefined) {
    options.onProgress = (p) =>
      void extra
        .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: p.progress, ...(p.total === undefined ? {} : { total: p.total }), ...(p.message === undefined ? {} : { message: p.message }) } })
        .catch(() => undefined);
  }
  const args = params.arguments ?? {};
  const { telemetry } = client;
  // Without a tracer or meter the span's facts and the closure around the call would be garbage at once.
  const outcome = await (telemetry.observesNothing()
    ? client.host.call(opId, args, options)
    : telemetry.served({ opId, clientName: identity.name, transport: identity.transport, sessionId: extra.sessionId }, () => client.host.call(opId, args, options)));
  return toolResult(outcome);
}

const PLAIN_PARAM_KEYS: ReadonlySet<string> = new Set(['name', 'arguments', '_meta']);

/**
 * The params of a `tools/call` a fast path serves: a string `name`, object
 * `arguments` if any, and a `_meta` holding at most a `progressToken`.
 * Anything else (a task request, other `_meta` keys, a malformed frame) is
 * left to the SDK server, which answers it as before.
 */
export function plainToolCallParams(params: unknown): ToolCallParams | undefined {
  if (!isJsonObject(params) || typeof params.name !== 'string') return undefined;
  for (const key in params) if (!PLAIN_PARAM_KEYS.has(key)) return undefined;
  const args = params.arguments;
  if (args !== undefined && !isJsonObject(args)) return undefined;
  const meta = params._meta;
  if (meta === undefined) return { name: params.name, arguments: args };
  if (!isJsonObject(meta)) return undefined;
  for (const key in meta) if (key !== 'progressToken') return undefined;
  const token = meta.progressToken;
  if (token !== undefined && !isRequestId(token)) return undefined;
  return { name: params.name, arguments: args, progressToken: token };
}

/**
 * Answers one `tools/call` a fast path took, as the SDK server would: what
 * the call sends the client (progress, a confirmation elicitation, a
 * plugin's requests) goes out through the client's SDK server tied to
 * request `id`, and nothing more is sent once `signal` aborts. A rejection
 * becomes an Internal error answer, as the SDK server makes it.
 */
export async function answerToolCall(client: ToolCallClient, id: RequestId, params: ToolCallParams, signal: AbortSignal, caller: CallerIdentity, sessionId?: string): Promise<JSONRPCMessage> {
  const extra = new FastCallExtra(client.server, id, signal, sessionId);
  try {
    return { jsonrpc: '2.0', id, result: await callForClient(client, params, extra, caller) };
  } catch (error) {
    return { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: error instanceof Error ? error.message : 'Internal error' } };
  }
}

/**
 * The request extra of a fast-path call: what the SDK server gives its
 * handlers, as one object whose senders are methods, not two closures made
 * per call. Its users call them as methods (`extra.sendRequest(...)`).
 */
class FastCallExtra implements GatewayRequestExtra {
  readonly requestId: RequestId;
  readonly signal: AbortSignal;
  readonly sessionId?: string;
  readonly #server: Server;

  constructor(server: Server, id: RequestId, signal: AbortSignal, sessionId: string | undefined) {
    this.#server = server;
    this.requestId = id;
    this.signal = signal;
    if (sessionId !== undefined) this.sessionId = sessionId;
  }

  sendNotification(notification: Parameters<GatewayRequestExtra['sendNotification']>[0]): Promise<void> {
    return this.signal.aborted ? Promise.resolve() : this.#server.notification(notification, { relatedRequestId: this.requestId });
  }

  sendRequest<U extends Parameters<GatewayRequestExtra['sendRequest']>[1]>(
    request: Parameters<GatewayRequestExtra['sendRequest']>[0],
    resultSchema: U,
    options?: Parameters<GatewayRequestExtra['sendRequest']>[2],
  ): ReturnType<GatewayRequestExtra['sendRequest']> {
    return this.signal.aborted ? Promise.reject(new McpError(ErrorCode.ConnectionClosed, 'Request was cancelled')) : this.#server.request(request, resultSchema, { ...options, relatedRequestId: this.requestId });
  }
}

/**
 * One client connection's fast-path `tools/call` requests, served as they
 * arrive, each cancellable by its id; a transport only says how an answer
 * goes out ({@link deliver}).
 */
export abstract class ToolCallRoute implements FastRequestRoute {
  readonly #client: ToolCallClient;
  /** Who the host is told asks, the same for every call of the connection. */
  readonly #caller: CallerIdentity;
  /** One call at a time on nearly every connection: a Map here allocated a table per call (see SlotMap). */
  readonly #inFlight = new SlotMap<RequestId, AbortController>();
  /**
   * The controller of a call that ended unaborted with nothing left following
   * its signal, handed to the next call. Node builds each AbortController's
   * signal as an EventTarget with two Maps and a prototype change (about
   * 1.4 KB and a few µs a call on the warm path, most of it garbage); a
   * signal no one listens to and no one aborted is as good as a new one.
   */
  #spare: AbortController | undefined;

  /** Serves `client`'s calls; `sessionId` names the HTTP session the calls belong to, if any. */
  constructor(
    client: ToolCallClient,
    private readonly sessionId?: string,
  ) {
    this.#client = client;
    this.#caller = callerOf(client, sessionId);
  }

  /** Serves `request` when its id and params are plain (see {@link plainToolCallParams}); else the SDK server gets it. */
  take(request: Readonly<Record<string, unknown>>): boolean {
    const id = request.id;
    if (request.jsonrpc !== '2.0' || !isRequestId(id)) return false;
    const params = plainToolCallParams(request.params);
    if (params === undefined) return false;
    void this.#serve(id, params);
    return true;
  }

  /** Stops the call the client cancelled (or whose HTTP POST it closed); it then gets no answer, as with the SDK server. */
  cancel(requestId: unknown, reason: unknown): void {
    if (isRequestId(requestId)) this.#inFlight.get(requestId)?.abort(reason);
  }

  /** Stops every call in flight: the connection or session ended. */
  close(): void {
    for (const abort of this.#inFlight.values()) abort.abort();
    this.#inFlight.clear();
    this.#spare = undefined;
  }

  /** Sends one answer to the client; undefined when it was sent at once (nothing to wait for). */
  protected abstract deliver(answer: JSONRPCMessage): Promise<void> | undefined;

  async #serve(id: RequestId, params: ToolCallParams): Promise<void> {
    const abort = this.#spare ?? new AbortController();
    this.#spare = undefined;
    this.#inFlight.set(id, abort);
    let answer: JSONRPCMessage;
    try {
      answer = await answerToolCall(this.#client, id, params, abort.signal, this.#caller, this.sessionId);
    } finally {
      if (this.#inFlight.get(id) === abort) this.#inFlight.delete(id);
    }
    if (abort.signal.aborted) return;
    this.#reuse(abort);
    // Not awaited when sent at once: the await would make a promise and a turn more per call.
    const delivered = this.deliver(answer);
    if (delivered !== undefined) await delivered;
  }

  /**
   * Keeps the controller of a call that has ended for the next call, unless
   * something still follows its signal (the SDK's request for a confirmation
   * or a forwarded plugin request leaves its abort listener behind): a later
   * call's cancellation must reach nothing of this one. The call no longer
   * holds the controller (`#inFlight` lets go of it above, and `close` aborts
   * only what is there), so only the next call can abort it.
   */
  #reuse(abort: AbortController): void {
    if (this.#spare === undefined && getEventListeners(abort.signal, 'abort').length === 0) this.#spare = abort;
  }
}
