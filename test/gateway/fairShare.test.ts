/**
 * One gateway client's backlog at a plugin does not hold up another's calls
 * (attack review S): the plugin's in-flight slots go to the clients with
 * calls waiting in turn. Two clients with their own tokens over raw HTTP
 * sessions, a real gateway, the probe plugin in the sandbox. Order of
 * answers only, no times.
 */
import { describe, expect, it } from 'vitest';
import { gatewayTestPools, openRawHttpSession, type RawHttpSession } from '../support/gatewayHarness.js';

const TOKEN_A = 'fair-share-token-a-0123456789abc';
const TOKEN_B = 'fair-share-token-b-0123456789abc';
const VERSION = '2025-06-18';
const ECHO = 'plug.host-probe.echo';
/** Client A's backlog: far more calls than the plugin's 16 in-flight slots. */
const BACKLOG = 240;
const DELAY_MS = 100;
/** Long enough that no call of the backlog runs out of time on a loaded machine: the test is about order, not time. */
const CALL_TIMEOUT_MS = 120_000;

const { pool, gateways } = gatewayTestPools();

type Answer = { result?: { isError?: boolean; content?: { text?: string }[] } };

/** The echo's answer to one `tools/call` POST (its id other than 1, the initialize request's), whether the gateway sent it as JSON or as an event stream. */
async function echoed(session: RawHttpSession, id: number, message: string): Promise<string> {
  const response = await session.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: ECHO, arguments: { message, delayMs: DELAY_MS } } });
  const body = await response.text();
  const json = (response.headers.get('content-type') ?? '').includes('text/event-stream') ? (/^data: (.*)$/m.exec(body)?.[1] ?? '') : body;
  const answer = JSON.parse(json) as Answer;
  if (answer.result === undefined || answer.result.isError === true) throw new Error(`call ${message} failed: ${json}`);
  return answer.result.content?.[0]?.text ?? '';
}

describe('gateway fair share of a plugin', () => {
  it(
    "answers another client's call while the first still has most of its backlog queued",
    async () => {
      const host = await pool.installed(await pool.profile(), ['probe'], { callTimeoutMs: CALL_TIMEOUT_MS });
      const served = await gateways.serve(host, { http: { token: TOKEN_A, port: 0, clients: [{ name: 'b', token: TOKEN_B, policy: {} }] } });
      const alice = await openRawHttpSession(served.url ?? '', TOKEN_A, VERSION, 'alice');
      const bob = await openRawHttpSession(served.url ?? '', TOKEN_B, VERSION, 'bob');
      expect(await echoed(alice, 2, 'warm-up')).toContain('warm-up');

      let started = 0;
      let backlogQueued: () => void = () => undefined;
      const queued = new Promise<void>((resolve) => (backlogQueued = resolve));
      const off = host.events.on('call:start', () => {
        if (++started === BACKLOG) backlogQueued();
      });
      const answered: string[] = [];
      const backlog = Array.from({ length: BACKLOG }, (_, i) => echoed(alice, 100 + i, `a${i}`).then(() => void answered.push('a')));
      await Promise.race([queued, Promise.all(backlog)]);
      off();
      expect(started).toBe(BACKLOG);
      await echoed(bob, 2, 'bob');
      answered.push('b');
      await Promise.all(backlog);

      const aliceAfterBob = answered.length - 1 - answered.indexOf('b');
      expect(answered.length).toBe(BACKLOG + 1);
      expect(aliceAfterBob).toBeGreaterThan(100);
    },
    CALL_TIMEOUT_MS + 60_000,
  );
});
