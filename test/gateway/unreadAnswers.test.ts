/**
 * The HTTP gateway's bound on answers a client makes it hold (review R7 N3).
 * The body budget bounded request bodies only: a client posting batches of
 * calls to a tool with a large result, on connections it does not read,
 * made the host hold every answer (1.5 GiB of RSS from 20 connections).
 * An exchange's answers, collected and queued, count against the client's
 * share of http.maxBodyBytesInFlight until its response closes; past it the
 * exchange's connection is destroyed and its calls still running are
 * cancelled. Real gateway, the mcp-faulty plugin in the sandbox, raw sockets.
 */
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools, openRawHttpSession } from '../support/gatewayHarness.js';

const TOKEN = 'unread-answers-token-0123456789';
const VERSION = '2025-06-18';
const MiB = 1024 * 1024;
/** One client: its share is the whole 4 MiB (the least a share is, one request body). */
const BUDGET = 4 * MiB;
/** Six answers of 500 000 bytes: about 3 MB, within the share once, not twice. */
const BIG_BYTES = 500_000;
const BIGS = 6;
const CONNECTIONS = 6;
const { pool, gateways } = gatewayTestPools();

const big = (id: number): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'plug.mcp-faulty.big', arguments: { bytes: BIG_BYTES } } });
const hang = (id: number): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'plug.mcp-faulty.hang', arguments: {} } });

/** A raw connection that POSTs `body` on the session and keeps only whether the connection closed. */
function rawPost(url: string, session: Readonly<Record<string, string>>, body: string): { readonly sock: Socket; closed: boolean } {
  const { port } = new URL(url);
  const sock = connect(Number(port), '127.0.0.1');
  const posted = { sock, closed: false };
  const headers = Object.entries(session).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  sock.write(
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // Flowing, so that a connection the gateway ends is seen to close; nothing of an answer comes before that.
  sock.resume();
  sock.on('error', () => undefined);
  sock.on('close', () => (posted.closed = true));
  return posted;
}

describe('gateway answers a client does not read', () => {
  it('ends exchanges whose answers pass the client share of maxBodyBytesInFlight and cancels their calls, while a client reading gets a large batch whole', async () => {
    const profile = await pool.profile();
    const setup = await pool.open(profile);
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'mcp-faulty'), { bundle: ['bin/mcp-faulty.mjs'] });
    (await setup.install(pkg, { canary: false }))._unsafeUnwrap();
    const host = await pool.open(profile);
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0, maxBodyBytesInFlight: BUDGET } });
    const url = served.url ?? '';
    const { session, post } = await openRawHttpSession(url, TOKEN, VERSION, 'unread-answers');

    // A client that reads gets a batch of large answers whole.
    const read = (await (await post(Array.from({ length: BIGS }, (_, i) => big(10 + i)))).json()) as { id: number; result?: { content?: { text?: string }[] } }[];
    expect(read.map((a) => [a.id, a.result?.content?.[0]?.text?.length])).toEqual(Array.from({ length: BIGS }, (_, i) => [10 + i, BIG_BYTES]));

    // Connections that never get their answers: each batch waits on a call that hangs, so its large answers are held.
    const cancelled: HostEventMap['call:end'][] = [];
    host.events.on('call:end', (end) => {
      if (end.code === 'PLUGIN_CANCELLED' && end.op_id.endsWith('hang')) cancelled.push(end);
    });
    const held = Array.from({ length: CONNECTIONS }, (_, c) => rawPost(url, session, JSON.stringify([hang(100 * c + 99), ...Array.from({ length: BIGS }, (_, i) => big(100 * c + i))])));
    try {
      // The share holds one batch's answers: every other exchange is ended and its hanging call cancelled.
      await waitUntil(() => held.filter((h) => h.closed).length >= CONNECTIONS - 1 && cancelled.length >= CONNECTIONS - 1, 60_000);
      expect(held.filter((h) => h.closed)).toHaveLength(CONNECTIONS - 1);
      expect(cancelled).toHaveLength(CONNECTIONS - 1);
    } finally {
      for (const h of held) h.sock.destroy();
    }
    // All given back once the last connection went: a batch as large is answered whole again.
    await waitUntil(async () => {
      const again = (await post(Array.from({ length: BIGS }, (_, i) => big(1000 + i)))
        .then((res) => res.json())
        .catch(() => [])) as unknown[];
      return again.length === BIGS;
    }, 60_000);
  }, 180_000);
});
