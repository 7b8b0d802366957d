import type { HostError } from '../errors/HostError.js';
import type { Clock } from '../ports/ports.js';
import type { PluginSession } from '../shapes/PluginSession.js';

/**
 * One installed plugin's live session and its idle timer. The session (and
 * with it the process) starts lazily on the first call and is closed after
 * `idleTimeoutMs` without calls in flight; the next call starts it again.
 */
export class PluginRuntime {
  #inFlight = 0;
  #cancelIdle: (() => void) | undefined;
  #idleSince = 0;
  #closed = false;
  #held = false;
  #failure: HostError | undefined;
  #retiredBy: HostError | undefined;
  #onDrained: (() => void) | undefined;

  /**
   * @param session - The protocol session (it launches its process lazily).
   * @param clock - Runs the idle timer.
   * @param idleTimeoutMs - Idle time before the session is closed; 0 or Infinity keeps it open.
   * @param onIdleClose - Told when the idle timer closed the session.
   */
  constructor(
    readonly session: PluginSession,
    private readonly clock: Clock,
    private readonly idleTimeoutMs: number,
    private readonly onIdleClose: () => void,
  ) {}

  /** Whether the session was closed (idle, failure or host close). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Calls in flight right now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Claims the one failure this session may record: when a process dies
   * with several calls in flight, each call fails, but the plugin failed once.
   */
  claimFailure(failure: HostError): boolean {
    if (this.#failure !== undefined) return false;
    this.#failure = failure;
    return true;
  }

  /** The failure that stopped this session, when one did. */
  get failure(): HostError | undefined {
    return this.#failure;
  }

  /** Marks a call as started; the idle timer waits. */
  begin(): void {
    this.#inFlight += 1;
  }

  /**
   * Why the host retired this session (its plugin was removed or upgraded),
   * once it did: the error for a call the retirement cut short.
   */
  get retiredBy(): HostError | undefined {
    return this.#retiredBy;
  }

  /**
   * Lets the calls in flight finish, for at most `drainMs`, then closes the
   * session; a call still running then ends with the session's close, which
   * the host reports as `reason`. The caller has already stopped sending new
   * calls here.
   */
  async retire(reason: HostError, drainMs: number): Promise<void> {
    this.#retiredBy ??= reason;
    if (this.#inFlight > 0 && drainMs > 0 && !this.#closed) {
      await new Promise<void>((resolve) => {
        const cancel = this.clock.setTimer(() => this.#drained(), drainMs);
        this.#onDrained = () => {
          cancel();
          resolve();
        };
      });
    }
    await this.close();
  }

  #drained(): void {
    const done = this.#onDrained;
    this.#onDrained = undefined;
    done?.();
  }

  /**
   * Keeps the session from its idle stop while `held` (a resource
   * subscription waits for updates without a call in flight); releasing it
   * starts the idle time when no call runs.
   */
  hold(held: boolean): void {
    if (held === this.#held) return;
    this.#held = held;
    if (!held && this.#inFlight === 0) this.#startIdle();
  }

  /** Marks a call as ended; the idle time counts from the last call to end. */
  end(): void {
    this.#inFlight -= 1;
    if (this.#inFlight > 0) return;
    this.#drained();
    this.#startIdle();
  }

  #startIdle(): void {
    if (this.#held || this.#closed || !(this.idleTimeoutMs > 0 && Number.isFinite(this.idleTimeoutMs))) return;
    this.#idleSince = this.clock.now();
    // One timer serves many calls: it is armed once and, when it fires early, armed again for the rest of the idle time.
    if (this.#cancelIdle === undefined) this.#armIdle(this.idleTimeoutMs);
  }

  #armIdle(ms: number): void {
    this.#cancelIdle = this.clock.setTimer(() => {
      this.#cancelIdle = undefined;
      // A call in flight re-arms the timer when it ends, and so does the end of a hold.
      if (this.#inFlight > 0 || this.#held || this.#closed) return;
      const remaining = Math.min(this.#idleSince + this.idleTimeoutMs - this.clock.now(), this.idleTimeoutMs);
      if (remaining > 0) {
        this.#armIdle(remaining);
        return;
      }
      void this.close().then(() => this.onIdleClose());
    }, ms);
  }

  /** Closes the session and stops its process tree. */
  async close(): Promise<void> {
    this.#drained();
    if (this.#closed) return;
    this.#closed = true;
    this.#cancelIdle?.();
    this.#cancelIdle = undefined;
    await this.session.close();
  }
}
