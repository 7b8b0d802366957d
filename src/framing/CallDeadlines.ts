import type { Clock } from '../ports/ports.js';

/** One call's deadline in a {@link CallDeadlines}. */
export interface CallDeadline {
  /** When the call runs out, in the clock's milliseconds. It may move later while watched; see {@link CallDeadlines.watch} for earlier. */
  at: number;
  /** Told once, when the clock passes `at`; the deadline is no longer watched then. */
  readonly expire: () => void;
}

/** The longest delay a Node timer takes as given (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The deadlines of the calls in flight on one session, run by one timer.
 *
 * A timer per call (set when it is sent, cleared when it is answered) is
 * most of what a session's own code costs a warm call. Here the timer is
 * armed for the earliest deadline; a call that ends only leaves the set, and
 * a deadline that moves later (progress) changes nothing. When the timer
 * fires it expires what is due and re-arms for the next. A warm session with
 * one call at a time so keeps one timer, re-armed about once per timeout.
 */
export class CallDeadlines {
  readonly #watched = new Set<CallDeadline>();
  #armedFor: number | undefined;
  #cancelTimer: (() => void) | undefined;

  /** @param clock - Runs the timer and tells the time. */
  constructor(private readonly clock: Clock) {}

  /** Calls watched now. */
  get size(): number {
    return this.#watched.size;
  }

  /** Watches `deadline` until it expires or is {@link CallDeadlines.unwatch}ed; again after its `at` moved earlier. */
  watch(deadline: CallDeadline): void {
    this.#watched.add(deadline);
    this.#arm(deadline.at);
  }

  /** Stops watching `deadline` (the call ended); the timer is left as it is. */
  unwatch(deadline: CallDeadline): void {
    this.#watched.delete(deadline);
  }

  /** Stops the timer and forgets every deadline without expiring it. */
  clear(): void {
    this.#watched.clear();
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#armedFor = undefined;
  }

  #arm(at: number): void {
    if (this.#armedFor !== undefined && this.#armedFor <= at) return;
    this.#cancelTimer?.();
    this.#armedFor = at;
    this.#cancelTimer = this.clock.setTimer(() => this.#fire(), Math.min(MAX_TIMER_MS, Math.max(0, at - this.clock.now())));
  }

  #fire(): void {
    this.#armedFor = undefined;
    this.#cancelTimer = undefined;
    const now = this.clock.now();
    for (const deadline of [...this.#watched]) {
      // An earlier expiry may have ended this call too.
      if (deadline.at > now || !this.#watched.delete(deadline)) continue;
      deadline.expire();
    }
    let next = Number.POSITIVE_INFINITY;
    for (const deadline of this.#watched) next = Math.min(next, deadline.at);
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
  }
}
