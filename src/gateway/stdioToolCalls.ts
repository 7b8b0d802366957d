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
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ToolCallRoute, type ToolCallClient } from './clientToolCall.js';
import { GatewayStdioTransport } from './stdioTransport.js';

/** The stdio client's fast-path calls: each answer is written as one `JSON.stringify`. */
class StdioToolCalls extends ToolCallRoute {
  constructor(
    client: ToolCallClient,
    private readonly transport: GatewayStdioTransport,
  ) {
    super(client);
  }

  protected deliver(answer: JSONRPCMessage): Promise<void> {
    return this.transport.write(JSON.stringify(answer));
  }
}

/** Connects the client's server to the stdio client through a {@link GatewayStdioTransport} whose `tools/call` requests take the fast path. */
export function connectStdio(client: ToolCallClient, streams: { readonly stdin?: Readable; readonly stdout?: Writable }, maxFrameBytes: number): Promise<void> {
  const transport = new GatewayStdioTransport(streams.stdin ?? process.stdin, streams.stdout ?? process.stdout, maxFrameBytes);
  transport.routeFirst(new StdioToolCalls(client, transport));
  return client.server.connect(transport);
}
