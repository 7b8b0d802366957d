/**
 * The stdio fast path for `tools/call`: the request frame, parsed once by
 * {@link GatewayStdioTransport}, goes to {@link callForClient} without the
 * SDK server's schemas (a message schema, the request schema twice, the
 * result schema), and the answer is written as one `JSON.stringify`. What
 * the call may need of the client (a confirmation elicitation, a plugin's
 * sampling, elicitation or roots request, progress) still goes out through
 * the client's SDK server, which reads the client's answers.
 */
import type { Readable, Writable } from 'node:stream';
import { ErrorCode, McpError, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isJsonObject, isRequestId } from '../framing/jsonRpcValues.js';
import type { GatewayRequestExtra } from './clientForwarding.js';
import { callForClient, type ToolCallClient, type ToolCallParams } from './clientToolCall.js';
import { GatewayStdioTransport, type FastRequestRoute } from './stdioTransport.js';

const PARAM_KEYS: ReadonlySet<string> = new Set(['name', 'arguments', '_meta']);


/**
 * The params of a `tools/call` the fast path serves: a string `name`,
 * object `arguments` if any, and a `_meta` holding at most a
 * `progressToken`. Anything else (a task request, other `_meta` keys, a
 * malformed frame) is left to the SDK server, which answers it as before.
 */
function plainParams(params: unknown): ToolCallParams | undefined {
  if (!isJsonObject(params) || typeof params.name !== 'string') return undefined;
  for (const key in params) if (!PARAM_KEYS.has(key)) return undefined;
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

/** The `tools/call` requests of the stdio client, served as they arrive; each can be cancelled by its id. */
class StdioToolCalls implements FastRequestRoute {
  readonly #client: ToolCallClient;
  readonly #transport: GatewayStdioTransport;
  readonly #inFlight = new Map<RequestId, AbortController>();

  constructor(client: ToolCallClient, transport: GatewayStdioTransport) {
    this.#client = client;
    this.#transport = transport;
  }

  /** Serves `request` when its id and params are plain; see {@link plainParams}. */
  take(request: Readonly<Record<string, unknown>>): boolean {
    const id = request.id;
    if (request.jsonrpc !== '2.0' || !isRequestId(id)) return false;
    const params = plainParams(request.params);
    if (params === undefined) return false;
    void this.#serve(id, params);
    return true;
  }

  /** Stops the call the client cancelled; it then gets no answer, as the SDK server does it. */
  cancel(requestId: unknown, reason: unknown): void {
    if (isRequestId(requestId)) this.#inFlight.get(requestId)?.abort(reason);
  }

  /** Stops every call in flight. */
  close(): void {
    for (const abort of this.#inFlight.values()) abort.abort();
    this.#inFlight.clear();
  }

  async #serve(id: RequestId, params: ToolCallParams): Promise<void> {
    const abort = new AbortController();
    this.#inFlight.set(id, abort);
    const server = this.#client.server;
    const extra: GatewayRequestExtra = {
      signal: abort.signal,
      requestId: id,
      sendNotification: (notification) => (abort.signal.aborted ? Promise.resolve() : server.notification(notification, { relatedRequestId: id })),
      sendRequest: (request, resultSchema, options) =>
        abort.signal.aborted ? Promise.reject(new McpError(ErrorCode.ConnectionClosed, 'Request was cancelled')) : server.request(request, resultSchema, { ...options, relatedRequestId: id }),
    };
    let answer: string;
    try {
      const result = await callForClient(this.#client, params, extra);
      answer = JSON.stringify({ jsonrpc: '2.0', id, result });
    } catch (error) {
      answer = JSON.stringify({ jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: error instanceof Error ? error.message : 'Internal error' } });
    } finally {
      if (this.#inFlight.get(id) === abort) this.#inFlight.delete(id);
    }
    if (!abort.signal.aborted) await this.#transport.write(answer);
  }
}

/** Connects the client's server to the stdio client through a {@link GatewayStdioTransport} whose `tools/call` requests take the fast path. */
export function connectStdio(client: ToolCallClient, streams: { readonly stdin?: Readable; readonly stdout?: Writable }, maxFrameBytes: number): Promise<void> {
  const transport = new GatewayStdioTransport(streams.stdin ?? process.stdin, streams.stdout ?? process.stdout, maxFrameBytes);
  transport.routeFirst(new StdioToolCalls(client, transport));
  return client.server.connect(transport);
}
