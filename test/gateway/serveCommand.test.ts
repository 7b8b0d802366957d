/**
 * `mcp-plugin-host serve` as a real subprocess (the CLI from source through
 * tsx), with the SDK's own Client: over stdio, and over Streamable HTTP with
 * a generated token and a configuration file naming a second client.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CLI_SOURCE, REPO } from '../cli/cliHarness.js';
import { GatewayPool, resultErrorCode } from '../support/gatewayHarness.js';
import { HostPool, removePackages } from '../support/hostHarness.js';
import { ServeProcesses } from '../support/serveProcess.js';

const TIMEOUT_MS = 180_000;
const READER_TOKEN = 'reader-token-0123456789abcdef';

const pool = new HostPool();
const clients = new GatewayPool();
const serves = new ServeProcesses();
afterEach(async () => {
  await clients.cleanup();
  await serves.cleanup();
  await pool.cleanup();
});
afterAll(() => removePackages());

/** A scratch dev profile with the everything and memory reference servers installed (the installing host is closed). */
async function profileWithServers(): Promise<string> {
  const dir = await pool.profile();
  const host = await pool.installed(dir, ['everything', 'memory']);
  await host.close();
  return dir;
}

function cliEnv(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

async function httpClient(url: string, token: string): Promise<Client> {
  return (await clients.connectHttp(url, token, 'serve-test')).client;
}

describe('mcp-plugin-host serve', () => {
  it(
    'serves two published servers over stdio: lists their tools, calls them in the sandbox, reports a refused call as an error result',
    async () => {
      const dir = await profileWithServers();
      const client = new Client({ name: 'serve-test', version: '1.0.0' });
      await client.connect(
        new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', CLI_SOURCE, 'serve', '--profile-dir', dir, '--dev'], cwd: REPO, env: cliEnv(), stderr: 'pipe' }),
      );
      clients.keep(client);

      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['plug.host-everything.echo', 'plug.host-everything.get-sum', 'plug.host-memory.read_graph', 'plug.host-memory.create_entities']));
      const echo = (await client.callTool({ name: 'plug.host-everything.echo', arguments: { message: 'over stdio' } })) as CallToolResult;
      expect(echo.content[0]).toEqual({ type: 'text', text: 'Echo: over stdio' });
      const graph = (await client.callTool({ name: 'plug.host-memory.read_graph', arguments: {} })) as CallToolResult;
      expect(graph.isError).not.toBe(true);
      const refused = (await client.callTool({ name: 'plug.host-memory.create_entities', arguments: { entities: [] } })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(resultErrorCode(refused)).toBe('PLUGIN_RISK_NOT_ALLOWED');
    },
    TIMEOUT_MS,
  );

  it(
    'serves HTTP with a generated token printed once on stderr, refuses requests without it, and gives a configured client its own filter',
    async () => {
      const dir = await profileWithServers();
      const config = join(dir, 'gateway.json');
      await writeFile(
        config,
        JSON.stringify({
          profileDir: dir,
          dev: true,
          transport: 'http',
          deny: ['host-memory'],
          http: { port: 0, clients: [{ name: 'reader', token: { env: 'READER_TOKEN' }, allow: ['host-memory'] }] },
        }),
      );
      const served = await serves.start(['--config', config], { env: { READER_TOKEN }, ready: /bearer token \(shown once\): \S+\n/ });
      const { url } = served;
      const token = /bearer token \(shown once\): (\S+)/.exec(served.stderr())?.[1] ?? '';
      expect(url, served.stderr()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(served.stdout()).not.toContain(token);

      const anonymous = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
      expect(anonymous.status).toBe(401);

      const [owner, reader] = await Promise.all([httpClient(url, token), httpClient(url, READER_TOKEN)]);
      const ownerNames = (await owner.listTools()).tools.map((t) => t.name);
      const readerNames = (await reader.listTools()).tools.map((t) => t.name);
      expect(ownerNames).toContain('plug.host-everything.echo');
      expect(ownerNames.some((n) => n.startsWith('plug.host-memory.'))).toBe(false);
      expect(readerNames).toContain('plug.host-memory.read_graph');
      expect(readerNames.some((n) => n.startsWith('plug.host-everything.'))).toBe(false);
      const sum = (await owner.callTool({ name: 'plug.host-everything.get-sum', arguments: { a: 2, b: 40 } })) as CallToolResult;
      expect(JSON.stringify(sum.content)).toContain('42');
    },
    TIMEOUT_MS,
  );
});
