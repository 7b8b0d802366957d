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
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isRequestId } from '../framing/jsonRpcValues.js';
import { answerToolCall, plainToolCallParams, type ToolCallClient, type ToolCallParams } from './clientToolCall.js';
import { GatewayStdioTransport, type FastRequestRoute } from './stdioTransport.js';

/** The `tools/call` requests of the stdio client, served as they arrive; each can be cancelled by its id. */
class StdioToolCalls implements FastRequestRoute {
  readonly #client: ToolCallClient;
  readonly #transport: GatewayStdioTransport;
  readonly #inFlight = new Map<RequestId, AbortController>();

  constructor(client: ToolCallClient, transport: GatewayStdioTransport) {
    this.#client = client;
    this.#transport = transport;
  }

  /** Serves `request` when its id and params are plain; see {@link plainToolCallParams}. */
  take(request: Readonly<Record<string, unknown>>): boolean {
    const id = request.id;
    if (request.jsonrpc !== '2.0' || !isRequestId(id)) return false;
    const params = plainToolCallParams(request.params);
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
    let answer: string;
    try {
      answer = JSON.stringify(await answerToolCall(this.#client, id, params, abort.signal));
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
