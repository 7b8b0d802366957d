import { err, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import type { CallDeadline, CallDeadlines } from '../../framing/CallDeadlines.js';
import type { ReleaseSlot } from '../InFlightLimiter.js';
import type { ToolResult } from '../PluginSession.js';
import { ndjsonError, type NdjsonConnection, type PendingRequest } from './NdjsonConnection.js';
import type { NdjsonRequestId } from './wire.js';

/** Where a call stands when something other than its answer ends it: reported in timeout and cancel errors. */
export type CallPhase = 'queued' | 'spawning' | 'awaiting_response';

/** The session's bookkeeping a call leaves when it ends. */
export interface CallRegistry {
  /** Calls not yet settled, failed together when the session closes. */
  readonly open: Set<NdjsonCall>;
  /** The session's one deadline timer. */
  readonly deadlines: CallDeadlines;
}

/**
 * One call of an ndjson-rpc session, settled exactly once by whichever comes
 * first: its answer, the timeout, the caller's abort, a crash, or the session
 * closing. It is its own deadline and its own pending entry on the
 * connection, and it holds what it must give back (the in-flight slot, the
 * request id, the abort listener) in fields rather than in clean-up closures:
 * a warm call so allocates this object, its promise and the request, and
 * nothing per step.
 */
export class NdjsonCall implements CallDeadline, PendingRequest {
  /** {@inheritDoc CallDeadline.at} */
  at: number;
  /** Where the call stands. */
  phase: CallPhase = 'queued';
  /** The outcome, once settled. */
  readonly outcome: Promise<Result<ToolResult, HostError>>;
  private resolve!: (outcome: Result<ToolResult, HostError>) => void;
  private settled = false;
  private slot: ReleaseSlot | undefined;
  private sentOn: NdjsonConnection | undefined;
  private id: NdjsonRequestId = 0;
  private abortSignal: AbortSignal | undefined;
  private onAbort: (() => void) | undefined;
  private ending: AbortController | undefined;

  /**
   * Registers the call and watches its deadline.
   * @param method - The method called.
   * @param timeoutMs - How long the whole call may take.
   * @param registry - The session's open calls and deadlines.
   * @param now - The registry clock's time now.
   */
  constructor(
    readonly method: string,
    readonly timeoutMs: number,
    private readonly registry: CallRegistry,
    now: number,
  ) {
    this.outcome = new Promise((resolve) => (this.resolve = resolve));
    this.at = now + timeoutMs;
    registry.open.add(this);
    registry.deadlines.watch(this);
  }

  /** Whether an outcome is already decided. */
  get isSettled(): boolean {
    return this.settled;
  }

  /** Fails the call with PLUGIN_CANCELLED when `signal` aborts first. */
  cancelOn(signal: AbortSignal): void {
    this.abortSignal = signal;
    this.onAbort = () => this.settle(err(cancelledError(this.method, this.phase)));
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /**
   * Aborts when the call is settled, however it ends: a call waiting for a
   * slot leaves the limiter's queue then, instead of keeping its place until
   * its turn and handing the slot straight on. Made only for calls that wait.
   */
  get endSignal(): AbortSignal {
    this.ending ??= new AbortController();
    if (this.settled) this.ending.abort();
    return this.ending.signal;
  }

  /** Holds an in-flight slot until the call ends (given back at once if it already has). */
  holdSlot(release: ReleaseSlot): void {
    if (this.settled) release();
    else this.slot = release;
  }

  /** Sends the request on `connection`; the call now awaits its answer. */
  sendOn(connection: NdjsonConnection, id: NdjsonRequestId, params: unknown): void {
    this.phase = 'awaiting_response';
    this.sentOn = connection;
    this.id = id;
    connection.send(params === undefined ? { method: this.method, id } : { method: this.method, params, id }, this);
  }

  /** {@inheritDoc CallDeadline.expire} */
  expire(): void {
    const details = { method: this.method, timeout_ms: this.timeoutMs, phase: this.phase };
    this.settle(err(ndjsonError('PLUGIN_TIMEOUT', `plugin did not answer ${this.method} within ${this.timeoutMs} ms`, details)));
  }

  /** {@inheritDoc PendingRequest.deliver} */
  deliver(outcome: Result<ToolResult, HostError>): void {
    // The connection let go of the request before delivering.
    this.sentOn = undefined;
    this.settle(outcome);
  }

  /** Decides the outcome and gives back what the call held; later calls are ignored. */
  settle(outcome: Result<ToolResult, HostError>): void {
    if (this.settled) return;
    this.settled = true;
    this.registry.open.delete(this);
    this.registry.deadlines.unwatch(this);
    this.sentOn?.forget(this.id);
    this.sentOn = undefined;
    this.abortSignal?.removeEventListener('abort', this.onAbort!);
    this.ending?.abort();
    const slot = this.slot;
    this.slot = undefined;
    slot?.();
    this.resolve(outcome);
  }
}

/** The error of a call whose caller aborted it while it was in `phase`. */
export function cancelledError(method: string, phase: CallPhase): HostError {
  return hostError('PLUGIN_CANCELLED', `call to ${method} was cancelled`, { details: { method, phase } });
}
