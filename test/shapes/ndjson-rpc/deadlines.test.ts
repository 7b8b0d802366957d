/** The calls of an ndjson-rpc session run on one deadline timer (CallDeadlines): what that must keep and fix. */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { NdjsonRpcSession } from '../../../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import { nodeArgv, plainLauncher } from '../../support/plainLauncher.js';

const ECHO = fileURLToPath(new URL('../../../fixtures/plugins/ndjson-echo/echo.mjs', import.meta.url));
const sessions: NdjsonRpcSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

function session(mode: string, env: Record<string, string> = {}): NdjsonRpcSession {
  const s = NdjsonRpcSession.create({ launch: plainLauncher(nodeArgv(ECHO), { env: { ECHO_MODE: mode, ...env } }), callTimeoutMs: 15_000 })._unsafeUnwrap();
  sessions.push(s);
  return s;
}

describe('ndjson-rpc call deadlines', () => {
  it('waits for the answer of a call whose timeout is longer than a Node timer can wait (2^31 ms)', async () => {
    const s = session('slow', { ECHO_SLOW_MS: '300' });
    const answer = (await s.callTool('echo', { text: 'patient' }, { timeoutMs: 2 ** 32 }))._unsafeUnwrap();
    expect(answer).toEqual({ isError: false, value: { text: 'patient' } });
  });

  it('still times out each call of several in flight at its own deadline', async () => {
    const s = NdjsonRpcSession.create({ launch: plainLauncher(nodeArgv(ECHO), { env: { ECHO_MODE: 'concurrent' } }), maxInFlight: 4 })._unsafeUnwrap();
    sessions.push(s);
    (await s.callTool('echo', { delayMs: 0 }))._unsafeUnwrap();
    const outcomes = await Promise.all([
      s.callTool('echo', { delayMs: 5000 }, { timeoutMs: 200 }),
      s.callTool('echo', { delayMs: 0 }, { timeoutMs: 10_000 }),
      s.callTool('echo', { delayMs: 5000 }, { timeoutMs: 400 }),
    ]);
    expect(outcomes.map((o) => (o.isOk() ? 'ok' : o.error.code))).toEqual(['PLUGIN_TIMEOUT', 'ok', 'PLUGIN_TIMEOUT']);
    expect(outcomes.map((o) => (o.isErr() ? o.error.details.timeout_ms : undefined))).toEqual([200, undefined, 400]);
  });

  it('takes calls that time out or are cancelled while queued out of the in-flight queue at once', async () => {
    const s = NdjsonRpcSession.create({ launch: plainLauncher(nodeArgv(ECHO), { env: { ECHO_MODE: 'concurrent' } }), maxInFlight: 1 })._unsafeUnwrap();
    sessions.push(s);
    (await s.callTool('echo', { delayMs: 0 }))._unsafeUnwrap();
    // Holds the one slot for the rest of the test: the queued calls below end while it is still at the plugin.
    const holder = s.callTool('echo', { delayMs: 60_000 }, { timeoutMs: 60_000 });
    const cancel = new AbortController();
    const timedOut = Array.from({ length: 5 }, (_, i) => s.callTool('echo', { delayMs: 0 }, { timeoutMs: 50, caller: `c${i % 2}` }));
    const cancelled = Array.from({ length: 3 }, () => s.callTool('echo', { delayMs: 0 }, { signal: cancel.signal, caller: 'c2' }));
    expect(s.stats()).toEqual({ inFlight: 1, waiting: 8 });
    cancel.abort();
    const outcomes = await Promise.all([...timedOut, ...cancelled]);
    expect(outcomes.map((o) => o._unsafeUnwrapErr().code)).toEqual([...Array(5).fill('PLUGIN_TIMEOUT'), ...Array(3).fill('PLUGIN_CANCELLED')]);
    // Before, each stayed queued until its turn came (here: never), then took the slot only to hand it straight on.
    expect(s.stats()).toEqual({ inFlight: 1, waiting: 0 });
    await s.close();
    expect((await holder)._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
  });
});
