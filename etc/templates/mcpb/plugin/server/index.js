#!/usr/bin/env node
// {{name}}: an MCP server over stdio with no dependencies, packed as an MCP
// Bundle (npx @anthropic-ai/mcpb pack plugin). One JSON-RPC message per line
// on stdin and stdout; logs go to stderr; EOF on stdin ends the process.
import { createInterface } from 'node:readline';

const VERSIONS = ['2025-06-18', '2025-03-26', '2024-11-05'];
const TOOLS = [
  { name: 'echo', description: 'Return the text it is given', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
];

const envelope = (body, isError) => ({ content: [{ type: 'text', text: JSON.stringify(body) }], isError });

function echo({ text } = {}) {
  if (typeof text !== 'string' || text === '') return envelope({ success: false, error_code: 'INVALID_INPUT', error: 'text must not be empty', retryable: false }, true);
  return envelope({ success: true, data: { text } }, false);
}

function answer(method, params = {}) {
  if (method === 'initialize') {
    const version = VERSIONS.includes(params.protocolVersion) ? params.protocolVersion : VERSIONS[0];
    return { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: '{{name}}', version: '0.1.0' } };
  }
  if (method === 'ping') return {};
  if (method === 'tools/list') return { tools: TOOLS };
  if (method === 'tools/call' && params.name === 'echo') return echo(params.arguments);
  return undefined;
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const message = JSON.parse(line);
  if (message.id === undefined || message.method === undefined) continue;
  const result = answer(message.method, message.params);
  const reply = result === undefined ? { error: { code: -32601, message: 'unknown method or tool' } } : { result };
  process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, ...reply })}\n`);
}
