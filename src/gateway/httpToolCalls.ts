/**
 * The HTTP fast path for `tools/call`: a POST carrying one `tools/call` on
 * an initialized session, after every check the listener and
 * {@link HttpSessionTransport.handlePost} make (bearer token, Origin, Host,
 * the session and whose it is, Accept, Content-Type, body size, JSON-RPC
 * shape, protocol version, request id reuse), goes to
 * {@link callForClient} without the SDK server's schemas (the request
 * schema twice, the result schema) and its request bookkeeping. The answer
 * goes back through the session's transport as the SDK server's would: one
 * `application/json` body, or the end of an SSE stream when the call sent
 * the client something first (progress, a confirmation elicitation, a
 * plugin's request), which still goes out through the client's SDK server.
 */
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isRequestId } from '../framing/jsonRpcValues.js';
import { answerToolCall, plainToolCallParams, type ToolCallClient, type ToolCallParams } from './clientToolCall.js';
import type { FastRequestRoute } from './stdioTransport.js';
import type { HttpSessionTransport } from './streamableHttpTransport.js';

/** The `tools/call` requests of one HTTP session, served as they arrive; each can be cancelled by its id. */
export class HttpToolCalls implements FastRequestRoute {
  readonly #client: ToolCallClient;
  readonly #transport: HttpSessionTransport;
  readonly #inFlight = new Map<RequestId, AbortController>();

  /** Serves the fast-path calls of `client`'s session on `transport`. */
  constructor(client: ToolCallClient, transport: HttpSessionTransport) {
    this.#client = client;
    this.#transport = transport;
  }

  /** Serves `request` when its id and params are plain (see {@link plainToolCallParams}); else the SDK server gets it. */
  take(request: Readonly<Record<string, unknown>>): boolean {
    const id = request.id;
    if (!isRequestId(id)) return false;
    const params = plainToolCallParams(request.params);
    if (params === undefined) return false;
    void this.#serve(id, params);
    return true;
  }

  /** Stops the call the client cancelled (or whose POST it closed); it then gets no answer, as with the SDK server. */
  cancel(requestId: unknown, reason: unknown): void {
    if (isRequestId(requestId)) this.#inFlight.get(requestId)?.abort(reason);
  }

  /** Stops every call in flight: the session ended. */
  close(): void {
    for (const abort of this.#inFlight.values()) abort.abort();
    this.#inFlight.clear();
  }

  async #serve(id: RequestId, params: ToolCallParams): Promise<void> {
    const abort = new AbortController();
    this.#inFlight.set(id, abort);
    const answer = await answerToolCall(this.#client, id, params, abort.signal, this.#transport.sessionId);
    if (this.#inFlight.get(id) === abort) this.#inFlight.delete(id);
    if (abort.signal.aborted) return;
    try {
      await this.#transport.send(answer);
    } catch (error) {
      // As the SDK server does with an answer it cannot send: the session's error handler hears of it.
      this.#transport.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
