/**
 * A batch whose answer becomes an SSE stream (a message about one of its
 * requests came before the last answer) carries every answer, also those
 * ready before the stream began: those were collected for a JSON body and
 * never written, so the client waited for them forever. Real gateway,
 * mcp-faulty in the sandbox.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { gatewayTestPools, openRawHttpSession } from '../support/gatewayHarness.js';

const TOKEN = 'batch-stream-token-0123456789';
const { pool, gateways } = gatewayTestPools();

describe('HTTP gateway batch answered on an SSE stream', () => {
  it('writes the answers that came before the stream began', async () => {
    const profile = await pool.profile();
    const setup = await pool.open(profile);
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'mcp-faulty'), { bundle: ['bin/mcp-faulty.mjs'] });
    (await setup.install(pkg, { canary: false }))._unsafeUnwrap();
    const host = await pool.open(profile);
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
    const { post } = await openRawHttpSession(served.url ?? '', TOKEN, '2025-06-18', 'batch-stream');
    // The echo answers at once; the slow call's progress, which turns the answer into a stream, comes seconds later.
    const res = await post([
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'plug.mcp-faulty.echo', arguments: { message: 'first' } } },
      { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'plug.mcp-faulty.slow', arguments: { steps: 1, intervalMs: 3000 }, _meta: { progressToken: 'p' } } },
    ]);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = (await res.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as { id?: number; method?: string });
    expect(events.filter((e) => e.id !== undefined).map((e) => e.id).sort()).toEqual([5, 6]);
    expect(events.some((e) => e.method === 'notifications/progress')).toBe(true);
  }, 60_000);
});
