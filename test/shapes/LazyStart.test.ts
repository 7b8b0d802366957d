import { err, ok, type Result } from 'neverthrow';
import { describe, expect, it } from 'vitest';
import { hostError, type HostError } from '../../src/errors/HostError.js';
import { LazyStart, type LazyStartSteps } from '../../src/shapes/LazyStart.js';

interface Connection {
  readonly n: number;
  alive: boolean;
}

/** Steps whose starts finish when the test says so. */
function steps(overrides: Partial<LazyStartSteps<Connection>> = {}) {
  const starts: ((result: Result<Connection, HostError>) => void)[] = [];
  const discarded: Connection[] = [];
  const signals: AbortSignal[] = [];
  const lazy = new LazyStart<Connection>({
    start: (abandoned) => {
      signals.push(abandoned);
      return new Promise((resolve) => starts.push(resolve));
    },
    isLive: (c) => c.alive,
    discard: async (c) => {
      discarded.push(c);
    },
    closedError: () => hostError('HOST_CLOSED', 'closed'),
    ...overrides,
  });
  return { lazy, starts, discarded, signals };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('LazyStart', () => {
  it('starts nothing until used, and concurrent uses share one start', async () => {
    const { lazy, starts } = steps();
    expect(starts).toHaveLength(0);
    const first = lazy.get();
    const second = lazy.get();
    await tick();
    expect(starts).toHaveLength(1);
    starts[0]?.(ok({ n: 1, alive: true }));
    expect((await first)._unsafeUnwrap()).toBe((await second)._unsafeUnwrap());
    expect(lazy.live?.n).toBe(1);
  });

  it('replaces a connection that died on the next use, and lets a failed start be retried', async () => {
    const { lazy, starts } = steps();
    const first = lazy.get();
    await tick();
    starts[0]?.(ok({ n: 1, alive: true }));
    const one = (await first)._unsafeUnwrap();
    one.alive = false;
    expect(lazy.live).toBeUndefined();
    const failing = lazy.get();
    await tick();
    starts[1]?.(err(hostError('PLUGIN_SPAWN_FAILED', 'no')));
    expect((await failing)._unsafeUnwrapErr().code).toBe('PLUGIN_SPAWN_FAILED');
    const again = lazy.get();
    await tick();
    starts[2]?.(ok({ n: 3, alive: true }));
    expect((await again)._unsafeUnwrap().n).toBe(3);
  });

  it('keeps refusing to replace a dead connection when the protocol says so', async () => {
    const sticky = hostError('PLUGIN_CRASHED', 'crashed earlier');
    const { lazy, starts } = steps({ refuseRestart: async () => sticky });
    const first = lazy.get();
    await tick();
    starts[0]?.(ok({ n: 1, alive: true }));
    (await first)._unsafeUnwrap().alive = false;
    expect((await lazy.get())._unsafeUnwrapErr()).toBe(sticky);
    expect((await lazy.get())._unsafeUnwrapErr()).toBe(sticky);
    expect(starts).toHaveLength(1);
  });

  it('discards a start that completes after close, and refuses every later use', async () => {
    const { lazy, starts, discarded } = steps();
    const pending = lazy.get();
    await tick();
    const closing = lazy.close();
    starts[0]?.(ok({ n: 1, alive: true }));
    expect(await closing).toBeUndefined();
    expect((await pending)._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
    expect(discarded.map((c) => c.n)).toEqual([1]);
    expect((await lazy.get())._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
    expect(starts).toHaveLength(1);
    expect(lazy.isClosed).toBe(true);
  });

  it('lets every use leave a start that goes on: the next use joins it instead of starting another', async () => {
    const { lazy, starts, signals } = steps();
    const leaveFirst = new AbortController();
    const leaveSecond = new AbortController();
    const first = lazy.join(leaveFirst.signal);
    const second = lazy.join(leaveSecond.signal);
    await tick();
    expect(starts).toHaveLength(1);
    leaveFirst.abort();
    leaveSecond.abort();
    expect(await first).toBeUndefined();
    expect(await second).toBeUndefined();
    expect(signals[0]?.aborted).toBe(false);
    const next = lazy.get();
    await tick();
    expect(starts).toHaveLength(1);
    starts[0]?.(ok({ n: 1, alive: true }));
    expect((await next)._unsafeUnwrap().n).toBe(1);
  });

  it('reports a start that fails after every use left it, and only then', async () => {
    const unseen: HostError[] = [];
    const { lazy, starts } = steps({ onUnseenFailure: (failure) => unseen.push(failure) });
    const leave = new AbortController();
    const left = lazy.join(leave.signal);
    await tick();
    leave.abort();
    expect(await left).toBeUndefined();
    starts[0]?.(err(hostError('PLUGIN_HANDSHAKE_FAILED', 'no initialize answer')));
    await tick();
    expect(unseen.map((f) => f.code)).toEqual(['PLUGIN_HANDSHAKE_FAILED']);

    // A failure some use still waits for is that use's to report.
    const waiting = lazy.join(new AbortController().signal);
    await tick();
    starts[1]?.(err(hostError('PLUGIN_CRASHED', 'exited')));
    expect((await waiting)?._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');
    expect(unseen).toHaveLength(1);
  });

  it('tells a start in progress to stop on close, and discards what it started', async () => {
    const { lazy, starts, signals, discarded } = steps();
    const first = lazy.get();
    await tick();
    const closing = lazy.close();
    expect(signals[0]?.aborted).toBe(true);
    starts[0]?.(ok({ n: 1, alive: true }));
    expect(await closing).toBeUndefined();
    expect((await first)._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
    expect(discarded.map((c) => c.n)).toEqual([1]);

    // A start that fails because close() stopped it fails its uses with the close, not with what it ran into.
    const other = steps();
    const waiting = other.lazy.get();
    await tick();
    const closed = other.lazy.close();
    other.starts[0]?.(err(hostError('PLUGIN_HANDSHAKE_FAILED', 'initialize aborted')));
    await closed;
    expect((await waiting)._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
  });

  it('never abandons a start that a use without a signal waits for', async () => {
    const { lazy, starts, signals } = steps();
    const leave = new AbortController();
    const leaving = lazy.join(leave.signal);
    const staying = lazy.get();
    await tick();
    leave.abort();
    expect(await leaving).toBeUndefined();
    expect(signals[0]?.aborted).toBe(false);
    starts[0]?.(ok({ n: 1, alive: true }));
    expect((await staying)._unsafeUnwrap().n).toBe(1);
  });

  it('hands the running connection to close for the caller to end', async () => {
    const { lazy, starts } = steps();
    const first = lazy.get();
    await tick();
    starts[0]?.(ok({ n: 1, alive: true }));
    await first;
    expect((await lazy.close())?.n).toBe(1);
    expect(lazy.live).toBeUndefined();
  });
});
