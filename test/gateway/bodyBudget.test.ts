/**
 * The HTTP gateway's bound on request bodies held at once (attack review
 * R5 F1). One body is at most 4 MiB, but nothing bounded how many were read
 * at the same time: one client holding a token, whatever its policy, could
 * post on a connection after another, each body all but its last byte, and
 * the host's process buffered every one (1.2 GiB from 300 connections, 8 GiB
 * at the default connection bound), with every plugin it runs. Real gateway,
 * real sockets on loopback.
 */
import { request, type ClientRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { checkGatewayConfig, resolveGatewayConfig } from '../../src/gateway/gatewayConfig.js';
import { serveGateway } from '../../src/index.js';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const TOKEN_A = 'body-budget-token-a-0123456789';
const TOKEN_B = 'body-budget-token-b-0123456789';
const MiB = 1024 * 1024;
/** Two clients: each holds at most 8 MiB of bodies. */
const BUDGET = 16 * MiB;
const BODY = 3 * MiB;
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
const { pool, gateways } = gatewayTestPools();

interface Post {
  readonly req: ClientRequest;
  /** The answer's status, once one came. */
  status: number | undefined;
}

/** A POST of `length` bytes whose first `sent` bytes are written: spaces, then (when all is sent) `tail`. */
function post(url: string, token: string, length: number, sent: number, tail = ''): Post {
  const posted: Post = { req: request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': length } }), status: undefined };
  posted.req.on('response', (res) => {
    posted.status = res.statusCode;
    res.resume();
  });
  posted.req.on('error', () => undefined);
  const padding = Buffer.alloc(Math.min(sent, length - tail.length), 0x20);
  if (sent < length) posted.req.write(padding);
  else posted.req.end(Buffer.concat([padding, Buffer.from(tail)]));
  return posted;
}

/** The status `posted` is answered with. */
async function answered(posted: Post): Promise<number | undefined> {
  await waitUntil(() => posted.status !== undefined, 30_000);
  return posted.status;
}

describe('gateway request bodies', () => {
  it(
    "answers 503 to a client's body past its share of maxBodyBytesInFlight, serves other clients meanwhile, and takes bodies again once given back",
    async () => {
      const host = await pool.open(await pool.profile());
      const served = await gateways.serve(host, { http: { token: TOKEN_A, port: 0, maxBodyBytesInFlight: BUDGET, clients: [{ name: 'b', token: TOKEN_B, policy: {} }] } });
      const url = served.url!;
      // Four bodies of 3 MiB, each held one byte short: two fit in the client's 8 MiB, the others cannot.
      const held = Array.from({ length: 4 }, () => post(url, TOKEN_A, BODY, BODY - 1));
      try {
        await waitUntil(() => held.filter((p) => p.status === 503).length >= 2, 30_000);
        expect(held.filter((p) => p.status !== undefined).map((p) => p.status)).toEqual([503, 503]);
        // The other client's share is its own: its initialize, as large, is read and answered.
        expect(await answered(post(url, TOKEN_B, BODY, BODY, INITIALIZE))).toBe(200);
      } finally {
        for (const p of held) p.req.destroy();
      }
      // Bodies given back, whether dropped by their client or read and answered. The gateway sees the dropped ones go
      // shortly after; then A's share takes whole bodies again, one after another, more than it holds at once (each
      // answered 400: a request that is not initialize needs a session).
      const ping = (): Promise<number | undefined> => answered(post(url, TOKEN_A, BODY, BODY, '{"jsonrpc":"2.0","id":1,"method":"ping"}'));
      await waitUntil(async () => (await ping()) === 400, 30_000);
      for (let i = 0; i < 4; i++) expect(await ping(), `post ${i}`).toBe(400);
    },
    TIMEOUT_MS,
  );

  it('refuses a maxBodyBytesInFlight that is not a positive whole number', async () => {
    const host = await pool.open(await pool.profile());
    for (const bound of [0, 1.5, -1]) {
      const refused = await serveGateway(host, { http: { token: TOKEN_A, port: 0, maxBodyBytesInFlight: bound } });
      if (refused.isOk()) gateways.keepGateway(refused.value);
      expect(refused.isErr() && refused.error.code, String(bound)).toBe('HOST_INVALID_OPTIONS');
    }
  });

  it('is read from the configuration file (http.maxBodyBytesInFlight), which refuses a bound below 1', async () => {
    const resolved = await resolveGatewayConfig(checkGatewayConfig({ transport: 'http', http: { maxBodyBytesInFlight: BUDGET } })._unsafeUnwrap(), {});
    expect(resolved._unsafeUnwrap().gateway.http?.maxBodyBytesInFlight).toBe(BUDGET);
    const refused = checkGatewayConfig({ http: { maxBodyBytesInFlight: 0 } }, 'serve.json');
    expect(refused.isErr() && refused.error.message).toContain('/http/maxBodyBytesInFlight');
  });
});
