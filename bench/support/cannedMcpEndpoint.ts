/**
 * The HTTP clients' own ceiling for the gateway throughput benchmark: a
 * Streamable HTTP endpoint that does nothing but answer, in a process of its
 * own. It answers initialize, 202s notifications and answers every
 * tools/call at once with what the hello plugin would (one JSON text block),
 * as application/json; GET is 405, as the protocol lets a server without a
 * standalone stream say. No policy, no plugin, no SDK server: the most any
 * server could do for the same clients. Prints `{"url":…}` on stdout and
 * serves until its stdin ends.
 *
 *   node --import tsx bench/support/cannedMcpEndpoint.ts
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const SESSION = 'canned-session';

function answer(res: ServerResponse, message: unknown): void {
  const body = JSON.stringify(message);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'mcp-session-id': SESSION }).end(body);
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(req.method === 'DELETE' ? 200 : 405, { allow: 'POST, DELETE' }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string; method: string; params?: { protocolVersion?: string; arguments?: { name?: unknown } } };
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    if (message.method === 'initialize') {
      answer(res, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'canned', version: '0.0.0' } } });
      return;
    }
    const greeting = { success: true, data: { greeting: `Hello, ${String(message.params?.arguments?.name)}!` } };
    answer(res, { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: JSON.stringify(greeting) }], isError: false } });
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` })}\n`);
});
process.stdin.on('end', () => {
  server.closeAllConnections();
  server.close();
});
process.stdin.resume();
