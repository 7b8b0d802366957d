/**
 * The least an HTTP gateway can do per call, for the gateway throughput
 * benchmark: a node:http server in a process of its own, in front of one
 * plugin it starts unsandboxed, that relays each `tools/call` POST to the
 * plugin's stdin and answers with the plugin's answer. Per call it parses
 * the request body, puts its own id and the tool's name in, writes the line
 * (the lines of one turn of the event loop in one write, as the host's
 * LineChannel does), parses the plugin's answer line, puts the client's id
 * back and writes the HTTP answer. No token, Origin, session or policy
 * check, no host: what is left is the HTTP hop and the pipe hop, so its row
 * is the ceiling of any gateway on the same machine. It answers initialize
 * itself and 202s notifications. Prints `{"url":…}` on stdout once the
 * plugin is initialized and serves until its stdin ends.
 *
 *   node --import tsx bench/support/httpPipeRelay.ts <plugin entry> <tool name>
 */
import { spawn } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const [entry, toolName] = process.argv.slice(2);
if (entry === undefined || toolName === undefined) throw new Error('usage: httpPipeRelay.ts <plugin entry> <tool name>');
const SESSION = 'relay-session';
const PROTOCOL_VERSION = '2025-06-18';

interface PluginAnswer {
  readonly id: number;
  readonly result?: unknown;
  readonly error?: unknown;
}

const plugin = spawn(process.execPath, [entry], { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map<number, { readonly res: ServerResponse; readonly clientId: unknown }>();
let nextId = 1;
let corked = false;
let onInitialized: (() => void) | undefined;

/** Writes one line to the plugin; the lines of one turn go in one write. */
function toPlugin(message: unknown): void {
  if (!corked) {
    corked = true;
    plugin.stdin.cork();
    setImmediate(() => {
      corked = false;
      plugin.stdin.uncork();
    });
  }
  plugin.stdin.write(`${JSON.stringify(message)}\n`);
}

function answer(res: ServerResponse, message: unknown): void {
  const body = JSON.stringify(message);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'mcp-session-id': SESSION }).end(body);
}

let partial = '';
plugin.stdout.setEncoding('utf8');
plugin.stdout.on('data', (chunk: string) => {
  const lines = (partial + chunk).split('\n');
  partial = lines.pop() ?? '';
  for (const line of lines) {
    if (line === '') continue;
    const message = JSON.parse(line) as PluginAnswer;
    if (message.id === 0) {
      onInitialized?.();
      continue;
    }
    const call = waiting.get(message.id);
    if (call === undefined) continue;
    waiting.delete(message.id);
    answer(call.res, { jsonrpc: '2.0', id: call.clientId, ...(message.error === undefined ? { result: message.result } : { error: message.error }) });
  }
});

await new Promise<void>((resolve) => {
  onInitialized = resolve;
  toPlugin({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'http-pipe-relay', version: '0.0.0' } } });
});
toPlugin({ jsonrpc: '2.0', method: 'notifications/initialized' });

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(req.method === 'DELETE' ? 200 : 405, { allow: 'POST, DELETE' }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown; method: string; params?: { name?: string; protocolVersion?: string } };
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    if (message.method === 'initialize') {
      answer(res, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'relay', version: '0.0.0' } } });
      return;
    }
    const id = nextId++;
    waiting.set(id, { res, clientId: message.id });
    toPlugin({ ...message, id, params: { ...message.params, name: toolName } });
  });
});
// The raw clients keep their one connection idle while the other rows run: no keep-alive timeout closes it.
server.keepAliveTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` })}\n`);
});
process.stdin.on('end', () => {
  server.closeAllConnections();
  server.close();
  plugin.stdin.end();
});
process.stdin.resume();
