/** Releases a slot taken from an {@link InFlightLimiter}; safe to call more than once. */
export type ReleaseSlot = () => void;

/**
 * Caps how many requests one session has outstanding at a plugin (1
 * serializes them, as the mcptest reference host does). Callers over the cap
 * wait in arrival order; a waiting caller whose signal aborts leaves the
 * queue without ever taking a slot. Shared by every protocol session.
 */
export class InFlightLimiter {
  private active = 0;
  // A Set keeps arrival order and takes a waiter out in constant time: a session closing with thousands of calls queued
  // aborts each of them, and searching an array for each would cost the square of the queue on the host's thread.
  private readonly queue = new Set<{ grant: (release: ReleaseSlot) => void }>();

  /** @param max - The number of slots, at least 1. */
  constructor(readonly max: number) {}

  /** Requests currently holding a slot. */
  get inFlight(): number {
    return this.active;
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.queue.size;
  }

  /** A slot now, or `undefined` when none is free: no promise on the uncontended path. */
  tryAcquire(): ReleaseSlot | undefined {
    if (this.active >= this.max) return undefined;
    this.active++;
    return this.releaser();
  }

  /** Takes a slot, waiting for one if needed; `undefined` when `signal` aborted first. */
  acquire(signal?: AbortSignal): Promise<ReleaseSlot | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    if (this.active < this.max) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      const entry = {
        grant: (release: ReleaseSlot): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = (): void => {
        this.queue.delete(entry);
        resolve(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.add(entry);
    });
  }

  private releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queue.values().next();
      if (next.done === true) this.active--;
      else {
        this.queue.delete(next.value);
        next.value.grant(this.releaser());
      }
    };
  }
}
