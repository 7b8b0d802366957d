/**
 * A Streamable HTTP client that cancels its request in flight (the SDK
 * Client's AbortSignal on callTool sends `notifications/cancelled` on a POST
 * of its own) gets no answer for it, as MCP has it, and the gateway holds
 * nothing for it any more: the POST that carried the request ends (its
 * response read to the end by the client), the plugin call is cancelled, and
 * the session, with no request open, expires when idle, while the client
 * still holds its transport. The old gateway kept that POST open until the
 * client closed its transport, so the session never went idle.
 *
 * A real gateway with the SDK Client over HTTP, the probe plugin (a call
 * answered with one JSON body) and the callbacks plugin (a call whose answer
 * became an SSE stream carrying the plugin's sampling request) in the
 * sandbox. The client opens no GET stream (its fetch answers a GET 405, as a
 * server without one would), so that only the POSTs can hold the session open.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CreateMessageRequestSchema, type CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import type { PluginHost } from '../../src/index.js';
import { callbackPackage, op, removeCallbackPackages } from '../callbacks/callbackPlugin.js';
import { gatewayTestPools, openRawHttpSession } from '../support/gatewayHarness.js';
import { nextEvent } from '../support/hostHarness.js';

const TOKEN = 'cancel-release-token-0123456789';
const TIMEOUT_MS = 120_000;
/** Far beyond the test's wait: only the cancellation ends the calls here. */
const NEVER_MS = 600_000;
/** Short, so that a session whose requests all ended expires while the test waits; one holding a POST open never does. */
const IDLE_MS = 500;

const { pool, gateways } = gatewayTestPools();
afterAll(() => removeCallbackPackages());

/** Reads a response body to its end. */
async function drain(body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader();
  while (!(await reader.read()).done);
}

/**
 * The SDK client's fetch: no GET stream, and each `tools/call` POST's
 * response watched until its last byte has been read.
 */
class WatchedFetch {
  /** One per `tools/call` POST, settled once its response has ended. */
  readonly toolCallsEnded: Promise<void>[] = [];

  readonly fetch: FetchLike = async (url, init) => {
    if ((init?.method ?? 'GET') === 'GET') return new Response(null, { status: 405 });
    const body = init?.body;
    if (typeof body !== 'string' || !body.includes('"tools/call"')) return fetch(url, init);
    let ended = (): void => undefined;
    this.toolCallsEnded.push(new Promise<void>((resolve) => (ended = resolve)));
    const response = await fetch(url, init);
    if (response.body === null) {
      ended();
      return response;
    }
    const [forClient, watched] = response.body.tee();
    void drain(watched).then(ended, ended);
    return new Response(forClient, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** An SDK Client on a gateway of `host` whose sessions expire after {@link IDLE_MS}; sampling requests it gets wait until cancelled. */
async function connect(host: PluginHost, watched: WatchedFetch, sampled: string[] = []): Promise<{ client: Client; sessions: () => number }> {
  const served = await gateways.serve(host, { http: { token: TOKEN, port: 0, sessionIdleMs: IDLE_MS } });
  const client = gateways.keep(new Client({ name: 'cancelling', version: '1.0.0' }, { capabilities: { sampling: {} } }));
  client.setRequestHandler(
    CreateMessageRequestSchema,
    (_request, extra) =>
      new Promise<CreateMessageResult>((_resolve, reject) => {
        sampled.push(`asked ${String(extra.requestId)}`);
        extra.signal.addEventListener('abort', () => (sampled.push(`cancelled ${String(extra.requestId)}`), reject(new Error('cancelled'))), { once: true });
      }),
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(served.url ?? ''), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } }, fetch: watched.fetch }),
  );
  return { client, sessions: () => served.sessions };
}

function callEnd(host: PluginHost, callId: number): Promise<HostEventMap['call:end']> {
  return new Promise((resolve) => {
    const off = host.events.on('call:end', (end) => {
      if (end.call_id !== callId) return;
      off();
      resolve(end);
    });
  });
}

describe('HTTP gateway: a cancelled request', () => {
  it(
    'ends its POST (a JSON answer not yet begun), cancels the plugin call and leaves the session idle',
    async () => {
      const host = await pool.installed(await pool.profile(), ['probe'], { callTimeoutMs: NEVER_MS });
      const watched = new WatchedFetch();
      const { client, sessions } = await connect(host, watched);

      const started = nextEvent(host, 'call:start');
      const abort = new AbortController();
      const call = client.callTool({ name: 'plug.host-probe.echo', arguments: { message: 'never', delayMs: NEVER_MS } }, undefined, { signal: abort.signal }).then(
        () => 'answered',
        () => 'rejected',
      );
      const { call_id: callId } = await started;
      const ended = callEnd(host, callId);
      abort.abort(new Error('the user stopped it'));

      expect(await call).toBe('rejected');
      const end = await ended;
      expect({ ok: end.ok, code: end.code }).toEqual({ ok: false, code: 'PLUGIN_CANCELLED' });
      // The POST's response ended, with the client's transport still open (the old gateway held it until then).
      await watched.toolCallsEnded[0];
      // Nothing of the session is open any more, so it expires as idle.
      await vi.waitFor(() => expect(sessions()).toBe(0), { timeout: 30_000, interval: 50 });
    },
    TIMEOUT_MS,
  );

  it(
    'ends its SSE stream once the plugin request forwarded on it is cancelled at the client too',
    async () => {
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      (await installer.install(await callbackPackage(), { canary: false }))._unsafeUnwrap();
      await installer.close();
      const host = await pool.open(dir, { callTimeoutMs: NEVER_MS, clientRequestTimeoutMs: NEVER_MS });
      const watched = new WatchedFetch();
      const sampled: string[] = [];
      const { client, sessions } = await connect(host, watched, sampled);

      const started = nextEvent(host, 'call:start');
      const abort = new AbortController();
      const call = client.callTool({ name: op('ask_model'), arguments: { question: 'held' } }, undefined, { signal: abort.signal }).then(
        () => 'answered',
        () => 'rejected',
      );
      const { call_id: callId } = await started;
      const ended = callEnd(host, callId);
      await vi.waitFor(() => expect(sampled).toEqual(['asked 1']), { timeout: 30_000, interval: 20 });
      abort.abort(new Error('the user stopped it'));

      expect(await call).toBe('rejected');
      expect((await ended).code).toBe('PLUGIN_CANCELLED');
      await watched.toolCallsEnded[0];
      // The gateway's cancellation of the sampling came on that stream before it ended (no GET stream is open).
      expect(sampled).toEqual(['asked 1', 'cancelled 1']);
      await vi.waitFor(() => expect(sessions()).toBe(0), { timeout: 30_000, interval: 50 });
    },
    TIMEOUT_MS,
  );

  it(
    "leaves a batch's cancelled request out of its answer, which comes once the others are answered",
    async () => {
      const host = await pool.installed(await pool.profile(), ['probe'], { callTimeoutMs: NEVER_MS });
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
      const { post } = await openRawHttpSession(served.url ?? '', TOKEN, '2025-06-18', 'batch-cancel');
      const call = (id: number, message: string, delayMs: number): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'plug.host-probe.echo', arguments: { message, delayMs } } });

      const started = new Promise<void>((resolve) => {
        const off = host.events.on('call:start', (start) => {
          if (start.op_id !== 'plug.host-probe.echo') return;
          off();
          resolve();
        });
      });
      const batch = post([call(7, 'slow', NEVER_MS), call(8, 'quick', 200)]);
      await started;
      const cancelled = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'not needed' } });
      expect(cancelled.status).toBe(202);

      const answer = await batch;
      expect(answer.headers.get('content-type')).toBe('application/json');
      const answers = (await answer.json()) as { id: number; result?: { content?: { text?: string }[] } }[];
      expect(answers.map((a) => a.id)).toEqual([8]);
      expect(answers[0]?.result?.content?.[0]?.text).toContain('quick');
    },
    TIMEOUT_MS,
  );
});
