/**
 * A gateway client that stops reading while a plugin floods notifications:
 * a real plugin (fixtures/plugins/host-surface, in the sandbox) sends tens of
 * megabytes of log messages through the gateway to a raw HTTP client whose
 * SSE stream is paused. What the gateway holds for that client stays within
 * its bound: once the client reads again it gets far less than was sent, then
 * a gap notice whose count makes up the difference exactly.
 */
import { request, type IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GATEWAY_DEFAULTS } from '../../src/gateway/gatewayDefaults.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 180_000;
const ID = 'host-surface';
const TOKEN = 'slow-client-test-token-0123456789';
// The host passes on a plugin's log messages within a budget per process (etc/plugin-line-events.json: 200 at once, then
// 20 a second): few but large messages still put tens of megabytes through the gateway, far past its bound.
const FLOOD = { count: 300, bytes: 200_000 };
const { pool, gateways } = gatewayTestPools();

interface Posted {
  readonly status: number;
  readonly sessionId: string | undefined;
  readonly body: string;
}

function post(url: string, body: unknown, sessionId?: string): Promise<Posted> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, sessionId: res.headers['mcp-session-id'] as string | undefined, body: text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The session's GET stream, paused from the start: the client reads nothing until it resumes it. */
function pausedStream(url: string, sessionId: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', agent: false, headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream', 'mcp-session-id': sessionId } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

async function installedHost(): Promise<PluginHost> {
  const dir = await pool.profile();
  await pool.install(dir, ['surface']);
  return pool.open(dir, { idleTimeoutMs: 0 });
}

interface Received {
  readonly method?: string;
  readonly params?: { readonly logger?: string; readonly data?: unknown };
}

/**
 * The host's `log` events the gateway was given: flood messages one by one (`forwarded`), and summaries of the
 * ones past the host's budget (`summaries`, short: a client that gets one does not count it as flood).
 */
function hostLogs(host: PluginHost): () => { forwarded: number; summaries: number } {
  let forwarded = 0;
  let summaries = 0;
  host.events.on('log', (e) => {
    if (e.suppressed !== undefined) summaries++;
    else if (String(e.data).length > FLOOD.bytes) forwarded++;
  });
  return () => ({ forwarded, summaries });
}

/** The flood's log messages among what a client received, and the gap notice's count (undefined before it came). */
function tally(messages: readonly Received[]): { floodLogs: number; dropped: number | undefined } {
  const notice = messages.find((m) => m.params?.logger === GATEWAY_DEFAULTS.serverName)?.params?.data as { dropped_notifications: number } | undefined;
  const floodLogs = messages.filter((m) => m.method === 'notifications/message' && m.params?.logger !== GATEWAY_DEFAULTS.serverName && String(m.params?.data).length > FLOOD.bytes);
  return { floodLogs: floodLogs.length, dropped: notice?.dropped_notifications };
}

describe('a gateway client that does not read', () => {
  it(
    'makes the gateway hold no more than its bound of notifications, then learns how many it missed',
    async () => {
      const host = await installedHost();
      const given = hostLogs(host);
      const url = (await gateways.serve(host, { http: { token: TOKEN, port: 0 } })).url!;

      const init = await post(url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'slow', version: '1.0.0' } } });
      expect(init.status).toBe(200);
      const session = init.sessionId!;
      expect((await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status).toBe(202);
      const stream = await pausedStream(url, session);

      // The flood runs to its end although the client reads none of it: the gateway neither stalls nor buffers it all.
      const flood = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: `plug.${ID}.flood`, arguments: FLOOD } }, session);
      expect(flood.status).toBe(200);
      expect(JSON.parse(flood.body)).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: JSON.stringify({ sent: FLOOD.count }) }] } });

      // The client reads again: everything the gateway held arrives, then (with the next notification) the gap notice.
      let received = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => (received += chunk));
      stream.resume();
      const messages = (): Received[] =>
        received
          .split('\n\n')
          .slice(0, -1)
          .filter((event) => event.includes('data: '))
          .map((event) => JSON.parse(event.slice(event.indexOf('data: ') + 6)) as Received);
      let followUps = 0;
      await waitUntil(async () => {
        if (tally(messages()).dropped !== undefined) return true;
        followUps++;
        await post(url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: `plug.${ID}.flood`, arguments: { count: 1, bytes: 1 } } }, session);
        return tally(messages()).dropped !== undefined;
      }, 60_000);

      const { floodLogs, dropped } = tally(messages());
      // What reached the client before the gap notice is what the gateway and the kernel's socket buffers held: a fraction of the flood.
      expect(floodLogs * FLOOD.bytes).toBeLessThan((FLOOD.count * FLOOD.bytes) / 4);
      // Nothing vanished unaccounted: the notice counts every flood message the host passed on that the client did not
      // get, plus the follow-up calls' one-byte messages and the host's summaries dropped while the stream was still full.
      const { forwarded, summaries } = given();
      expect(forwarded).toBeGreaterThan(0);
      expect(floodLogs + dropped!).toBeGreaterThanOrEqual(forwarded);
      expect(floodLogs + dropped!).toBeLessThanOrEqual(forwarded + followUps + summaries);
      stream.destroy();
    },
    TIMEOUT_MS,
  );

  it(
    'over stdio too: a client that leaves stdout unread gets a bounded part of the flood and the count of the rest',
    async () => {
      const host = await installedHost();
      const given = hostLogs(host);
      const stdin = new PassThrough();
      const stdout = new PassThrough();
      await gateways.serve(host, { stdio: { stdin, stdout } });
      const floodEnded = new Promise<void>((resolve) => host.events.on('call:end', (e) => e.op_id === `plug.${ID}.flood` && resolve()));
      const send = (message: unknown): boolean => stdin.write(`${JSON.stringify(message)}\n`);
      send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'slow', version: '1.0.0' } } });
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: `plug.${ID}.flood`, arguments: FLOOD } });
      // The client reads nothing until the plugin has sent the whole flood.
      await floodEnded;
      let received = '';
      stdout.setEncoding('utf8');
      stdout.on('data', (chunk: string) => (received += chunk));
      const messages = (): Received[] =>
        received
          .split('\n')
          .slice(0, -1)
          .map((line) => JSON.parse(line) as Received);
      await waitUntil(() => messages().some((m) => (m as { id?: number }).id === 2));
      let followUps = 0;
      await waitUntil(() => {
        if (tally(messages()).dropped !== undefined) return true;
        followUps++;
        send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: `plug.${ID}.flood`, arguments: { count: 1, bytes: 1 } } });
        return false;
      }, 60_000);
      const { floodLogs, dropped } = tally(messages());
      expect(floodLogs * FLOOD.bytes).toBeLessThan((FLOOD.count * FLOOD.bytes) / 4);
      const { forwarded, summaries } = given();
      expect(forwarded).toBeGreaterThan(0);
      expect(floodLogs + dropped!).toBeGreaterThanOrEqual(forwarded);
      expect(floodLogs + dropped!).toBeLessThanOrEqual(forwarded + followUps + summaries);
    },
    TIMEOUT_MS,
  );
});
