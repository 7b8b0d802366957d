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
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ToolCallRoute, type ToolCallClient } from './clientToolCall.js';
import type { HttpSessionTransport } from './streamableHttpTransport.js';

/** The `tools/call` requests of one HTTP session, answered through the session's transport. */
export class HttpToolCalls extends ToolCallRoute {
  /** Serves the fast-path calls of `client`'s session on `transport`. */
  constructor(
    client: ToolCallClient,
    private readonly transport: HttpSessionTransport,
  ) {
    super(client, transport.sessionId);
  }

  /** Synchronous, as the transport writes an answer at once: no promise to make and wait for per call. */
  protected deliver(answer: JSONRPCMessage): undefined {
    try {
      this.transport.sendAnswer(answer);
    } catch (error) {
      // As the SDK server does with an answer it cannot send: the session's error handler hears of it.
      this.transport.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
    return undefined;
  }
}
