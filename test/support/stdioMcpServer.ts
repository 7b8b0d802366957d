/**
 * The source of a hand-written MCP server: newline-delimited JSON-RPC 2.0 on
 * stdio, an ESM script with no dependencies (`#!/usr/bin/env node`), for the
 * tests that put a server of their own in a package and start it for real
 * (through the CLI, an install's introspection, a sandbox). Each test says
 * only what its server does differently: what it does before it listens, its
 * tools, and how it answers a call.
 */

/** What {@link stdioMcpServerSource}'s server does. */
export interface StdioMcpServer {
  /** Its serverInfo.name. */
  readonly name: string;
  /** What tools/list answers: each tool as JSON (a test's constants are spelled into the source as their values). */
  readonly tools: readonly unknown[];
  /**
   * JavaScript run for each tools/call, with `id`, `params` (the request's)
   * and `send(message)` in scope; it answers with `send({ id, result })` or
   * `send({ id, error })`, now or later. Without it a call is answered, as any
   * other method, with JSON-RPC's method-not-found.
   */
  readonly call?: string;
  /**
   * JavaScript run at the top of the module before the server reads stdin
   * (ESM: it may `await`, and a request waits in the pipe meanwhile), with
   * `send` in scope; its imports go in {@link StdioMcpServer.imports}.
   */
  readonly prelude?: string;
  /** Import lines the prelude or the call need beside node:readline's createInterface. */
  readonly imports?: readonly string[];
}

/** The server's source, ready to write as an executable `.mjs` file. */
export function stdioMcpServerSource(server: StdioMcpServer): string {
  const call = server.call ?? "send({ id, error: { code: -32601, message: 'method tools/call not found' } });";
  return `#!/usr/bin/env node
${[...(server.imports ?? []), "import { createInterface } from 'node:readline';"].join('\n')}
const tools = ${JSON.stringify(server.tools)};
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
${server.prelude ?? ''}
const call = (id, params) => {
${call}
};
createInterface({ input: process.stdin }).on('line', (line) => {
  let message;
  try { message = JSON.parse(line); } catch { return; }
  if (message.id === undefined) return;
  const { id, method, params } = message;
  if (method === 'initialize') send({ id, result: { protocolVersion: params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: ${JSON.stringify(server.name)}, version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools } });
  else if (method === 'tools/call') call(id, params);
  else send({ id, error: { code: -32601, message: 'method ' + method + ' not found' } });
});
`;
}
