#!/usr/bin/env node
// Word Tools: an MCP stdio server with no dependencies, so the package runs
// from wherever the host installs it. One JSON-RPC message per line on stdin
// and stdout; logs go to stderr; EOF on stdin ends the process.
import { createInterface } from 'node:readline';

const SUPPORTED = ['2025-06-18', '2025-03-26', '2024-11-05'];
const TOOLS = [
  {
    name: 'count_words',
    description: 'Count the words in a text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'shout',
    description: 'Upper-case a text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
];

const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
// Results and plugin-local failures both travel as one JSON text block; the host maps error_code.
const envelope = (body, isError) => ({ content: [{ type: 'text', text: JSON.stringify(body) }], isError });
const invalid = (message) => envelope({ success: false, error_code: 'INVALID_INPUT', error: message, retryable: false }, true);

function callTool({ name, arguments: args = {} }) {
  if (typeof args.text !== 'string') return invalid('text must be a string');
  if (name === 'count_words') return envelope({ success: true, data: { words: args.text.split(/\s+/).filter(Boolean).length } }, false);
  if (name === 'shout') return envelope({ success: true, data: { text: args.text.toUpperCase() } }, false);
  return invalid(`no tool named ${name}`);
}

function handle(message) {
  if (message.id === undefined) return; // notifications need no answer
  switch (message.method) {
    case 'initialize': {
      const asked = message.params?.protocolVersion;
      return send({
        id: message.id,
        result: {
          protocolVersion: SUPPORTED.includes(asked) ? asked : SUPPORTED[0],
          capabilities: { tools: {} },
          serverInfo: { name: 'word-tools', version: '0.1.0' },
        },
      });
    }
    case 'ping':
      return send({ id: message.id, result: {} });
    case 'tools/list':
      return send({ id: message.id, result: { tools: TOOLS } });
    case 'tools/call':
      return send({ id: message.id, result: callTool(message.params ?? {}) });
    default:
      return send({ id: message.id, error: { code: -32601, message: `method not found: ${message.method}` } });
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  try {
    handle(JSON.parse(line));
  } catch (error) {
    process.stderr.write(`word-tools: ignoring a bad line: ${error}\n`);
  }
});
lines.on('close', () => process.exit(0));
