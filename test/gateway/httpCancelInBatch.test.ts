/**
 * A `notifications/cancelled` that a Streamable HTTP client posts in a batch
 * beside a request of its own stops the call it names, whichever way that
 * call was served: the HTTP fast path (a lone `tools/call`) as well as the
 * SDK server (attack review). Raw HTTP requests to a real gateway serving
 * the probe plugin in the sandbox.
 */
import { describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { gatewayTestPools, openRawHttpSession } from '../support/gatewayHarness.js';
import { nextEvent } from '../support/hostHarness.js';

const TOKEN = 'cancel-in-batch-token-0123456789';
const VERSION = '2025-06-18';
const ECHO = 'plug.host-probe.echo';
/** Long enough that a call still running when its cancellation came would not end on its own while the test waits. */
const SLOW_MS = 15_000;

const { pool, gateways } = gatewayTestPools();

type Answer = { id?: number; result?: { content?: { text?: string }[] } };

describe('HTTP gateway cancellation in a batch', () => {
  it('stops a fast-path call when its cancellation comes in a batch with another request', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
    const { post } = await openRawHttpSession(served.url ?? '', TOKEN, VERSION, 'cancel-batch');
    const call = (id: number, message: string, delayMs: number): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: ECHO, arguments: { message, delayMs } } });

    const started = nextEvent(host, 'call:start');
    const stillWaiting = new AbortController();
    const slow = post(call(7, 'slow', SLOW_MS), stillWaiting.signal).catch(() => undefined);
    const { call_id: slowCall } = await started;
    const slowEnded = new Promise<HostEventMap['call:end']>((resolve) => {
      const off = host.events.on('call:end', (end) => {
        if (end.call_id !== slowCall) return;
        off();
        resolve(end);
      });
    });

    const batch = await post([{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'changed my mind' } }, call(8, 'quick', 0)]);
    const [quick] = (await batch.json()) as Answer[];
    expect(quick?.result?.content?.[0]?.text).toContain('quick');

    const end = await slowEnded;
    stillWaiting.abort();
    await slow;
    expect({ ok: end.ok, code: end.code }).toEqual({ ok: false, code: 'PLUGIN_CANCELLED' });
  }, 60_000);
});
