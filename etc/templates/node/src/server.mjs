#!/usr/bin/env node
// {{name}}: an MCP server over stdio on the official SDK. Results and
// plugin-local failures both travel as one JSON text block; the host maps
// error_code (INVALID_INPUT becomes INVALID_ARGS for the caller).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const envelope = (body, isError) => ({ content: [{ type: 'text', text: JSON.stringify(body) }], isError });

const server = new McpServer({ name: '{{name}}', version: '0.1.0' });

server.registerTool(
  'echo',
  { description: 'Return the text it is given', inputSchema: { text: z.string().describe('What to echo') } },
  ({ text }) => {
    if (text.length === 0) return envelope({ success: false, error_code: 'INVALID_INPUT', error: 'text must not be empty', retryable: false }, true);
    return envelope({ success: true, data: { text } }, false);
  },
);

await server.connect(new StdioServerTransport());
