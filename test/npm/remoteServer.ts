/**
 * A remote MCP server for the tests of servers that connect at start: the
 * MCP SDK's Streamable HTTP server transport on a loopback port, stateless
 * (a server and a transport per request, as the SDK's stateless example
 * runs), with two tools. Every `tools/call` it answers is recorded, so a test
 * can tell that a call made through the host reached it.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/** The tools the remote server lists. */
export const REMOTE_TOOLS = [
  { name: 'remote_echo', description: 'Echoes its text from the remote server', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, annotations: { readOnlyHint: true } },
  { name: 'remote_wipe', description: 'Wipes the remote store', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } },
] as const;

/** A running remote server. */
export interface RemoteServer {
  /** Its MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  /** The arguments of every `tools/call` it answered, in order. */
  readonly calls: { readonly name: string; readonly arguments: unknown }[];
  /** Requests that reached the endpoint (any method). */
  readonly requests: () => number;
  /** Stops it. */
  readonly close: () => Promise<void>;
}

function mcpServer(calls: RemoteServer['calls']): Server {
  const server = new Server({ name: 'loopback-remote', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: REMOTE_TOOLS.map((tool) => ({ ...tool })) }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    calls.push({ name: request.params.name, arguments: request.params.arguments });
    const text = (request.params.arguments as { text?: unknown } | undefined)?.text;
    return { content: [{ type: 'text', text: `remote says ${String(text)}` }] };
  });
  return server;
}

/** Starts the server on 127.0.0.1, on a port the kernel picks. */
export async function startRemoteServer(): Promise<RemoteServer> {
  const calls: { name: string; arguments: unknown }[] = [];
  let requests = 0;
  const http: HttpServer = createServer((req, res) => {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    requests++;
    const server = mcpServer(calls);
    // No session id generator: stateless, as the SDK's stateless example runs.
    const transport = new StreamableHTTPServerTransport({});
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
