import type { Result } from 'neverthrow';
import type { HostError } from '../../errors/HostError.js';

/**
 * One call's outcome, settled exactly once by whichever comes first: the
 * response, the timeout, the caller's abort, a crash, or the session closing.
 * Settling runs the cleanups (timers, listeners, permits) registered so far.
 */
export class CallTicket<T> {
  private settled = false;
  private resolve!: (outcome: Result<T, HostError>) => void;
  private readonly cleanups: (() => void)[] = [];
  /** The outcome, once settled. */
  readonly outcome: Promise<Result<T, HostError>> = new Promise((resolve) => (this.resolve = resolve));

  /** Whether an outcome is already decided. */
  get isSettled(): boolean {
    return this.settled;
  }

  /** Runs `cleanup` when the ticket settles (at once if it already has). */
  onSettle(cleanup: () => void): void {
    if (this.settled) cleanup();
    else this.cleanups.push(cleanup);
  }

  /** Decides the outcome; later calls are ignored. */
  settle(outcome: Result<T, HostError>): void {
    if (this.settled) return;
    this.settled = true;
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    this.resolve(outcome);
  }
}
