/**
 * The HTTP gateway's Host check (DNS rebinding) holds on every loopback
 * address it may bind, not only on the listed names (attack review R5 F5).
 * Bound to 127.0.0.2 (Linux answers on all of 127.0.0.0/8), the gateway
 * took it for a non-loopback bind and checked no Host at all: a page whose
 * name was rebound to 127.0.0.2 reached it with its own Host. Real gateway,
 * real requests on loopback.
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const TOKEN = 'loopback-host-token-0123456789';
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
const { pool, gateways } = gatewayTestPools();

/** The status of an initialize sent to `url` with `hostHeader` as its Host (fetch cannot set Host). */
function statusWithHost(url: string, hostHeader: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const headers = { host: hostHeader, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const req = request(url, { method: 'POST', headers }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', reject);
    req.end(INITIALIZE);
  });
}

describe('the Host check on a loopback bind', () => {
  it.each([
    ['127.0.0.2', '127.0.0.2'],
    ['::ffff:127.0.0.3', '[::ffff:127.0.0.3]'],
  ])('bound to %s: a foreign Host is refused 403, the bound address and loopback names are served', async (bind, shown) => {
    const host = await pool.open(await pool.profile());
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0, host: bind } });
    const url = served.url!;
    const { port } = new URL(url);
    expect(await statusWithHost(url, `rebound.example:${port}`)).toBe(403);
    expect(await statusWithHost(url, 'rebound.example')).toBe(403);
    expect(await statusWithHost(url, `${shown}:${port}`)).toBe(200);
    expect(await statusWithHost(url, `localhost:${port}`)).toBe(200);
  }, TIMEOUT_MS);

  it('bound to all addresses (0.0.0.0) checks no Host: clients on the network name the machine as they like', async () => {
    const host = await pool.open(await pool.profile());
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0, host: '0.0.0.0' } });
    const { port } = new URL(served.url!);
    expect(await statusWithHost(`http://127.0.0.1:${port}/mcp`, `machine.example:${port}`)).toBe(200);
  }, TIMEOUT_MS);
});
