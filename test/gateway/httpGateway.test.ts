/**
 * The gateway over Streamable HTTP, with the SDK's own Client: the reference
 * servers everything and memory, installed in a scratch profile and run in
 * the sandbox, served by `serveGateway`. Tokens, Origins, sessions and
 * per-client filters are checked on real HTTP requests to a loopback port.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { serveGateway, type GatewayHandle, type GatewayOptions } from '../../src/index.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools, resultErrorCode } from '../support/gatewayHarness.js';
import { packaged } from '../support/hostHarness.js';

const TIMEOUT_MS = 180_000;
const OWNER_TOKEN = 'owner-token-0123456789abcdef';
const MEMORY_TOKEN = 'memory-token-0123456789abcdef';

const { pool, gateways } = gatewayTestPools();

function serve(host: PluginHost, options: GatewayOptions = {}): Promise<GatewayHandle> {
  return gateways.serve(host, { ...options, http: { token: OWNER_TOKEN, ...options.http, port: 0 } });
}

async function connect(url: string, token: string): Promise<Client> {
  return (await gateways.connectHttp(url, token, 'gateway-test')).client;
}

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

function post(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(INITIALIZE) });
}

/** The status of an initialize whose Host header names another machine, as a DNS-rebound page would send it (fetch cannot set Host). */
function statusWithHost(url: string, hostHeader: string, token: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { host: hostHeader, authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', reject);
    req.end(JSON.stringify(INITIALIZE));
  });
}

describe('serveGateway over Streamable HTTP', () => {
  it(
    'lists and calls the tools of two published servers, with their schemas, and returns failures as results carrying the host code',
    async () => {
      const host = await pool.installed(await pool.profile(), ['everything', 'memory']);
      const gateway = await serve(host);
      expect(gateway.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const client = await connect(gateway.url ?? '', OWNER_TOKEN);

      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['plug.host-everything.echo', 'plug.host-everything.get-structured-content', 'plug.host-memory.read_graph']));
      const structured = tools.find((t) => t.name === 'plug.host-everything.get-structured-content');
      expect(structured).toMatchObject({
        title: 'Get Structured Content Tool',
        annotations: { readOnlyHint: true },
        outputSchema: { type: 'object', properties: { temperature: { type: 'number' } } },
      });

      const echo = (await client.callTool({ name: 'plug.host-everything.echo', arguments: { message: 'through the gateway' } })) as CallToolResult;
      expect(echo.content[0]).toEqual({ type: 'text', text: 'Echo: through the gateway' });
      const weather = (await client.callTool({ name: 'plug.host-everything.get-structured-content', arguments: { location: 'Chicago' } })) as CallToolResult;
      expect(weather.structuredContent).toMatchObject({ temperature: expect.any(Number) });
      const graph = (await client.callTool({ name: 'plug.host-memory.read_graph', arguments: {} })) as CallToolResult;
      expect(graph.isError).not.toBe(true);

      // The plugin's progress reaches the gateway's client under the client's own progress token.
      const progress: number[] = [];
      const long = (await client.callTool({ name: 'plug.host-everything.trigger-long-running-operation', arguments: { duration: 0.8, steps: 4 } }, undefined, {
        onprogress: (p) => progress.push(p.progress),
      })) as CallToolResult;
      expect(JSON.stringify(long.content)).toContain('Long running operation completed');
      expect(progress.slice(0, 2)).toEqual([1, 2]);

      // A write tool under the default read ceiling: refused by the host, reported as a result.
      const refused = (await client.callTool({ name: 'plug.host-memory.create_entities', arguments: { entities: [] } })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(resultErrorCode(refused)).toBe('PLUGIN_RISK_NOT_ALLOWED');
      expect(refused.structuredContent).toBeUndefined();
      expect(JSON.stringify(refused.content)).toContain('PLUGIN_RISK_NOT_ALLOWED');
      const unknown = (await client.callTool({ name: 'plug.host-everything.no-such-tool', arguments: {} })) as CallToolResult;
      expect(resultErrorCode(unknown)).toBe('VARIANT_NOT_FOUND');
    },
    TIMEOUT_MS,
  );

  it(
    'refuses requests without a valid token (401), from a foreign Origin or Host (403), and keeps each session to the token that opened it',
    async () => {
      const host = await pool.installed(await pool.profile(), ['memory']);
      const gateway = await serve(host, { http: { clients: [{ name: 'other', token: MEMORY_TOKEN, policy: {} }] } });
      const url = gateway.url ?? '';

      const anonymous = await post(url, {});
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await post(url, { authorization: 'Bearer not-the-token-0123456789' })).status).toBe(401);
      expect((await post(url, { authorization: `Bearer ${OWNER_TOKEN}`, origin: 'https://evil.example' })).status).toBe(403);
      expect(await statusWithHost(url, 'rebound.example:8765', OWNER_TOKEN)).toBe(403);
      const loopbackPage = await post(url, { authorization: `Bearer ${OWNER_TOKEN}`, origin: 'http://localhost:3000' });
      expect(loopbackPage.status).toBe(200);
      const session = loopbackPage.headers.get('mcp-session-id') ?? '';
      expect(session).not.toBe('');

      // The other token cannot use the owner's session.
      const hijack = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${MEMORY_TOKEN}`, 'mcp-session-id': session },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      expect(hijack.status).toBe(404);
    },
    TIMEOUT_MS,
  );

  it(
    'gives two concurrent clients with different filters and ceilings different tools, and refuses a filtered tool to the client it is hidden from',
    async () => {
      const host = await pool.installed(await pool.profile(), ['everything', 'memory']);
      const gateway = await serve(host, {
        policy: { deny: ['host-memory'] },
        http: { clients: [{ name: 'memory-reader', token: MEMORY_TOKEN, policy: { allow: ['host-memory', 'plug.host-everything.echo'], deny: ['plug.host-memory.search_nodes'], maxRisk: 'write' } }] },
      });
      const [owner, reader] = await Promise.all([connect(gateway.url ?? '', OWNER_TOKEN), connect(gateway.url ?? '', MEMORY_TOKEN)]);
      const [ownerTools, readerTools] = await Promise.all([owner.listTools(), reader.listTools()]);
      const ownerNames = ownerTools.tools.map((t) => t.name);
      const readerNames = readerTools.tools.map((t) => t.name).sort();

      expect(ownerNames).toContain('plug.host-everything.echo');
      expect(ownerNames.some((n) => n.startsWith('plug.host-memory.'))).toBe(false);
      expect(readerNames).toContain('plug.host-everything.echo');
      expect(readerNames).toContain('plug.host-memory.read_graph');
      expect(readerNames).not.toContain('plug.host-memory.search_nodes');
      expect(readerNames.filter((n) => n.startsWith('plug.host-everything.'))).toEqual(['plug.host-everything.echo']);

      const hidden = (await owner.callTool({ name: 'plug.host-memory.read_graph', arguments: {} })) as CallToolResult;
      expect(hidden.isError).toBe(true);
      expect(resultErrorCode(hidden)).toBe('VARIANT_NOT_FOUND');
      const allowed = (await reader.callTool({ name: 'plug.host-memory.read_graph', arguments: {} })) as CallToolResult;
      expect(allowed.isError).not.toBe(true);
      // The reader's own ceiling is write: a write tool runs for it.
      const written = (await reader.callTool({ name: 'plug.host-memory.create_entities', arguments: { entities: [{ name: 'gateway', entityType: 'test', observations: ['written through the gateway'] }] } })) as CallToolResult;
      expect(written.isError, JSON.stringify(written)).not.toBe(true);
    },
    TIMEOUT_MS,
  );

  it(
    'drops the tools of a plugin that is quarantined while clients are connected, and says so with list_changed',
    async () => {
      const dir = await pool.profile();
      const host = await pool.installed(dir, ['probe', 'memory']);
      // The probe exits at start when its data dir says so (its pinned executable is untouched).
      await mkdir(join(dir, 'data', 'host-probe'), { recursive: true });
      await writeFile(join(dir, 'data', 'host-probe', 'mode'), 'exit-on-start');
      // No catalog poll during the test: the host's quarantine event alone must reach the client.
      const gateway = await serve(host, { catalogPollMs: 3_600_000 });
      const client = await connect(gateway.url ?? '', OWNER_TOKEN);
      let changes = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changes += 1;
      });

      // Listing starts the probe, which fails: its tools are still in that answer, from the catalog. The failed start
      // counts as a crash (as a call's does): the probe enters quarantine, and the client hears of it.
      const first = (await client.listTools()).tools.map((t) => t.name);
      expect(first).toContain('plug.host-probe.echo');
      await waitUntil(() => changes >= 1, 30_000);
      const after = (await client.listTools()).tools.map((t) => t.name);
      expect(after).not.toContain('plug.host-probe.echo');
      expect(after).toContain('plug.host-memory.read_graph');
      const refused = (await client.callTool({ name: 'plug.host-probe.echo', arguments: {} })) as CallToolResult;
      expect(resultErrorCode(refused)).toBe('VARIANT_QUARANTINED');
    },
    TIMEOUT_MS,
  );

  it('refuses options it cannot serve safely, and a port that is taken', async () => {
    const host = await pool.open(await pool.profile());
    const codeOf = async (options: GatewayOptions): Promise<string | undefined> => {
      const served = await serveGateway(host, options);
      if (served.isOk()) gateways.keepGateway(served.value);
      return served.isErr() ? served.error.code : undefined;
    };
    expect(await codeOf({})).toBe('HOST_INVALID_OPTIONS');
    expect(await codeOf({ http: { port: 0, token: 'short' } })).toBe('HOST_INVALID_OPTIONS');
    expect(await codeOf({ http: { port: 0, token: OWNER_TOKEN, clients: [{ name: 'twin', token: OWNER_TOKEN, policy: {} }] } })).toBe('HOST_INVALID_OPTIONS');
    const first = await serve(host);
    const port = Number(new URL(first.url ?? '').port);
    expect(await codeOf({ http: { port, token: OWNER_TOKEN } })).toBe('GATEWAY_LISTEN_FAILED');
  });

  it(
    'tells connected clients that the tool list changed when a plugin is installed and when it is removed',
    async () => {
      const dir = await pool.profile();
      const host = await pool.installed(dir, ['memory'], { activation: 'immediate' });
      const gateway = await serve(host, { catalogPollMs: 100 });
      const client = await connect(gateway.url ?? '', OWNER_TOKEN);
      let changes = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changes += 1;
      });
      expect((await client.listTools()).tools.some((t) => t.name.startsWith('plug.host-everything.'))).toBe(false);

      const installed = await host.install(await packaged('everything'), { canary: false });
      expect(installed.isOk()).toBe(true);
      await waitUntil(() => changes >= 1, 30_000);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('plug.host-everything.echo');

      expect((await host.remove('host-everything')).isOk()).toBe(true);
      await waitUntil(() => changes >= 2, 30_000);
      expect((await client.listTools()).tools.some((t) => t.name.startsWith('plug.host-everything.'))).toBe(false);
    },
    TIMEOUT_MS,
  );
});
