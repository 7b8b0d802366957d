import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';

/** What a {@link LazyStart} starts, checks and stops. */
export interface LazyStartSteps<C> {
  /**
   * Launches the process and opens a connection on it. `abandoned` aborts
   * when the start is no longer wanted (`close()` was called): the start
   * should then stop what it launched.
   */
  readonly start: (abandoned: AbortSignal) => Promise<Result<C, HostError>>;
  /** Whether a started connection can still take calls. */
  readonly isLive: (connection: C) => boolean;
  /**
   * Asked before replacing a connection that died: an error refuses the
   * restart (the protocol's crash is sticky), `undefined` allows it.
   */
  readonly refuseRestart?: (dead: C) => Promise<HostError | undefined>;
  /** Stops a connection that finished starting after `close()`. */
  readonly discard: (connection: C) => Promise<void>;
  /**
   * Told when a start fails after every use that waited for it left: no
   * caller sees that failure, yet it is the plugin's (a start that never
   * finishes ends at the protocol's own start timeout).
   */
  readonly onUnseenFailure?: (failure: HostError) => void;
  /** The error for a use after `close()`. */
  readonly closedError: () => HostError;
}

/** One start in progress and who waits for it. */
interface StartAttempt<C> {
  readonly result: Promise<Result<C, HostError>>;
  readonly abandon: AbortController;
  /** Uses that may still leave (they joined with a signal). */
  leavers: number;
  /** Whether a use that cannot leave waits for it. */
  kept: boolean;
}

/**
 * The lazy start shared by the long-lived protocol sessions: nothing runs
 * until first use; concurrent uses share one start (single flight); a
 * connection that died is replaced on the next use unless the protocol
 * refuses; after `close()` every use fails and a start still in progress is
 * told to stop. A use may leave a start it joined (its caller's timeout or
 * abort), but the start goes on to its own end, which the protocol bounds:
 * the next use joins it rather than launching another process, and a start
 * that fails with nobody left waiting is still reported
 * ({@link LazyStartSteps.onUnseenFailure}), so that a plugin whose start
 * never finishes is counted as failing however short its callers' deadlines.
 */
export class LazyStart<C> {
  private current: C | undefined;
  private starting: StartAttempt<C> | undefined;
  private closed = false;

  /** @param steps - How to start, check and stop a connection. */
  constructor(private readonly steps: LazyStartSteps<C>) {}

  /** The connection, when one runs and can take calls: the warm path, with no promise hop. */
  get live(): C | undefined {
    const current = this.current;
    return !this.closed && current !== undefined && this.steps.isLive(current) ? current : undefined;
  }

  /** Whether `close()` was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The live connection, starting one (or joining the start in progress) when none runs. */
  get(): Promise<Result<C, HostError>> {
    if (this.closed) return Promise.resolve(err(this.steps.closedError()));
    const live = this.live;
    if (live !== undefined) return Promise.resolve(ok(live));
    const attempt = this.attempt();
    attempt.kept = true;
    return attempt.result;
  }

  /**
   * As {@link LazyStart.get}, but the use leaves when `leave` aborts first:
   * it then gets `undefined`, and the start goes on for later uses (its
   * failure, if nobody waits for it any more, goes to `onUnseenFailure`).
   */
  join(leave: AbortSignal): Promise<Result<C, HostError> | undefined> {
    if (this.closed) return Promise.resolve(err(this.steps.closedError()));
    const live = this.live;
    if (live !== undefined) return Promise.resolve(ok(live));
    if (leave.aborted) return Promise.resolve(undefined);
    const attempt = this.attempt();
    attempt.leavers++;
    return new Promise((resolve) => {
      const onLeave = (): void => {
        resolve(undefined);
        attempt.leavers--;
      };
      leave.addEventListener('abort', onLeave, { once: true });
      void attempt.result.then((result) => {
        leave.removeEventListener('abort', onLeave);
        resolve(result);
      });
    });
  }

  /** Refuses later uses, stops a start in progress, and hands back the connection left running for the caller to end. */
  async close(): Promise<C | undefined> {
    this.closed = true;
    // The start's failure is its caller's to see; closing only waits for it to settle.
    if (this.starting !== undefined) {
      this.starting.abandon.abort();
      void (await this.starting.result);
    }
    const current = this.current;
    this.current = undefined;
    return current;
  }

  private attempt(): StartAttempt<C> {
    if (this.starting !== undefined) return this.starting;
    const abandon = new AbortController();
    const attempt: StartAttempt<C> = {
      result: this.replace(this.current, abandon.signal).then((result) => {
        if (this.starting === attempt) this.starting = undefined;
        if (result.isErr() && attempt.leavers === 0 && !attempt.kept && !this.closed) this.steps.onUnseenFailure?.(result.error);
        return result;
      }),
      abandon,
      leavers: 0,
      kept: false,
    };
    this.starting = attempt;
    return attempt;
  }

  private async replace(dead: C | undefined, abandoned: AbortSignal): Promise<Result<C, HostError>> {
    if (dead !== undefined && this.steps.refuseRestart !== undefined) {
      const refusal = await this.steps.refuseRestart(dead);
      if (refusal !== undefined) return err(refusal);
    }
    if (this.current === dead) this.current = undefined;
    const started = await this.steps.start(abandoned);
    // A start cut short by close() fails because of the close, whatever it ran into.
    if (this.closed) {
      if (started.isOk()) await this.steps.discard(started.value);
      return err(this.steps.closedError());
    }
    if (started.isErr()) return started;
    this.current = started.value;
    return started;
  }
}
