/**
 * The gateway's bounds on HTTP sessions, on real loopback HTTP with the
 * SDK's own Client: at most `maxSessions` open at once (one more initialize
 * is answered 503, a closed one frees its place), and a session idle past
 * `sessionIdleMs` is closed. And who called: the audit record of a call
 * through the gateway names the HTTP client and its MCP session.
 */
import { describe, expect, it } from 'vitest';
import type { AuditRecord, AuditSink } from '../../src/audit/auditRecord.js';
import { checkGatewayConfig, type GatewayHandle, type GatewayOptions } from '../../src/index.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools, type HttpClient } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const TOKEN = 'limits-token-0123456789abcdef';
const ALICE_TOKEN = 'alice-token-0123456789abcdef';
const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

const { pool, gateways } = gatewayTestPools();

function serve(host: PluginHost, http: NonNullable<GatewayOptions['http']>): Promise<GatewayHandle> {
  return gateways.serve(host, { http: { token: TOKEN, ...http, port: 0 } });
}

function connect(url: string, token = TOKEN): Promise<HttpClient> {
  return gateways.connectHttp(url, token, 'limits-test');
}

function rawInitialize(url: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(INITIALIZE),
  });
}

function rawPing(url: string, session: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
  });
}

describe('gateway session limits', () => {
  it(
    'answers one initialize past maxSessions with 503 and takes a new session once one is closed',
    async () => {
      const host = await pool.installed(await pool.profile(), ['probe']);
      const gateway = await serve(host, { maxSessions: 2 });
      const url = gateway.url ?? '';
      await connect(url);
      const second = await connect(url);

      const refused = await rawInitialize(url);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/at most 2 sessions/);

      await second.transport.terminateSession();
      await second.client.close();
      const third = await connect(url);
      expect((await third.client.listTools()).tools.map((t) => t.name)).toContain('plug.host-probe.echo');
    },
    TIMEOUT_MS,
  );

  it(
    'closes a session left idle past sessionIdleMs: its id is unknown afterwards',
    async () => {
      const host = await pool.installed(await pool.profile(), ['probe']);
      const gateway = await serve(host, { sessionIdleMs: 300 });
      const url = gateway.url ?? '';
      const opened = await rawInitialize(url);
      expect(opened.status).toBe(200);
      const session = opened.headers.get('mcp-session-id') ?? '';
      expect(session).not.toBe('');
      await opened.text();
      expect((await rawPing(url, session)).status).toBe(200);
      expect(gateway.sessions).toBe(1);
      // Watched from the handle: a request on the session would keep it alive.
      await waitUntil(() => gateway.sessions === 0, 20_000);
      expect((await rawPing(url, session)).status).toBe(404);
    },
    TIMEOUT_MS,
  );

  it(
    'keeps a share of the sessions for each client: one token opening sessions until refused does not lock another token out',
    async () => {
      const host = await pool.installed(await pool.profile(), ['probe']);
      const gateway = await serve(host, { maxSessions: 4, clients: [{ name: 'alice', token: ALICE_TOKEN, policy: {} }] });
      const url = gateway.url ?? '';
      // The default token's holder opens all it can (at most maxSessions + 1 tries).
      const statuses: number[] = [];
      for (let n = 0; n <= 4; n += 1) {
        const answer = await rawInitialize(url);
        statuses.push(answer.status);
        await answer.text();
        if (answer.status !== 200) break;
      }
      expect(statuses.at(-1)).toBe(503);
      const alice = await connect(url, ALICE_TOKEN);
      expect((await alice.client.listTools()).tools.map((t) => t.name)).toContain('plug.host-probe.echo');
    },
    TIMEOUT_MS,
  );

  it('has config keys for both bounds, checked by the shipped schema', () => {
    expect(checkGatewayConfig({ transport: 'http', http: { maxSessions: 8, sessionIdleMs: 60_000 } }).isOk()).toBe(true);
    const bad = checkGatewayConfig({ transport: 'http', http: { maxSessions: 0 } });
    expect(bad.isErr() && bad.error.message).toMatch(/maxSessions/);
  });
});

describe('gateway audit records', () => {
  it(
    'name the HTTP client (by its configured name, or default) and its MCP session as the caller',
    async () => {
      const records: AuditRecord[] = [];
      const sink: AuditSink = { write: (record) => void records.push(record) };
      const host = await pool.installed(await pool.profile(), ['probe'], { audit: { sink } });
      const gateway = await serve(host, { clients: [{ name: 'alice', token: ALICE_TOKEN, policy: {} }] });
      const url = gateway.url ?? '';
      const alice = await connect(url, ALICE_TOKEN);
      const other = await connect(url);

      await alice.client.callTool({ name: 'plug.host-probe.echo', arguments: { message: 'from alice' } });
      await other.client.callTool({ name: 'plug.host-probe.echo', arguments: { message: 'from default' } });

      expect(records).toHaveLength(2);
      expect(records[0]).toMatchObject({ kind: 'call', op_id: 'plug.host-probe.echo', outcome: 'ok', caller: { id: 'alice', transport: 'http', session: alice.transport.sessionId } });
      expect(records[1]).toMatchObject({ caller: { id: 'default', transport: 'http', session: other.transport.sessionId } });
      expect(alice.transport.sessionId).not.toBe(other.transport.sessionId);
    },
    TIMEOUT_MS,
  );
});
