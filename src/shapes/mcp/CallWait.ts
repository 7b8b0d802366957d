import { hostError, type HostError } from '../../errors/HostError.js';
import type { Clock } from '../../ports/ports.js';
import type { CallOptions } from '../PluginSession.js';

/** What a call waits for before its request can be sent. */
export type CallWaitStage = 'a free slot' | 'the plugin to start';

type EndedBy = 'caller' | 'timeout' | 'total-timeout';

/**
 * The budget of one `tools/call` while it waits, before its request is sent,
 * for a slot under the in-flight limit or for the plugin's process to start.
 * The call's timeout, total cap and signal count from the moment of the
 * call: `signal` aborts when the first of them runs out, and what is left
 * of them goes to the request once it can be sent.
 */
export class CallWait {
  private readonly controller = new AbortController();
  private readonly started: number;
  private endedBy: EndedBy | undefined;
  private cancelTimer: (() => void) | undefined;
  private unfollowCaller: (() => void) | undefined;

  /**
   * @param tool - The tool being called, for the error texts.
   * @param options - The call's options, its timeout and total cap resolved.
   * @param clock - Runs the deadline.
   */
  constructor(
    readonly tool: string,
    private readonly options: CallOptions & { readonly timeoutMs: number; readonly maxTotalTimeoutMs: number },
    private readonly clock: Clock,
  ) {
    this.started = clock.now();
    const total = options.maxTotalTimeoutMs < options.timeoutMs;
    this.cancelTimer = clock.setTimer(() => this.end(total ? 'total-timeout' : 'timeout'), Math.min(options.timeoutMs, options.maxTotalTimeoutMs));
    const caller = options.signal;
    if (caller !== undefined) {
      const onAbort = (): void => this.end('caller');
      caller.addEventListener('abort', onAbort, { once: true });
      this.unfollowCaller = () => caller.removeEventListener('abort', onAbort);
      if (caller.aborted) onAbort();
    }
  }

  /** The call's own timeout and total cap, as the caller (or the session's defaults) set them. */
  get budget(): { readonly timeoutMs: number; readonly maxTotalTimeoutMs: number } {
    return { timeoutMs: this.options.timeoutMs, maxTotalTimeoutMs: this.options.maxTotalTimeoutMs };
  }

  /** Aborts when the caller aborts or the call's time runs out, whichever comes first. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The options for the request once it can be sent: what is left of the budget, or `undefined` when nothing is. */
  remaining(): CallOptions | undefined {
    if (this.endedBy !== undefined) return undefined;
    const elapsed = this.clock.now() - this.started;
    const timeoutMs = this.options.timeoutMs - elapsed;
    const maxTotalTimeoutMs = this.options.maxTotalTimeoutMs - elapsed;
    if (timeoutMs <= 0 || maxTotalTimeoutMs <= 0) return undefined;
    return { ...this.options, timeoutMs, maxTotalTimeoutMs };
  }

  /** The call's failure once its wait ended early: PLUGIN_CANCELLED or PLUGIN_TIMEOUT, naming what it waited for. */
  failure(stage: CallWaitStage): HostError {
    const details = { phase: 'tools/call', tool: this.tool, waiting_for: stage };
    if (this.endedBy === 'caller') {
      return hostError('PLUGIN_CANCELLED', `tools/call of "${this.tool}" was cancelled by its caller while waiting for ${stage}`, { details });
    }
    if (this.endedBy === 'total-timeout') {
      const max = this.options.maxTotalTimeoutMs;
      return hostError('PLUGIN_TIMEOUT', `tools/call of "${this.tool}" reached its total cap of ${max} ms while waiting for ${stage}`, { details: { ...details, max_total_timeout_ms: max } });
    }
    const ms = this.options.timeoutMs;
    return hostError('PLUGIN_TIMEOUT', `tools/call of "${this.tool}" got no answer within ${ms} ms: it was still waiting for ${stage}`, { details: { ...details, timeout_ms: ms } });
  }

  /** Stops the deadline and stops following the caller's signal; safe to call more than once. */
  dispose(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.unfollowCaller?.();
    this.unfollowCaller = undefined;
  }

  private end(by: EndedBy): void {
    if (this.endedBy !== undefined) return;
    this.endedBy = by;
    this.dispose();
    this.controller.abort();
  }
}
