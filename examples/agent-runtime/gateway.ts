/**
 * A minimal agent runtime that embeds PluginHost: an MCP server on stdio that
 * offers every active plugin operation as one of its own tools and the
 * inventory as resources. An agent (or any MCP client) connects to this one
 * server; each plugin still runs in its own verified, sandboxed process.
 *
 *   node --import tsx examples/agent-runtime/gateway.ts <profileDir>
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { PluginHost } from '../../src/index.js';

const profileDir = process.argv[2];
if (profileDir === undefined) {
  process.stderr.write('usage: gateway.ts <profileDir>\n');
  process.exit(2);
}

const opened = await PluginHost.open({ profileDir, appName: 'gateway' });
if (opened.isErr()) {
  process.stderr.write(`${opened.error.code}: ${opened.error.message}\nhint: ${opened.error.hint}\n`);
  process.exit(1);
}
const host = opened.value;
host.events.on('call:end', (e) => process.stderr.write(`${e.op_id} ${e.ok ? 'ok' : e.code} in ${e.duration_ms} ms\n`));

const server = new McpServer({ name: 'plugin-gateway', version: '0.1.0' });

for (const row of (await host.list()).unwrapOr([])) {
  if (row.status !== 'active') continue;
  const info = (await host.info(row.name))._unsafeUnwrap();
  for (const { op_id: opId } of info.operations) {
    server.registerTool(
      opId.replaceAll('.', '_'),
      { description: `${info.description ?? info.name}: ${opId}`, inputSchema: { arguments: z.record(z.string(), z.unknown()).optional() } },
      async ({ arguments: args }) => {
        const called = await host.call(opId, args ?? {});
        if (called.isOk()) return called.value.value as { content: { type: 'text'; text: string }[] };
        return { isError: true, content: [{ type: 'text', text: JSON.stringify(called.error.toJSON()) }] };
      },
    );
  }
}

server.registerResource('plugins', 'gateway://plugins', { mimeType: 'application/json' }, async (uri) => {
  const resource = (await host.resource('gateway://plugins'))._unsafeUnwrap();
  return { contents: [{ uri: uri.href, mimeType: resource.mimeType, text: resource.text }] };
});

const transport = new StdioServerTransport();
transport.onclose = () => void host.close();
process.stdin.on('end', () => void host.close().then(() => process.exit(0)));
await server.connect(transport);
