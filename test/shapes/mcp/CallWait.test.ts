/** The budget of a call that waits for a slot or for its plugin to start: pure logic on a fake clock. */
import { describe, expect, it } from 'vitest';
import { CallWait } from '../../../src/shapes/mcp/CallWait.js';
import { FakeClock } from '../../support/clocks.js';

const budget = { timeoutMs: 2000, maxTotalTimeoutMs: 5000 };

describe('CallWait', () => {
  it('hands the request what is left of the timeout and the total cap, reported in the caller\'s numbers', () => {
    const clock = new FakeClock();
    const onProgress = (): void => undefined;
    const wait = new CallWait('echo', { ...budget, onProgress }, clock);
    clock.advance(500);
    expect(wait.remaining()).toEqual({ timeoutMs: 1500, maxTotalTimeoutMs: 4500, onProgress });
    expect(wait.budget).toEqual(budget);
    wait.dispose();
    expect(clock.pending).toBe(0);
  });

  it('aborts its signal when the timeout runs out, and fails with PLUGIN_TIMEOUT naming what it waited for', () => {
    const clock = new FakeClock();
    const wait = new CallWait('echo', budget, clock);
    clock.advance(1999);
    expect(wait.signal.aborted).toBe(false);
    clock.advance(1);
    expect(wait.signal.aborted).toBe(true);
    expect(wait.remaining()).toBeUndefined();
    expect(wait.failure('the plugin to start')).toMatchObject({
      code: 'PLUGIN_TIMEOUT',
      message: 'tools/call of "echo" got no answer within 2000 ms: it was still waiting for the plugin to start',
      details: { phase: 'tools/call', tool: 'echo', waiting_for: 'the plugin to start', timeout_ms: 2000 },
    });
  });

  it('ends at the total cap when it is the shorter', () => {
    const clock = new FakeClock();
    const wait = new CallWait('echo', { timeoutMs: 9000, maxTotalTimeoutMs: 3000 }, clock);
    clock.advance(3000);
    expect(wait.failure('a free slot')).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { waiting_for: 'a free slot', max_total_timeout_ms: 3000 } });
  });

  it("follows the caller's signal, also one aborted before the call, and stops following it once disposed", () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    const wait = new CallWait('echo', { ...budget, signal: caller.signal }, clock);
    caller.abort();
    expect(wait.signal.aborted).toBe(true);
    expect(wait.failure('a free slot')).toMatchObject({ code: 'PLUGIN_CANCELLED', details: { waiting_for: 'a free slot' } });
    expect(clock.pending).toBe(0);

    const early = new CallWait('echo', { ...budget, signal: AbortSignal.abort() }, clock);
    expect(early.remaining()).toBeUndefined();

    const later = new AbortController();
    const disposed = new CallWait('echo', { ...budget, signal: later.signal }, clock);
    disposed.dispose();
    later.abort();
    expect(disposed.signal.aborted).toBe(false);
  });
});
