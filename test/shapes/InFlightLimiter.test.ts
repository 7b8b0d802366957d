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
