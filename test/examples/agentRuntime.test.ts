import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { PluginHost } from '../../src/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/agent-runtime: an MCP gateway embedding PluginHost', () => {
  let profileDir = '';
  let pkg = '';
  beforeAll(async () => {
    profileDir = await mkdtemp(join(tmpdir(), 'gateway-'));
    pkg = await packageFixturePlugin(join(root, 'fixtures/plugins/hello'), { bundle: ['bin/hello-mcp.mjs'] });
    const host = (await PluginHost.open({ profileDir, profileKind: 'dev' }))._unsafeUnwrap();
    const installed = await host.install(pkg);
    expect(installed.isOk() ? 'installed' : installed.error.code).toBe('installed');
    await host.close();
  });
  afterAll(async () => {
    await rm(profileDir, { recursive: true, force: true });
    await rm(pkg, { recursive: true, force: true });
  });

  it('serves a sandboxed plugin tool and the inventory to an MCP client', async () => {
    const client = new Client({ name: 'agent', version: '0.0.0' }, { capabilities: {} });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', join(root, 'examples/agent-runtime/gateway.ts'), profileDir], cwd: root, stderr: 'pipe' }),
    );
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toEqual(['plug_hello_hello']);
      const ok = await client.callTool({ name: 'plug_hello_hello', arguments: { arguments: { name: 'agent' } } });
      expect(JSON.parse((ok.content as { text: string }[])[0]!.text)).toEqual({ success: true, data: { greeting: 'Hello, agent!' } });
      const bad = await client.callTool({ name: 'plug_hello_hello', arguments: { arguments: { name: '' } } });
      expect(bad.isError).toBe(true);
      expect(JSON.parse((bad.content as { text: string }[])[0]!.text).code).toBe('INVALID_ARGS');
      const inventory = await client.readResource({ uri: 'gateway://plugins' });
      expect(JSON.parse((inventory.contents[0] as { text: string }).text).plugins[0]).toMatchObject({ name: 'hello', status: 'active' });
    } finally {
      await client.close();
    }
  }, 60_000);
});
