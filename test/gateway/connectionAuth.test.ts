/**
 * The bearer check on a keep-alive connection. The listener remembers the
 * Authorization header a connection was last accepted with, so that the
 * same header again is not hashed and compared anew; every request is still
 * checked: a connection accepted once that then presents another token, a
 * wrong one or none is treated by what it presents now. One real socket to
 * a real gateway carries every request here, in order.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 60_000;
const TOKEN = 'connection-auth-token-0123456789';
const OTHER_TOKEN = 'connection-auth-other-0123456789';
const VERSION = '2025-06-18';
const HEAD_END = '\r\n\r\n';
const { pool, gateways } = gatewayTestPools();

interface Answer {
  readonly status: number;
  readonly headers: string;
}

/** HTTP/1.1 requests one after another on one keep-alive connection, each answer read whole before the next request. */
class OneConnection {
  readonly #socket: Socket;
  #received = '';
  #waiting: ((answer: Answer) => void) | undefined;
  closed = false;

  constructor(port: number) {
    this.#socket = connect(port, '127.0.0.1');
    this.#socket.setEncoding('latin1');
    this.#socket.on('data', (chunk: string) => this.#read(chunk));
    this.#socket.on('error', () => undefined);
    this.#socket.on('close', () => (this.closed = true));
  }

  post(headers: Readonly<Record<string, string>>, message: unknown): Promise<Answer> {
    const body = JSON.stringify(message);
    const lines = ['POST /mcp HTTP/1.1', 'host: 127.0.0.1', 'accept: application/json, text/event-stream', 'content-type: application/json', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
    return new Promise((resolve) => {
      this.#waiting = resolve;
      this.#socket.write(`${lines.join('\r\n')}\r\ncontent-length: ${Buffer.byteLength(body)}${HEAD_END}${body}`);
    });
  }

  #read(chunk: string): void {
    this.#received += chunk;
    const headEnd = this.#received.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const headers = this.#received.slice(0, headEnd);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(headers)?.[1] ?? 0);
    if (this.#received.length < headEnd + HEAD_END.length + length) return;
    this.#received = this.#received.slice(headEnd + HEAD_END.length + length);
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ status: Number(headers.slice(9, 12)), headers });
  }

  close(): void {
    this.#socket.destroy();
  }
}

describe('the bearer token on a keep-alive connection', () => {
  it(
    'checks every request by the token it carries now, after the connection was accepted with another',
    async () => {
      const host = await pool.open(await pool.profile());
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0, clients: [{ name: 'other', token: OTHER_TOKEN, policy: {} }] } });
      const connection = new OneConnection(Number(new URL(served.url!).port));
      try {
        const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'one-connection', version: '1' } } };
        const opened = await connection.post({ authorization: `Bearer ${TOKEN}` }, initialize);
        expect(opened.status).toBe(200);
        const sessionId = /\r\nmcp-session-id: *(\S+)/i.exec(opened.headers)?.[1] ?? '';
        expect(sessionId).not.toBe('');
        const inSession = { 'mcp-session-id': sessionId, 'mcp-protocol-version': VERSION };
        const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };

        expect((await connection.post({ ...inSession, authorization: `Bearer ${TOKEN.slice(0, -1)}x` }, initialized)).status).toBe(401);
        expect((await connection.post(inSession, initialized)).status).toBe(401);
        expect((await connection.post({ ...inSession, authorization: TOKEN }, initialized)).status).toBe(401);
        // Another client's token on the same connection is that client, to whom the first client's session is unknown.
        expect((await connection.post({ ...inSession, authorization: `Bearer ${OTHER_TOKEN}` }, initialized)).status).toBe(404);
        expect((await connection.post({ ...inSession, authorization: `Bearer ${TOKEN}` }, initialized)).status).toBe(202);
        expect(connection.closed).toBe(false);
      } finally {
        connection.close();
      }
    },
    TIMEOUT_MS,
  );
});
