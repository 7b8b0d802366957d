/**
 * After a rotation (attack review R1): a token rotated away is never taken
 * again, by its client or another (it was often rotated because it leaked;
 * a token file restored from a backup, or another client's file given it,
 * let it in again, under that client's policy), and a host application's
 * `onNotice` that throws does not end the process (the timer's promise
 * rejected, unhandled) nor stop the rotation. A real library gateway over
 * real HTTP, real token files.
 */
import { writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';
import { tokenFileGateway } from './tokenFileGateway.js';

const TIMEOUT_MS = 120_000;
const VERSION = '2025-06-18';
const TOKEN_A = 'reuse-token-a-0123456789abcdef';
const TOKEN_B = 'reuse-token-b-0123456789abcdef';
const TOKEN_C = 'reuse-token-c-0123456789abcdef';
const TOKEN_D = 'reuse-token-d-0123456789abcdef';
// Several times etc/gateway-defaults.json's tokenFileCheckMs (1 s), for a loaded machine: a bound on waiting, not a measurement.
const NOTICED_WITHIN_MS = 20_000;

const pool = new HostPool();
afterEach(async () => {
  await pool.cleanup();
});

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'reuse', version: '1' } } };

/** The status of an initialize presenting `token`, on a connection of its own. */
async function statusWith(url: string, token: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify(initialize),
  });
  await res.arrayBuffer();
  return res.status;
}

describe('a bearer token rotated away', () => {
  it(
    "is refused when a client's file gives it again, its own or another's, and a throwing onNotice changes nothing",
    async () => {
      const notices: string[] = [];
      // A host application's logger that fails: it heard the notice, then threw.
      const { gateway, own, other } = await tokenFileGateway(pool, { own: TOKEN_A, ci: TOKEN_B }, (m) => {
        notices.push(m);
        throw new Error('the logger is gone');
      });
      const url = gateway.url ?? '';
      try {
        // ci's token B leaked and is rotated away.
        await writeFile(other, `${TOKEN_C}\n`);
        await waitUntil(async () => (await statusWith(url, TOKEN_B)) === 401, NOTICED_WITHIN_MS);
        expect(await statusWith(url, TOKEN_C)).toBe(200);
        // The default client's file is given B (a mix-up, or whoever holds the leaked token got it written there).
        await writeFile(own, `${TOKEN_B}\n`);
        await waitUntil(() => notices.some((n) => n.includes(`token file ${own} holds a token rotated away before`)), NOTICED_WITHIN_MS);
        expect(await statusWith(url, TOKEN_B)).toBe(401);
        expect(await statusWith(url, TOKEN_A)).toBe(200);
        // ci's own file restored from a backup: B again.
        await writeFile(other, `${TOKEN_B}\n`);
        await waitUntil(() => notices.some((n) => n.includes(`token file ${other} holds a token rotated away before`)), NOTICED_WITHIN_MS);
        expect(await statusWith(url, TOKEN_B)).toBe(401);
        expect(await statusWith(url, TOKEN_C)).toBe(200);
        // A new token is taken as ever.
        await writeFile(own, `${TOKEN_D}\n`);
        await waitUntil(async () => (await statusWith(url, TOKEN_D)) === 200, NOTICED_WITHIN_MS);
        expect(await statusWith(url, TOKEN_A)).toBe(401);
      } finally {
        await gateway.close();
      }
    },
    TIMEOUT_MS,
  );
});
