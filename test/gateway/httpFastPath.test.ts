/**
 * The HTTP side's fast path for `tools/call` (src/gateway/httpToolCalls.ts),
 * on raw HTTP requests to a real gateway (server-everything installed and
 * run in the sandbox): a lone `tools/call` on an initialized session is
 * answered as the SDK server answers the same call, which still serves it
 * inside a batch; and every refusal the transport makes before a call is
 * served still comes first (token, Origin, session and whose it is, body
 * size, protocol version, Accept, a session that ended).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_DEFAULTS } from '../../src/gateway/gatewayDefaults.js';
import { serveGateway, type GatewayHandle } from '../../src/index.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 60_000;
const TOKEN = 'fast-path-token-0123456789abcdef';
const OTHER_TOKEN = 'fast-path-other-0123456789abcdef';
const VERSION = '2025-06-18';
const BOTH = 'application/json, text/event-stream';

type Message = { jsonrpc: '2.0'; id?: number | string; result?: Record<string, unknown>; error?: { code: number; message: string } };

const pool = new HostPool();
let gateway: GatewayHandle;
let url: string;
beforeAll(async () => {
  const host = await pool.installed(await pool.profile(), ['everything']);
  gateway = (await serveGateway(host, { http: { token: TOKEN, port: 0, clients: [{ name: 'other', token: OTHER_TOKEN, policy: {} }] } }))._unsafeUnwrap();
  url = gateway.url ?? '';
}, TIMEOUT_MS);
afterAll(async () => {
  await gateway.close();
  await pool.cleanup();
  await removePackages();
});

function post(body: unknown, headers: Record<string, string | undefined> = {}): Promise<Response> {
  const all: Record<string, string> = {};
  for (const [name, value] of Object.entries({ authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: BOTH, ...headers })) if (value !== undefined) all[name] = value;
  return fetch(url, { method: 'POST', headers: all, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** Opens a session with `token` (initialize, then initialized); its headers for the requests after. */
async function openSession(token = TOKEN): Promise<Record<string, string>> {
  const auth = { authorization: `Bearer ${token}` };
  const opened = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, auth);
  expect(opened.status).toBe(200);
  await opened.body?.cancel();
  const headers = { ...auth, 'mcp-session-id': opened.headers.get('mcp-session-id') ?? '', 'mcp-protocol-version': VERSION };
  expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status).toBe(202);
  return headers;
}

const call = (id: number | string, name: string, args: Record<string, unknown>): Message & { method: string; params: unknown } => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** The status and JSON-RPC error code of a refused request. */
async function refusal(res: Response): Promise<{ status: number; code: number | undefined }> {
  const body = (await res.json()) as Message;
  return { status: res.status, code: body.error?.code };
}

describe('the HTTP fast path for tools/call', () => {
  it(
    'answers a lone tools/call as the SDK server answers the same call in a batch: a result, a tool error, a host refusal',
    async () => {
      const headers = await openSession();
      const cases: readonly [string, Record<string, unknown>][] = [
        ['plug.host-everything.echo', { message: 'fast' }],
        ['plug.host-everything.echo', { message: 5 }],
        ['plug.host-everything.no-such-tool', {}],
      ];
      let id = 10;
      for (const [name, args] of cases) {
        const lone = await post(call(++id, name, args), headers);
        expect(lone.status).toBe(200);
        expect(lone.headers.get('content-type')).toBe('application/json');
        const fast = (await lone.json()) as Message;
        const batched = await post([call(++id, name, args)], headers);
        const [viaSdk] = (await batched.json()) as Message[];
        expect(fast.id).toBe(id - 1);
        expect({ ...fast, id: 0 }).toEqual({ ...viaSdk, id: 0 });
      }
    },
    TIMEOUT_MS,
  );

  it(
    'refuses a lone tools/call without a valid token, from a foreign Origin, to an unknown or another client’s session, over the body cap, with another protocol version or Accept, and after the session ended',
    async () => {
      const headers = await openSession();
      const others = await openSession(OTHER_TOKEN);
      const echo = call(1, 'plug.host-everything.echo', { message: 'refused' });
      const cases: readonly [string, Promise<Response>, number, number][] = [
        ['no token', post(echo, { ...headers, authorization: undefined }), 401, -32000],
        ['wrong token', post(echo, { ...headers, authorization: `Bearer ${TOKEN}x` }), 401, -32000],
        ['foreign Origin', post(echo, { ...headers, origin: 'https://evil.example' }), 403, -32000],
        ['unknown session', post(echo, { ...headers, 'mcp-session-id': 'no-such-session' }), 404, -32001],
        ["another client's session", post(echo, { ...headers, 'mcp-session-id': others['mcp-session-id'] }), 404, -32001],
        ['another protocol version', post(echo, { ...headers, 'mcp-protocol-version': '2024-11-05' }), 400, -32000],
        ['no SSE in Accept', post(echo, { ...headers, accept: 'application/json' }), 406, -32000],
      ];
      for (const [what, res, status, code] of cases) expect({ what, ...(await refusal(await res)) }).toEqual({ what, status, code });

      const oversized = await post(call(2, 'plug.host-everything.echo', { message: 'x'.repeat(GATEWAY_DEFAULTS.maxRequestBytes) }), headers);
      expect(oversized.status).toBe(413);

      const ended = await fetch(url, { method: 'DELETE', headers });
      expect(ended.status).toBe(200);
      expect(await refusal(await post(echo, headers))).toEqual({ status: 404, code: -32001 });
    },
    TIMEOUT_MS,
  );
});
