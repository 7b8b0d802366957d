/**
 * PluginRuntime.hold, the pure timing logic behind "an open resource
 * subscription keeps its plugin from the idle stop" (the subscription itself
 * is exercised for real in hostSurface.test.ts).
 */
import { okAsync } from 'neverthrow';
import { describe, expect, it } from 'vitest';
import { PluginRuntime } from '../../src/host/PluginRuntime.js';
import type { PluginSession } from '../../src/shapes/PluginSession.js';
import { FakeClock } from '../support/clocks.js';

function countingSession(): PluginSession & { closes: number } {
  const session = {
    shape: 'mcp-plugin' as const,
    closes: 0,
    listTools: () => okAsync([]),
    callTool: () => okAsync({ value: null, isError: false }),
    close: async () => {
      session.closes++;
    },
  };
  return session;
}

const settle = async (): Promise<void> => {
  await Promise.resolve();
  await Promise.resolve();
};

describe('PluginRuntime.hold', () => {
  it('keeps an idle session open while held, and starts the idle time when released', async () => {
    const clock = new FakeClock();
    const session = countingSession();
    const runtime = new PluginRuntime(session, clock, 1_000, () => undefined);
    runtime.begin();
    runtime.hold(true);
    runtime.end();
    clock.advance(10_000);
    await settle();
    expect(session.closes).toBe(0);

    runtime.hold(false);
    clock.advance(999);
    await settle();
    expect(session.closes).toBe(0);
    clock.advance(1);
    await settle();
    expect(session.closes).toBe(1);
  });

  it('holds off a timer armed before the hold, and a release during a call leaves the idle time to the call', async () => {
    const clock = new FakeClock();
    const session = countingSession();
    const runtime = new PluginRuntime(session, clock, 1_000, () => undefined);
    runtime.begin();
    runtime.end();
    runtime.hold(true);
    clock.advance(5_000);
    await settle();
    expect(session.closes).toBe(0);

    runtime.begin();
    runtime.hold(false);
    clock.advance(5_000);
    await settle();
    expect(session.closes).toBe(0);
    runtime.end();
    clock.advance(1_000);
    await settle();
    expect(session.closes).toBe(1);
  });
});
