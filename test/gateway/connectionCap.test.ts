/**
 * The HTTP gateway's bound on open connections (attack review S): without a
 * token, anyone who can reach the port could open connections until the
 * host's process ran out of file descriptors, and then no plugin could be
 * started nor file opened, for any client. Connections past the bound are
 * closed as they arrive; the sockets here are real, on loopback.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const TOKEN = 'connection-cap-token-0123456789';
const MAX_CONNECTIONS = 16;
const EXTRA = 20;
const { pool, gateways } = gatewayTestPools();

describe('gateway connections', () => {
  it(
    'closes connections past http.maxConnections at once, and serves clients again once the holder lets go',
    async () => {
      const host = await pool.open(await pool.profile());
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0, maxConnections: MAX_CONNECTIONS } });
      const { port } = new URL(served.url!);
      const sockets: Socket[] = [];
      let closed = 0;
      try {
        for (let i = 0; i < MAX_CONNECTIONS + EXTRA; i++) {
          const socket = connect(Number(port), '127.0.0.1');
          socket.on('error', () => undefined);
          socket.on('close', () => void (closed += 1));
          sockets.push(socket);
        }
        // Not one byte is sent: each would wait for its headers until Node's headersTimeout (60 s) without the bound.
        await waitUntil(() => closed >= EXTRA);
        expect(closed).toBeLessThanOrEqual(EXTRA);
      } finally {
        for (const socket of sockets) socket.destroy();
      }
      // The gateway sees the sockets go shortly after; until then a new connection may still be one too many (and a
      // request on a connection the gateway dropped can go unanswered, hence each try's own time limit).
      const answered = async (): Promise<boolean> =>
        (await fetch(served.url!, { method: 'POST', signal: AbortSignal.timeout(1000) }).then(
          (r) => r.status,
          () => 0,
        )) === 401;
      await waitUntil(answered);
      const { client } = await gateways.connectHttp(served.url!, TOKEN, 'after');
      expect((await client.listTools()).tools).toEqual([]);
    },
    TIMEOUT_MS,
  );
});
