/**
 * The gateway's own Streamable HTTP transport, rule by rule, on raw HTTP
 * requests to a real gateway (server-everything installed and run in the
 * sandbox): JSON answers, batches, 202 for notifications, SSE when progress
 * comes first, the GET stream, DELETE, and a 4xx JSON-RPC error for each kind
 * of bad input. Then the SDK's own client on the same transport.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_DEFAULTS } from '../../src/gateway/gatewayDefaults.js';
import { serveGateway, type GatewayHandle } from '../../src/index.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 60_000;
const TOKEN = 'transport-token-0123456789abcdef';
const VERSION = '2025-06-18';
const SUBSCRIBED = 'plug.host-everything:demo://resource/dynamic/text/1';
const BOTH = 'application/json, text/event-stream';

type Message = { jsonrpc: '2.0'; id?: number | string; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { code: number; message: string } };

const pool = new HostPool();
let gateway: GatewayHandle;
let url: string;
beforeAll(async () => {
  const host = await pool.installed(await pool.profile(), ['everything']);
  // server-everything's toggle-subscriber-updates is a write operation.
  gateway = (await serveGateway(host, { policy: { maxRisk: 'write' }, http: { token: TOKEN, port: 0 } }))._unsafeUnwrap();
  url = gateway.url ?? '';
}, TIMEOUT_MS);
afterAll(async () => {
  await gateway.close();
  await pool.cleanup();
  await removePackages();
});

function send(body: unknown, headers: Record<string, string> = {}, method = 'POST'): Promise<Response> {
  return fetch(url, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: BOTH, ...headers },
    ...(method === 'POST' ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
}

const initialize = (id: number | string = 1): Message => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

/** Opens a session as a client does (initialize, then initialized); its headers for the requests after. */
async function openSession(): Promise<Record<string, string>> {
  const opened = await send(initialize());
  expect(opened.status).toBe(200);
  const session = opened.headers.get('mcp-session-id') ?? '';
  expect(session).not.toBe('');
  await opened.body?.cancel();
  const headers = { 'mcp-session-id': session, 'mcp-protocol-version': VERSION };
  expect((await send({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status).toBe(202);
  return headers;
}

/** The JSON-RPC error of a refused request, with its status. */
async function refusal(res: Response): Promise<{ status: number; code: number | undefined }> {
  const body = (await res.json()) as Message;
  return { status: res.status, code: body.error?.code };
}

/** Reads SSE messages from `res` until `done` holds for what was read, or the stream ends. */
async function readEvents(res: Response, done: (messages: readonly Message[]) => boolean): Promise<{ messages: Message[]; ended: boolean }> {
  const reader = (res.body ?? new ReadableStream<Uint8Array>()).getReader();
  const decoder = new TextDecoder();
  const messages: Message[] = [];
  let buffered = '';
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) return { messages, ended: true };
    buffered += decoder.decode(chunk.value, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      for (const line of event.split('\n')) if (line.startsWith('data: ')) messages.push(JSON.parse(line.slice(6)) as Message);
    }
    if (done(messages)) {
      reader.releaseLock();
      return { messages, ended: false };
    }
  }
}

/** server-everything toggles its simulated resource updates (one plugin process serves every session): toggled again if that stopped them. */
async function updatesOn(toggle: () => Promise<string>): Promise<void> {
  if ((await toggle()).includes('Stopped')) expect(await toggle()).toContain('Started');
}

describe("the gateway's Streamable HTTP transport", () => {
  it(
    'answers requests as application/json with the session id, a batch as an array in request order, and a POST of notifications only with 202',
    async () => {
      const opened = await send(initialize());
      expect(opened.status).toBe(200);
      expect(opened.headers.get('content-type')).toBe('application/json');
      const session = opened.headers.get('mcp-session-id') ?? '';
      expect(((await opened.json()) as Message).result?.protocolVersion).toBe(VERSION);
      const headers = { 'mcp-session-id': session, 'mcp-protocol-version': VERSION };

      const initialized = await send({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
      expect(initialized.status).toBe(202);
      expect(await initialized.text()).toBe('');

      const call = await send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'plug.host-everything.echo', arguments: { message: 'json' } } }, headers);
      expect(call.headers.get('content-type')).toBe('application/json');
      expect(call.headers.get('mcp-session-id')).toBe(session);
      expect(await call.json()).toMatchObject({ id: 'call', result: { content: [{ type: 'text', text: 'Echo: json' }] } });

      const batch = await send(
        [
          { jsonrpc: '2.0', id: 7, method: 'tools/list' },
          { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
          { jsonrpc: '2.0', id: 8, method: 'ping' },
        ],
        headers,
      );
      expect(batch.status).toBe(200);
      const answers = (await batch.json()) as Message[];
      expect(answers.map((a) => a.id)).toEqual([7, 8]);
      expect(JSON.stringify(answers[0]?.result)).toContain('plug.host-everything.echo');
      expect(answers[1]).toEqual({ jsonrpc: '2.0', id: 8, result: {} });
    },
    TIMEOUT_MS,
  );

  it(
    "turns a POST's answer into an SSE stream when progress comes before the result",
    async () => {
      const headers = await openSession();
      const call = await send(
        { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'plug.host-everything.trigger-long-running-operation', arguments: { duration: 0.4, steps: 2 }, _meta: { progressToken: 'p' } } },
        headers,
      );
      expect(call.status).toBe(200);
      expect(call.headers.get('content-type')).toBe('text/event-stream');
      const { messages, ended } = await readEvents(call, () => false);
      expect(ended).toBe(true);
      expect(messages.map((m) => m.method ?? `answer ${String(m.id)}`)).toEqual(['notifications/progress', 'notifications/progress', 'answer 3']);
      expect(messages[0]?.params).toMatchObject({ progressToken: 'p', progress: 1 });
      expect(JSON.stringify(messages[2]?.result)).toContain('Long running operation completed');
    },
    TIMEOUT_MS,
  );

  it(
    'refuses bad input with a 4xx JSON-RPC error: Accept, media type, size, JSON, message shape, batch bounds, session and protocol version',
    async () => {
      const headers = await openSession();
      const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
      expect(await refusal(await send(ping, { ...headers, accept: '' }))).toEqual({ status: 406, code: -32000 });
      expect(await refusal(await send(ping, { ...headers, accept: 'application/json' }))).toEqual({ status: 406, code: -32000 });
      expect(await refusal(await send(ping, { ...headers, 'content-type': 'text/plain' }))).toEqual({ status: 415, code: -32000 });
      const oversize = JSON.stringify({ ...ping, params: { pad: 'x'.repeat(GATEWAY_DEFAULTS.maxRequestBytes) } });
      expect((await refusal(await send(oversize, headers))).status).toBe(413);
      expect(await refusal(await send('{"jsonrpc":', headers))).toEqual({ status: 400, code: -32700 });
      expect(await refusal(await send({ jsonrpc: '2.0', id: 1 }, headers))).toEqual({ status: 400, code: -32600 });
      expect(await refusal(await send({ jsonrpc: '1.0', id: 1, method: 'ping' }, headers))).toEqual({ status: 400, code: -32600 });
      expect(await refusal(await send([], headers))).toEqual({ status: 400, code: -32600 });
      expect(await refusal(await send(Array.from({ length: GATEWAY_DEFAULTS.maxBatchMessages + 1 }, (_, i) => ({ ...ping, id: i })), headers))).toEqual({ status: 400, code: -32600 });
      expect(await refusal(await send([ping, ping], headers))).toEqual({ status: 400, code: -32600 });
      expect(await refusal(await send(initialize(9), headers))).toEqual({ status: 400, code: -32600 });

      expect(await refusal(await send(ping, { ...headers, 'mcp-session-id': 'no-such-session' }))).toEqual({ status: 404, code: -32001 });
      expect((await refusal(await send(ping, {}))).status).toBe(400);
      expect((await refusal(await send(ping, { ...headers, 'mcp-protocol-version': '1999-01-01' }))).status).toBe(400);
      // A version the SDK knows but this session did not negotiate is as wrong as an unknown one.
      expect((await refusal(await send(ping, { ...headers, 'mcp-protocol-version': '2025-03-26' }))).status).toBe(400);
      const put = await send(ping, headers, 'PUT');
      expect(put.status).toBe(405);
      expect(put.headers.get('allow')).toBe('GET, POST, DELETE');

      // The session is unharmed by all of it.
      expect(await (await send(ping, headers)).json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    },
    TIMEOUT_MS,
  );

  it(
    'serves the standalone GET stream (a resource update arrives on it; a second one is 409), and DELETE ends the session and its stream',
    async () => {
      const headers = await openSession();
      expect((await refusal(await fetch(url, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'application/json', ...headers } }))).status).toBe(406);
      const stream = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream', ...headers } });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toBe('text/event-stream');
      expect((await refusal(await fetch(url, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream', ...headers } }))).status).toBe(409);

      expect(await (await send({ jsonrpc: '2.0', id: 2, method: 'resources/subscribe', params: { uri: SUBSCRIBED } }, headers)).json()).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
      let toggles = 0;
      await updatesOn(async () => {
        const toggled = await send({ jsonrpc: '2.0', id: `toggle-${++toggles}`, method: 'tools/call', params: { name: 'plug.host-everything.toggle-subscriber-updates', arguments: {} } }, headers);
        return JSON.stringify(await toggled.json());
      });
      const updates = await readEvents(stream, (messages) => messages.some((m) => m.method === 'notifications/resources/updated'));
      expect(updates.messages.find((m) => m.method === 'notifications/resources/updated')?.params).toEqual({ uri: SUBSCRIBED });

      const sessions = gateway.sessions;
      const ended = await send(undefined, headers, 'DELETE');
      expect(ended.status).toBe(200);
      expect(gateway.sessions).toBe(sessions - 1);
      expect((await readEvents(stream, () => false)).ended).toBe(true);
      expect(await refusal(await send({ jsonrpc: '2.0', id: 4, method: 'ping' }, headers))).toEqual({ status: 404, code: -32001 });
    },
    TIMEOUT_MS,
  );

  it(
    "carries the SDK client's session: a resource update over its GET stream, and terminateSession ends the session",
    async () => {
      const client = new Client({ name: 'transport-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
      await client.connect(transport);
      const updates: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
      await client.subscribeResource({ uri: SUBSCRIBED });
      await updatesOn(async () => JSON.stringify(await client.callTool({ name: 'plug.host-everything.toggle-subscriber-updates', arguments: {} })));
      await waitUntil(() => updates.length > 0, 30_000);
      expect(updates[0]).toBe(SUBSCRIBED);
      const sessions = gateway.sessions;
      await transport.terminateSession();
      expect(gateway.sessions).toBe(sessions - 1);
      await client.close();
    },
    TIMEOUT_MS,
  );
});
