import { systemClock, type Clock } from '../../../src/index.js';

/**
 * Real timers with a `now()` that can jump forward: a quarantine backoff of
 * 30 s passes in one `advance` while every call timeout still runs in real
 * time, so a scenario sees the respawn without waiting for it.
 */
export class SkewClock implements Clock {
  private offsetMs = 0;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  setTimer(fn: () => void, ms: number): () => void {
    return systemClock.setTimer(fn, ms);
  }

  /** Moves `now()` forward by `ms`. */
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
