/**
 * The header a keep-alive connection was last accepted with is compared
 * with the one it presents now in constant time. A proxy may carry another
 * user's requests over the same connection, and `===` returns as soon as a
 * character differs, telling that user how much of the accepted header they
 * guessed. `timingSafeEqual` is watched (wrapped, still the real one) to see
 * which byte strings the listener compares; the gateway, its plugin host and
 * the socket are real.
 */
import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const comparisons = vi.hoisted(() => [] as { a: Buffer; b: Buffer }[]);
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return {
    ...crypto,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView): boolean => {
      comparisons.push({ a: Buffer.from(a.buffer, a.byteOffset, a.byteLength), b: Buffer.from(b.buffer, b.byteOffset, b.byteLength) });
      return crypto.timingSafeEqual(a, b);
    },
  };
});

const TIMEOUT_MS = 60_000;
const TOKEN = 'connection-compare-token-0123456789';
const VERSION = '2025-06-18';
const { pool, gateways } = gatewayTestPools();

/** Two POSTs on one socket, the second sent once the first was answered; the status lines of both. */
function twoPostsOnOneConnection(port: number, authorization: readonly [string, string]): Promise<number[]> {
  const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'compare', version: '1' } } });
  const request = (auth: string): string =>
    ['POST /mcp HTTP/1.1', 'host: 127.0.0.1', 'accept: application/json, text/event-stream', 'content-type: application/json', `authorization: ${auth}`, `content-length: ${Buffer.byteLength(initialize)}`, '', initialize].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.setEncoding('latin1');
    const statuses: number[] = [];
    let received = '';
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      received += chunk;
      const head = received.indexOf('\r\n\r\n');
      if (head < 0) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(received.slice(0, head))?.[1] ?? 0);
      if (received.length < head + 4 + length) return;
      statuses.push(Number(received.slice(9, 12)));
      received = received.slice(head + 4 + length);
      if (statuses.length === 1) socket.write(request(authorization[1]));
      else {
        socket.destroy();
        resolve(statuses);
      }
    });
    socket.write(request(authorization[0]));
  });
}

describe('the cached bearer header of a keep-alive connection', () => {
  it(
    'is compared with the presented header by timingSafeEqual, not ===',
    async () => {
      const host = await pool.open(await pool.profile());
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
      const header = `Bearer ${TOKEN}`;
      const guess = `Bearer ${TOKEN.slice(0, -1)}x`;
      comparisons.length = 0;
      expect(await twoPostsOnOneConnection(Number(new URL(served.url!).port), [header, header])).toEqual([200, 200]);
      const headerBytes = Buffer.from(header);
      expect(comparisons.some(({ a, b }) => a.equals(headerBytes) && b.equals(headerBytes))).toBe(true);

      comparisons.length = 0;
      expect(await twoPostsOnOneConnection(Number(new URL(served.url!).port), [header, guess])).toEqual([200, 401]);
      expect(comparisons.some(({ a, b }) => a.equals(headerBytes) && b.equals(Buffer.from(guess)))).toBe(true);
    },
    TIMEOUT_MS,
  );
});
