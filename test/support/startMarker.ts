/**
 * Whether a package's code ran: a loopback listener that counts the
 * connections made to it, and the source of an MCP server that connects to
 * it before it answers. A sandboxed start can write no file a test could
 * read, but a start with a network grant reaches the listener, so a count
 * that stays the same means the server never started.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';

/** A loopback listener counting the starts of {@link StartMarker.serverSource}'s servers. */
export class StartMarker {
  #starts = 0;
  readonly #server: Server = createServer((socket) => {
    this.#starts++;
    socket.end('marked_tool\n');
  });

  /** Listens on a free loopback port. */
  async listen(): Promise<this> {
    await new Promise<void>((listening) => this.#server.listen(0, '127.0.0.1', listening));
    return this;
  }

  /** How many servers connected so far. */
  get starts(): number {
    return this.#starts;
  }

  /** Stops listening. */
  close(): Promise<void> {
    return new Promise((closed) => this.#server.close(() => closed()));
  }

  /**
   * An MCP server (`#!/usr/bin/env node`, ESM) named `serverName` that, with
   * `marking`, first connects to this listener and lists the tool the
   * listener names (`marked_tool`), exiting 1 when it cannot connect (an
   * offline start); without, it lists `look` at once.
   */
  serverSource(serverName: string, marking = true): string {
    const { port } = this.#server.address() as AddressInfo;
    return `#!/usr/bin/env node
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
const serve = (tool) => {
  const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
  createInterface({ input: process.stdin }).on('line', (line) => {
    const { id, method, params } = JSON.parse(line);
    if (id === undefined) return;
    if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: ${JSON.stringify(serverName)}, version: '1.0.0' } } });
    else if (method === 'tools/list') send({ id, result: { tools: [{ name: tool, inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] } });
    else send({ id, error: { code: -32601, message: 'no ' + method } });
  });
};
if (${String(marking)}) {
  const service = connect(${port}, '127.0.0.1');
  service.on('error', (error) => { process.stderr.write('cannot reach the marker: ' + error.message + '\\n'); process.exit(1); });
  service.once('data', (chunk) => serve(String(chunk).trim()));
} else serve('look');
`;
  }
}
