/** Clocks for tests that need a time but no timers. */
import type { Clock } from '../../src/ports/ports.js';

/** A clock stopped at `ms` (epoch milliseconds) whose timers never fire. */
export function stoppedClock(ms: number): Clock {
  return { now: () => ms, setTimer: () => () => undefined };
}
