/**
 * Request ids on the HTTP gateway as the SDK's own schema has them (attack
 * review): a string or a safe integer. A number past 2^53 is not one (JSON
 * gives two such ids the same value, and the SDK server drops the request,
 * so a batch carrying it was never answered), and a lone `tools/call` with
 * it must be refused like any malformed message rather than served by the
 * fast path. Raw HTTP requests to a real gateway serving the probe plugin
 * in the sandbox.
 */
import { describe, expect, it } from 'vitest';
import { gatewayTestPools, openRawHttpSession } from '../support/gatewayHarness.js';

const TOKEN = 'request-ids-token-0123456789abcdef';
const VERSION = '2025-06-18';
const ECHO = 'plug.host-probe.echo';

const { pool, gateways } = gatewayTestPools();

describe('HTTP gateway request ids', () => {
  it('refuses an integer id past the safe range, alone or in a batch, and serves the largest safe one', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
    const { post } = await openRawHttpSession(served.url ?? '', TOKEN, VERSION, 'ids');
    // Written as text: a JavaScript number cannot hold the id 2^53 + 1.
    const call = (id: string): string => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${ECHO}","arguments":{"message":"id ${id}"}}}`;

    for (const body of [call('9007199254740993'), `[${call('9007199254740995')}]`]) {
      const refused = await post(body);
      expect({ status: refused.status, code: ((await refused.json()) as { error?: { code: number } }).error?.code }).toEqual({ status: 400, code: -32600 });
    }
    const safe = await post(call(String(Number.MAX_SAFE_INTEGER)));
    expect(safe.status).toBe(200);
    expect(((await safe.json()) as { id?: number }).id).toBe(Number.MAX_SAFE_INTEGER);
  }, 60_000);
});
