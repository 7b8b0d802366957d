/** Who ended a `tools/call` early, when the session did. */
export type AbortedBy = 'caller' | 'total-timeout';

type AbortListener = () => void;

/**
 * The cancellation handle of one `tools/call`, handed to the SDK as its
 * request `signal`.
 *
 * A Node `AbortController` is an `EventTarget`: building one and the
 * listener the SDK registers on it cost about 5 µs per call, measured, which
 * is most of what the session adds to a warm call. The SDK's request reads
 * only `aborted`, `reason`, `throwIfAborted()` and one
 * `addEventListener('abort')`, so this plain object offers exactly those. It
 * also records who aborted first, which decides the error the call fails with.
 */
export class CallAbort {
  /** Whether the call was aborted. */
  aborted = false;
  /** Why, as given to {@link CallAbort.abort}. */
  reason: unknown = undefined;
  /** Who aborted first. */
  by: AbortedBy | undefined = undefined;
  private listeners: AbortListener[] | undefined;

  /** Aborts the call once; later aborts keep the first reason and author. */
  abort(by: AbortedBy, reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.by = by;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }

  /**
   * Aborts (as `caller`) when `signal` does, until the returned function is
   * called. The caller's signal may be long-lived, so it is never handed to
   * the SDK, which does not remove the listener it adds.
   */
  follow(signal: AbortSignal): () => void {
    const onAbort = (): void => this.abort('caller', signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    return () => signal.removeEventListener('abort', onAbort);
  }

  /** Throws the reason once aborted, as `AbortSignal.throwIfAborted` does. */
  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Registers an `abort` listener, called at most once. */
  addEventListener(type: string, listener: AbortListener): void {
    if (type !== 'abort' || this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  /** Removes an `abort` listener. */
  removeEventListener(type: string, listener: AbortListener): void {
    if (type !== 'abort' || this.listeners === undefined) return;
    this.listeners = this.listeners.filter((l) => l !== listener);
  }

  /** This handle as the `signal` of an SDK request, which reads only the members above. */
  asSignal(): AbortSignal {
    return this as unknown as AbortSignal;
  }
}
