/**
 * Rotating the gateway's bearer token by rewriting its token file, with no
 * restart: a real `mcp-plugin-host serve` process (the CLI from source
 * through tsx), real HTTP on one keep-alive connection, a real file
 * replaced by rename and rewritten in place. The old token is refused on
 * the connection it was accepted on, the new one is accepted in the same
 * session, and the old token's open GET stream is ended.
 */
import { chmod, rename, writeFile } from 'node:fs/promises';
import { Agent, request, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';
import { ServeProcesses } from '../support/serveProcess.js';
import { tokenFileGateway } from './tokenFileGateway.js';

const TIMEOUT_MS = 120_000;
const VERSION = '2025-06-18';
const TOKEN_A = 'rotation-token-a-0123456789abcdef';
const TOKEN_B = 'rotation-token-b-0123456789abcdef';
const TOKEN_C = 'rotation-token-c-0123456789abcdef';
const TOKEN_D = 'rotation-token-d-0123456789abcdef';
// Several times etc/gateway-defaults.json's tokenFileCheckMs (1 s), for a loaded machine: a bound on waiting, not a measurement.
const NOTICED_WITHIN_MS = 20_000;

const pool = new HostPool();
const serves = new ServeProcesses();
afterEach(async () => {
  await serves.cleanup();
  await pool.cleanup();
});

interface Answer {
  readonly status: number;
  readonly sessionId: string | undefined;
  /** Whether the request went over a connection an earlier request used. */
  readonly reused: boolean;
}

/** One POST over `agent` (one keep-alive connection), its answer read whole. */
function post(agent: Agent, url: string, token: string, message: unknown, sessionId?: string): Promise<Answer> {
  const body = JSON.stringify(message);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId, 'mcp-protocol-version': VERSION }),
        },
      },
      (res: IncomingMessage) => {
        res.resume();
        res.on('end', () => {
          const id = res.headers['mcp-session-id'];
          resolve({ status: res.statusCode ?? 0, sessionId: typeof id === 'string' ? id : undefined, reused: req.reusedSocket });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The session's GET stream opened with `token`; `ended` turns true when the gateway ends it. */
function openStream(url: string, token: string, sessionId: string): Promise<{ status: number; ended: () => boolean; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': VERSION } }, (res) => {
      let ended = false;
      res.resume();
      res.on('end', () => (ended = true));
      res.on('close', () => (ended = true));
      resolve({ status: res.statusCode ?? 0, ended: () => ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

const listTools = (id: number): unknown => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });

describe('rotating the gateway bearer token through its file', () => {
  it(
    'refuses the old token and accepts the new one in the same session, after an atomic rename and after an in-place write, without a restart',
    async () => {
      const dir = await pool.profile();
      const file = join(dir, 'gateway-token');
      await writeFile(file, `${TOKEN_A}\n`, { mode: 0o600 });
      const config = join(dir, 'gateway.json');
      await writeFile(config, JSON.stringify({ profileDir: dir, dev: true, transport: 'http', http: { port: 0, token: { file } } }));
      const served = await serves.start(['--config', config]);
      const { child, url } = served;
      expect(url, served.stderr()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'rotation', version: '1' } } };
        const opened = await post(agent, url, TOKEN_A, initialize);
        expect(opened.status).toBe(200);
        const session = opened.sessionId ?? '';
        expect(session).not.toBe('');
        expect((await post(agent, url, TOKEN_A, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status).toBe(202);
        expect(await post(agent, url, TOKEN_A, listTools(2), session)).toMatchObject({ status: 200, reused: true });
        const stream = await openStream(url, TOKEN_A, session);
        expect(stream.status).toBe(200);
        let id = 10;

        // An atomic rename: a new file in the token file's place.
        await writeFile(`${file}.new`, `${TOKEN_B}\n`, { mode: 0o600 });
        await rename(`${file}.new`, file);
        let refused: Answer | undefined;
        await waitUntil(async () => {
          const answer = await post(agent, url, TOKEN_A, listTools((id += 1)), session);
          if (answer.status === 401) refused = answer;
          return refused !== undefined;
        }, NOTICED_WITHIN_MS);
        // Refused on the very connection it was accepted on before: what the connection remembered went with the old token.
        expect(refused?.reused).toBe(true);
        expect((await post(agent, url, TOKEN_B, listTools((id += 1)), session)).status).toBe(200);
        await waitUntil(() => stream.ended(), NOTICED_WITHIN_MS);
        expect(served.stderr()).toContain(`the bearer token of client 'default' changed in ${file}`);
        expect(served.stderr()).not.toContain(TOKEN_B);

        // An in-place write: the same file truncated and written.
        await writeFile(file, `${TOKEN_C}\n`);
        await waitUntil(async () => (await post(agent, url, TOKEN_B, listTools((id += 1)), session)).status === 401, NOTICED_WITHIN_MS);
        expect((await post(agent, url, TOKEN_C, listTools((id += 1)), session)).status).toBe(200);
        expect((await post(agent, url, TOKEN_A, listTools((id += 1)), session)).status).toBe(401);

        // A file another user could have written gives no token: the last good one stays, and the operator is told.
        await writeFile(`${file}.new`, `${TOKEN_D}\n`, { mode: 0o600 });
        await chmod(`${file}.new`, 0o622);
        await rename(`${file}.new`, file);
        await waitUntil(() => served.stderr().includes("client 'default' keeps its previous token"), NOTICED_WITHIN_MS);
        expect(served.stderr()).toContain('is writable by its group or by others');
        expect((await post(agent, url, TOKEN_D, listTools((id += 1)), session)).status).toBe(401);
        expect((await post(agent, url, TOKEN_C, listTools((id += 1)), session)).status).toBe(200);
        expect(child.exitCode).toBeNull();
        stream.close();
      } finally {
        agent.destroy();
      }
    },
    TIMEOUT_MS,
  );

  it(
    'reads a library caller\'s token file at start, and keeps a client\'s token when its file is rewritten with another client\'s',
    async () => {
      const notices: string[] = [];
      const { gateway, other } = await tokenFileGateway(pool, { own: TOKEN_A, ci: TOKEN_B }, (m) => notices.push(m));
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        expect(gateway.token).toBe(TOKEN_A);
        const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'rotation', version: '1' } } };
        expect((await post(agent, gateway.url!, TOKEN_B, initialize)).status).toBe(200);
        // One token, one client: the default token in ci's file would make the policy depend on the order of the clients.
        await writeFile(other, `${TOKEN_A}\n`);
        await waitUntil(() => notices.some((n) => n.includes("holds the token of another client; client 'ci' keeps its previous token")), NOTICED_WITHIN_MS);
        expect((await post(agent, gateway.url!, TOKEN_B, initialize)).status).toBe(200);
        await writeFile(other, `${TOKEN_C}\n`);
        await waitUntil(async () => (await post(agent, gateway.url!, TOKEN_B, initialize)).status === 401, NOTICED_WITHIN_MS);
        expect((await post(agent, gateway.url!, TOKEN_C, initialize)).status).toBe(200);
        expect(notices).toContain(`the bearer token of client 'ci' changed in ${other}: the previous one is refused from now on`);
      } finally {
        agent.destroy();
        await gateway.close();
      }
    },
    TIMEOUT_MS,
  );
});
