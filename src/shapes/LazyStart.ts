import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';

/** What a {@link LazyStart} starts, checks and stops. */
export interface LazyStartSteps<C> {
  /** Launches the process and opens a connection on it. */
  readonly start: () => Promise<Result<C, HostError>>;
  /** Whether a started connection can still take calls. */
  readonly isLive: (connection: C) => boolean;
  /**
   * Asked before replacing a connection that died: an error refuses the
   * restart (the protocol's crash is sticky), `undefined` allows it.
   */
  readonly refuseRestart?: (dead: C) => Promise<HostError | undefined>;
  /** Stops a connection that finished starting after `close()`. */
  readonly discard: (connection: C) => Promise<void>;
  /** The error for a use after `close()`. */
  readonly closedError: () => HostError;
}

/**
 * The lazy start shared by the long-lived protocol sessions: nothing runs
 * until first use; concurrent uses share one start (single flight); a
 * connection that died is replaced on the next use unless the protocol
 * refuses; after `close()` every use fails and a start still in progress is
 * discarded when it completes.
 */
export class LazyStart<C> {
  private current: C | undefined;
  private starting: Promise<Result<C, HostError>> | undefined;
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
    this.starting ??= this.replace(this.current).finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** Refuses later uses, waits for a start in progress, and hands back the connection left running for the caller to end. */
  async close(): Promise<C | undefined> {
    this.closed = true;
    // The start's failure is its caller's to see; closing only waits for it to settle.
    if (this.starting !== undefined) void (await this.starting);
    const current = this.current;
    this.current = undefined;
    return current;
  }

  private async replace(dead: C | undefined): Promise<Result<C, HostError>> {
    if (dead !== undefined && this.steps.refuseRestart !== undefined) {
      const refusal = await this.steps.refuseRestart(dead);
      if (refusal !== undefined) return err(refusal);
    }
    this.current = undefined;
    const started = await this.steps.start();
    if (started.isErr()) return started;
    if (this.closed) {
      await this.steps.discard(started.value);
      return err(this.steps.closedError());
    }
    this.current = started.value;
    return started;
  }
}
