/** Releases a slot taken from an {@link InFlightLimiter}; safe to call more than once. */
export type ReleaseSlot = () => void;

/** One call waiting for a slot, in its caller's queue. */
interface Waiter {
  readonly grant: (release: ReleaseSlot) => void;
}

/**
 * Caps how many requests one session has outstanding at a plugin (1
 * serializes them, as the mcptest reference host does). Callers over the cap
 * wait; a freed slot goes to the callers with calls waiting in turn (round
 * robin), and within one caller to its oldest call, so a caller with
 * hundreds of calls queued delays another's next call by at most one of its
 * own. A waiting call whose signal aborts leaves its queue without ever
 * taking a slot. Shared by every protocol session.
 */
export class InFlightLimiter {
  private active = 0;
  private queued = 0;
  // Callers with calls waiting, in the order of their turns; the caller served goes to the back. Each queue is a Set, which
  // keeps arrival order and takes a waiter out in constant time: a session closing with thousands of calls queued aborts
  // each of them, and searching an array for each would cost the square of the queue on the host's thread.
  private readonly turns = new Map<string | undefined, Set<Waiter>>();

  /** @param max - The number of slots, at least 1. */
  constructor(readonly max: number) {}

  /** Requests currently holding a slot. */
  get inFlight(): number {
    return this.active;
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.queued;
  }

  /** A slot now, or `undefined` when none is free: no promise on the uncontended path. */
  tryAcquire(): ReleaseSlot | undefined {
    if (this.active >= this.max) return undefined;
    this.active++;
    return this.releaser();
  }

  /**
   * Takes a slot, waiting for one if needed; `undefined` when `signal`
   * aborted first. `caller` names whose call this is (absent: the
   * application's): waiting calls of different callers take freed slots in turn.
   */
  acquire(signal?: AbortSignal, caller?: string): Promise<ReleaseSlot | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    if (this.active < this.max) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      const queue = this.turns.get(caller) ?? this.openTurn(caller);
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = (): void => {
        if (!queue.delete(waiter)) return;
        this.queued--;
        if (queue.size === 0) this.turns.delete(caller);
        resolve(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.add(waiter);
      this.queued++;
    });
  }

  private openTurn(caller: string | undefined): Set<Waiter> {
    const queue = new Set<Waiter>();
    this.turns.set(caller, queue);
    return queue;
  }

  private releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const turn = this.turns.entries().next();
      if (turn.done === true) {
        this.active--;
        return;
      }
      const [caller, queue] = turn.value;
      const waiter = queue.values().next().value as Waiter;
      queue.delete(waiter);
      this.queued--;
      if (queue.size === 0) this.turns.delete(caller);
      else if (this.turns.size > 1) {
        // To the back of the turns; a caller waiting alone is there already.
        this.turns.delete(caller);
        this.turns.set(caller, queue);
      }
      waiter.grant(this.releaser());
    };
  }
}
