/** Releases a slot taken from an {@link InFlightLimiter}; safe to call more than once. */
export type ReleaseSlot = () => void;

/** An entry of a {@link Line}, linked in place. */
interface Linked<T> {
  prev: T | undefined;
  next: T | undefined;
}

/**
 * A first-in first-out line whose entries are linked in place: joining,
 * leaving from anywhere and reading the first all cost the same however long
 * it is. A Set served from its front is not: its deleted entries stay in
 * its table until something is added, and every read of its first entry
 * skips them, so draining 200,000 queued calls of one caller took 7 s.
 */
class Line<T extends Linked<T>> {
  first: T | undefined;
  private last: T | undefined;
  size = 0;

  push(entry: T): void {
    entry.prev = this.last;
    entry.next = undefined;
    if (this.last === undefined) this.first = entry;
    else this.last.next = entry;
    this.last = entry;
    this.size++;
  }

  remove(entry: T): void {
    if (entry.prev === undefined) this.first = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) this.last = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = undefined;
    entry.next = undefined;
    this.size--;
  }
}

/** One call waiting for a slot, in its caller's line. */
interface Waiter extends Linked<Waiter> {
  waiting: boolean;
  readonly grant: (release: ReleaseSlot) => void;
}

/** A caller with calls waiting: its calls in arrival order, itself in the line of turns. */
interface CallerTurn extends Linked<CallerTurn> {
  readonly caller: string | undefined;
  readonly waiters: Line<Waiter>;
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
  // Callers with calls waiting, each found by its key and served in the order of the line of turns, where the caller
  // served goes to the back. Both lines are linked in place: a session closing with thousands of calls queued aborts each
  // of them, and a gateway serves a backlog of one client as it serves a thousand clients, at the same cost per call.
  private readonly callers = new Map<string | undefined, CallerTurn>();
  private readonly turns = new Line<CallerTurn>();

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
      const turn = this.callers.get(caller) ?? this.openTurn(caller);
      const waiter: Waiter = {
        prev: undefined,
        next: undefined,
        waiting: true,
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = (): void => {
        if (!waiter.waiting) return;
        this.leave(turn, waiter);
        resolve(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      turn.waiters.push(waiter);
      this.queued++;
    });
  }

  private openTurn(caller: string | undefined): CallerTurn {
    const turn: CallerTurn = { caller, waiters: new Line<Waiter>(), prev: undefined, next: undefined };
    this.callers.set(caller, turn);
    this.turns.push(turn);
    return turn;
  }

  /** Takes a waiting call out of its caller's line; a caller left with none loses its turn. */
  private leave(turn: CallerTurn, waiter: Waiter): void {
    turn.waiters.remove(waiter);
    waiter.waiting = false;
    this.queued--;
    if (turn.waiters.size > 0) return;
    this.turns.remove(turn);
    this.callers.delete(turn.caller);
  }

  private releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const turn = this.turns.first;
      if (turn === undefined) {
        this.active--;
        return;
      }
      const waiter = turn.waiters.first!;
      this.leave(turn, waiter);
      if (turn.waiters.size > 0 && this.turns.size > 1) {
        // To the back of the turns; a caller waiting alone is there already.
        this.turns.remove(turn);
        this.turns.push(turn);
      }
      waiter.grant(this.releaser());
    };
  }
}
