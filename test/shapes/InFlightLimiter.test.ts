import { describe, expect, it } from 'vitest';
import { InFlightLimiter } from '../../src/shapes/InFlightLimiter.js';

describe('InFlightLimiter', () => {
  it('grants up to max slots at once and queues the rest in arrival order', async () => {
    const limiter = new InFlightLimiter(2);
    const a = await limiter.acquire();
    const b = await limiter.acquire();
    const order: string[] = [];
    const c = limiter.acquire().then((release) => {
      order.push('c');
      return release;
    });
    const d = limiter.acquire().then((release) => {
      order.push('d');
      return release;
    });
    expect(limiter.inFlight).toBe(2);
    expect(limiter.waiting).toBe(2);
    b?.();
    (await c)?.();
    a?.();
    (await d)?.();
    expect(order).toEqual(['c', 'd']);
    expect(limiter.inFlight).toBe(0);
    expect(limiter.waiting).toBe(0);
  });

  it('ignores a second release of the same slot', async () => {
    const limiter = new InFlightLimiter(1);
    const release = await limiter.acquire();
    release?.();
    release?.();
    expect(limiter.inFlight).toBe(0);
    await limiter.acquire();
    expect(limiter.inFlight).toBe(1);
  });

  it('drops a waiting caller whose signal aborts, and refuses an aborted one outright', async () => {
    const limiter = new InFlightLimiter(1);
    const held = await limiter.acquire();
    const controller = new AbortController();
    const waiting = limiter.acquire(controller.signal);
    controller.abort();
    expect(await waiting).toBeUndefined();
    expect(limiter.waiting).toBe(0);
    expect(await limiter.acquire(AbortSignal.abort())).toBeUndefined();
    held?.();
    expect(limiter.inFlight).toBe(0);
  });
});

/** Queues `label`'s call on `limiter` for `caller`; when granted, it writes its label to `served` and gives the slot back at once. */
function queueCall(limiter: InFlightLimiter, served: string[], label: string, caller?: string, signal?: AbortSignal): Promise<void> {
  return limiter.acquire(signal, caller).then((release) => {
    if (release === undefined) return;
    served.push(label);
    release();
  });
}

describe('InFlightLimiter turns', () => {
  it('serves the callers with calls waiting in turn, each caller its oldest call first; no caller is the application', async () => {
    const limiter = new InFlightLimiter(1);
    const held = limiter.tryAcquire();
    const served: string[] = [];
    const calls = [
      ...['a1', 'a2', 'a3', 'a4'].map((label) => queueCall(limiter, served, label, 'a')),
      ...['b1', 'b2'].map((label) => queueCall(limiter, served, label, 'b')),
      queueCall(limiter, served, 'app1'),
    ];
    expect(limiter.waiting).toBe(7);
    held?.();
    await Promise.all(calls);
    expect(served).toEqual(['a1', 'b1', 'app1', 'a2', 'b2', 'a3', 'a4']);
    expect({ inFlight: limiter.inFlight, waiting: limiter.waiting }).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("takes an aborted waiting call out of its caller's queue: a caller left with none loses its turn, and queues again at the back", async () => {
    const limiter = new InFlightLimiter(1);
    const held = limiter.tryAcquire();
    const served: string[] = [];
    const gaveUp = new AbortController();
    const calls = [queueCall(limiter, served, 'a1', 'a', gaveUp.signal), queueCall(limiter, served, 'b1', 'b'), queueCall(limiter, served, 'b2', 'b')];
    gaveUp.abort();
    expect(limiter.waiting).toBe(2);
    calls.push(queueCall(limiter, served, 'a2', 'a'));
    held?.();
    await Promise.all(calls);
    expect(served).toEqual(['b1', 'a2', 'b2']);
    expect({ inFlight: limiter.inFlight, waiting: limiter.waiting }).toEqual({ inFlight: 0, waiting: 0 });
  });
});

describe('InFlightLimiter.tryAcquire', () => {
  it('takes a free slot without waiting, refuses when full, and hands released slots to waiters first', async () => {
    const limiter = new InFlightLimiter(1);
    const first = limiter.tryAcquire();
    expect(first).toBeTypeOf('function');
    expect(limiter.tryAcquire()).toBeUndefined();
    const waiting = limiter.acquire();
    first!();
    first!();
    const second = await waiting;
    expect(limiter.inFlight).toBe(1);
    expect(limiter.tryAcquire()).toBeUndefined();
    second!();
    expect(limiter.inFlight).toBe(0);
  });
});
