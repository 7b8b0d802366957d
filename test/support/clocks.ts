/** Clocks for tests: one stopped (a time, no timers), one moved by hand (timers fire as it passes them). */
import type { Clock } from '../../src/ports/ports.js';

/** A clock stopped at `ms` (epoch milliseconds) whose timers never fire. */
export function stoppedClock(ms: number): Clock {
  return { now: () => ms, setTimer: () => () => undefined };
}

/** A clock whose time moves only when a test says so; timers fire as it passes them. */
export class FakeClock implements Clock {
  #now: number;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #seq = 0;

  constructor(start = Date.UTC(2026, 0, 15, 12, 0, 0)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimer(fn: () => void, ms: number): () => void {
    const id = ++this.#seq;
    this.#timers.set(id, { at: this.#now + ms, fn });
    return () => void this.#timers.delete(id);
  }

  /** Moves time forward, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      const due = [...this.#timers.entries()].filter(([, t]) => t.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.#now = Math.max(this.#now, due[1].at);
      due[1].fn();
    }
    this.#now = target;
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Timers set so far, fired or not. */
  get armed(): number {
    return this.#seq;
  }
}
