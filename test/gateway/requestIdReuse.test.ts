/**
 * A Streamable HTTP client that disconnects a POST and reuses its request id
 * in the same session gets the answer of the request it is waiting on, not
 * of the one it gave up: the abandoned call is cancelled. Raw HTTP requests
 * to a real gateway serving the probe plugin in the sandbox.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { gatewayTestPools, openRawHttpSession } from '../support/gatewayHarness.js';
import { nextEvent } from '../support/hostHarness.js';

const TOKEN = 'request-id-reuse-token-0123456789';
const VERSION = '2025-06-18';
const ECHO = 'plug.host-probe.echo';
/** Time for the gateway to see the first POST's connection close before the second arrives. */
const CLOSE_SEEN_MS = 300;

const { pool, gateways } = gatewayTestPools();

type Answer = { id?: number; result?: { content?: { text?: string }[] }; error?: { message: string } };

describe('HTTP gateway request ids', () => {
  it('answers a request that reuses the id of a disconnected POST with its own result, not the abandoned call\'s', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
    const { post } = await openRawHttpSession(served.url ?? '', TOKEN, VERSION, 'reuse');
    const call = (message: string, delayMs: number): unknown => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: ECHO, arguments: { message, delayMs } } });

    const started = nextEvent(host, 'call:start');
    const giveUp = new AbortController();
    const abandoned = post(call('abandoned', 1_000), giveUp.signal).catch(() => undefined);
    await started;
    giveUp.abort();
    await abandoned;
    await sleep(CLOSE_SEEN_MS);

    const reused = await post(call('waited for', 1_500));
    expect(reused.status).toBe(200);
    const answer = (await reused.json()) as Answer;
    expect(answer.id).toBe(7);
    expect(answer.result?.content?.[0]?.text).toContain('waited for');
    expect(answer.result?.content?.[0]?.text).not.toContain('abandoned');
  });

  it("takes a later request that reuses the initialize request's id as any other: the session keeps its version and stays open", async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
    // openRawHttpSession initializes with id 1.
    const { post } = await openRawHttpSession(served.url ?? '', TOKEN, VERSION, 'initialize-id-reuse');

    const pinged = await post({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(pinged.status).toBe(200);
    expect(((await pinged.json()) as { id?: number }).id).toBe(1);
    const refused = await post({ jsonrpc: '2.0', id: 1, method: 'no/such-method' });
    expect(refused.status).toBe(200);
    expect(((await refused.json()) as Answer).error?.message).toBeDefined();

    const after = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: ECHO, arguments: { message: 'still here' } } });
    expect(after.status).toBe(200);
    expect(((await after.json()) as Answer).result?.content?.[0]?.text).toContain('still here');
  });
});
