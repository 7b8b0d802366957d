import { ErrorCode, McpError, type JSONRPCMessage, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { CallDeadlines, type CallDeadline } from '../../framing/CallDeadlines.js';
import type { Clock } from '../../ports/ports.js';

/** Who ended a `tools/call` early, when the session did: its caller, its total cap, or its timeout without an answer or progress. */
export type AbortedBy = 'caller' | 'total-timeout' | 'timeout';

/**
 * Ids of the host's own `tools/call` requests start here. The SDK `Client`
 * of the same connection numbers its requests from 0, one per request it
 * sends (initialize, lists, the rare surface requests), so the two ranges
 * never meet; numbers rather than strings, since some plugins expect them.
 */
const FIRST_DIRECT_CALL_ID = 1_000_000_000;

/** One `tools/call` as {@link DirectToolCalls.call} sends it. */
export interface DirectCallRequest {
  readonly name: string;
  readonly args: Record<string, unknown> | undefined;
  /** Time without an answer or progress. */
  readonly timeoutMs: number;
  /** Cap on the whole call, progress or not. */
  readonly maxTotalTimeoutMs: number;
  /** The cap as the caller set it, for the error text (`maxTotalTimeoutMs` is what was left of it when the call was sent). */
  readonly statedMaxTotalTimeoutMs: number;
  readonly signal: AbortSignal | undefined;
  readonly onProgress: ((progress: Progress) => void) | undefined;
}

/**
 * How a direct call ended: the plugin's raw `result` (not yet checked) with
 * the clock time its timeout or total cap would have ended it (`until`;
 * `capped`: the cap came first), or the error the SDK `Client` would have
 * rejected the same request with, and who aborted it when the host or its
 * caller did.
 */
export type DirectCallOutcome =
  | { readonly answered: true; readonly result: unknown; readonly until: number; readonly capped: boolean }
  | { readonly answered: false; readonly error: unknown; readonly abortedBy?: AbortedBy };

/** A JSON-RPC answer to one of the direct calls, its envelope already checked. */
export type DirectAnswer = { readonly id: number; readonly result: unknown } | { readonly id: number; readonly error: { readonly code: number; readonly message: string; readonly data?: unknown } };

/** A call in flight: a class, so that a call makes no closure for its deadline (its connection's `expired` serves every call). */
class PendingCall implements CallDeadline {
  at: number;
  idleDeadline: number;
  readonly totalDeadline: number;
  readonly timeoutMs: number;
  readonly statedMaxTotalTimeoutMs: number;
  readonly onProgress: ((progress: Progress) => void) | undefined;
  /** The caller's signal and what this call listens to it with, until the call ends. */
  signal: AbortSignal | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;

  constructor(
    readonly id: number,
    readonly settle: (outcome: DirectCallOutcome) => void,
    request: DirectCallRequest,
    now: number,
    private readonly expired: (call: PendingCall) => void,
  ) {
    this.timeoutMs = request.timeoutMs;
    this.statedMaxTotalTimeoutMs = request.statedMaxTotalTimeoutMs;
    this.onProgress = request.onProgress;
    this.idleDeadline = now + request.timeoutMs;
    this.totalDeadline = now + request.maxTotalTimeoutMs;
    this.at = Math.min(this.idleDeadline, this.totalDeadline);
  }

  expire(): void {
    this.expired(this);
  }
}

/**
 * The host's own `tools/call` requests on a connection whose SDK `Client`
 * keeps every other request: the warm path of a call.
 *
 * The SDK's request machinery costs a warm call more than the pipe does: a
 * progress handler, an abort listener and a resettable timer per request,
 * and a schema parse of every message on the way in (the transport's, then
 * the SDK's own, then the result's). Here a call is an entry in one id map;
 * one timer serves every call in flight (armed for the earliest deadline,
 * re-armed when it fires; a call that ends leaves it alone); the transport
 * hands over answers to these ids after one `JSON.parse`. What a call does
 * is the SDK's: a `progressToken` on each request (a plugin that reports
 * progress keeps its call alive), `notifications/cancelled` on abort and on
 * either timeout, the total cap whether or not progress arrives, and the
 * same errors (`McpError` with the SDK's codes and texts) for the failure
 * mapping.
 */
export class DirectToolCalls {
  readonly #pending = new Map<number, PendingCall>();
  readonly #deadlines: CallDeadlines;
  #nextId = FIRST_DIRECT_CALL_ID;
  #closedWith: unknown;
  // A tie is the cap's: it is the firmer promise.
  readonly #expired = (call: PendingCall): void => this.#timeOut(call, call.totalDeadline <= call.idleDeadline);

  /**
   * @param send - Writes one message to the plugin (the transport's `send`).
   * @param clock - Runs the one deadline timer.
   * @param onError - Told a cancellation that could not be sent.
   */
  constructor(
    private readonly send: (message: JSONRPCMessage) => Promise<void>,
    private readonly clock: Clock,
    private readonly onError: (error: Error) => void,
  ) {
    this.#deadlines = new CallDeadlines(clock);
  }

  /** Calls in flight now. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /**
   * The call in flight here that `id` (an answer's id or a progress token)
   * names, if any: its answer and progress are this object's to handle. A
   * decimal string names the call of that number, as it did for the SDK,
   * which reads ids with `Number()`.
   */
  callOf(id: unknown): number | undefined {
    const key = typeof id === 'string' && id.trim() !== '' ? Number(id) : id;
    return typeof key === 'number' && this.#pending.has(key) ? key : undefined;
  }

  /** Sends one `tools/call` and resolves (never rejects) with how it ended. */
  call(request: DirectCallRequest): Promise<DirectCallOutcome> {
    if (this.#closedWith !== undefined) return Promise.resolve({ answered: false, error: this.#closedWith });
    const signal = request.signal;
    // Never sent, so the plugin is told nothing.
    if (signal?.aborted === true) return Promise.resolve({ answered: false, error: signal.reason, abortedBy: 'caller' });
    const id = this.#nextId++;
    return new Promise((settle) => {
      const call = new PendingCall(id, settle, request, this.clock.now(), this.#expired);
      this.#pending.set(id, call);
      this.#deadlines.watch(call);
      if (signal !== undefined) {
        // No { once: true }: the call's end removes the listener (the abort ends it), and an options object costs
        // Node's addEventListener a validation on every call; no second closure to remove it either.
        const onAbort = (): void => this.#cancel(call, signal.reason, 'caller');
        signal.addEventListener('abort', onAbort);
        call.signal = signal;
        call.onAbort = onAbort;
      }
      const params = request.args === undefined ? { name: request.name, _meta: { progressToken: id } } : { name: request.name, arguments: request.args, _meta: { progressToken: id } };
      // A value JSON.stringify cannot write (a BigInt, a cycle) throws before any promise exists: the call still ends.
      let sent: Promise<void>;
      try {
        sent = this.send({ jsonrpc: '2.0', id, method: 'tools/call', params });
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent.catch((error: unknown) => this.#end(call, { answered: false, error }));
    });
  }

  /** The plugin answered a call of {@link callOf}. */
  answer(message: DirectAnswer): void {
    const call = this.#pending.get(message.id);
    if (call === undefined) return;
    if ('error' in message) {
      const { code, message: text, data } = message.error;
      this.#end(call, { answered: false, error: McpError.fromError(code, text, data) });
    } else {
      this.#end(call, { answered: true, result: message.result, until: call.at, capped: call.totalDeadline <= call.idleDeadline });
    }
  }

  /** The plugin reported progress on a call of {@link callOf}: its idle deadline starts over, within the total cap. */
  progress(token: number, progress: Progress): void {
    const call = this.#pending.get(token);
    if (call === undefined) return;
    const now = this.clock.now();
    if (now >= call.totalDeadline) {
      // Progress past the cap before its deadline fired: the call ends as its deadline would have ended it.
      this.#timeOut(call, true);
      return;
    }
    call.idleDeadline = now + call.timeoutMs;
    call.at = Math.min(call.idleDeadline, call.totalDeadline);
    if (call.onProgress !== undefined) call.onProgress(progress);
  }

  /** The connection ended: every call in flight fails with `error`, and later calls at once. */
  close(error: unknown = new McpError(ErrorCode.ConnectionClosed, 'Connection closed')): void {
    this.#closedWith ??= error;
    this.#deadlines.clear();
    for (const call of [...this.#pending.values()]) this.#end(call, { answered: false, error });
  }

  #end(call: PendingCall, outcome: DirectCallOutcome): void {
    if (this.#pending.get(call.id) !== call) return;
    this.#pending.delete(call.id);
    this.#deadlines.unwatch(call);
    if (call.onAbort !== undefined) call.signal?.removeEventListener('abort', call.onAbort);
    call.settle(outcome);
  }

  /** Ends the call and tells the plugin, as the SDK's request does on abort and timeout. */
  #cancel(call: PendingCall, reason: unknown, abortedBy: AbortedBy): void {
    if (this.#pending.get(call.id) !== call) return;
    this.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: call.id, reason: String(reason) } }).catch((error: unknown) =>
      this.onError(new Error(`Failed to send cancellation: ${String(error)}`)),
    );
    const error = reason instanceof McpError ? reason : new McpError(ErrorCode.RequestTimeout, String(reason));
    this.#end(call, { answered: false, error, abortedBy });
  }

  #timeOut(call: PendingCall, total: boolean): void {
    if (total) {
      this.#cancel(call, new Error(`total cap of ${call.statedMaxTotalTimeoutMs} ms reached`), 'total-timeout');
    } else {
      this.#cancel(call, McpError.fromError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: call.timeoutMs }), 'timeout');
    }
  }
}
