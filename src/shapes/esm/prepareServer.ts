import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

const PLACEHOLDER = 'mcp-plugin-host-placeholder';

/**
 * McpServer installs its tools, resources and prompts handlers, and
 * announces those capabilities, on the first registration of each kind, and
 * refuses to do so once connected. Call this before `connect` on a server
 * that will load (or hot-reload) plugins after connecting: it registers and
 * removes one placeholder of each kind, leaving nothing listed.
 */
export function prepareServerForPlugins(server: McpServer): void {
  server.registerTool(PLACEHOLDER, { description: PLACEHOLDER }, () => ({ content: [] })).remove();
  server.registerResource(PLACEHOLDER, `urn:${PLACEHOLDER}`, {}, () => ({ contents: [] })).remove();
  server.registerPrompt(PLACEHOLDER, { description: PLACEHOLDER }, () => ({ messages: [] })).remove();
}
