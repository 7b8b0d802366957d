import { err, ok, type Result } from 'neverthrow';
import ndjsonSettings from '../../../etc/ndjson-rpc.json' with { type: 'json' };
import { EventBudget } from '../../budget/EventBudget.js';
import { hostError, type HostError } from '../../errors/HostError.js';
import { spellingOf, type HostErrorCode } from '../../errors/registry.js';
import { LineChannel } from '../../framing/LineChannel.js';
import type { Clock, Logger } from '../../ports/ports.js';
import { crashOrLimit } from '../../process/exitInfo.js';
import type { ExitInfo, PluginProcess } from '../../process/PluginProcess.js';
import type { ToolResult } from '../PluginSession.js';
import { crashDetails, rawLineDetails } from './processDiagnostics.js';
import { parseResponseLine, type NdjsonRequest, type NdjsonRequestId } from './wire.js';

/** A request sent on a connection, waiting for its answer. */
export interface PendingRequest {
  /** The method called, for the errors that fail the request. */
  readonly method: string;
  /** Receives the outcome of the request exactly once; the connection has forgotten the request by then. */
  deliver(outcome: Result<ToolResult, HostError>): void;
}

/** What a connection needs from its session. */
export interface ConnectionEnvironment {
  /** The cap on one response line, in bytes. */
  readonly maxFrameBytes: number;
  /** Timers. */
  readonly clock: Clock;
  /** Where lines that fail no request, late answers and crashes are logged. */
  readonly logger: Logger;
}

/**
 * How long after the process exited the host still waits for stdout to end
 * before it declares the crash anyway (stdout can outlive the process when a
 * grandchild holds it open).
 */
const STDOUT_AFTER_EXIT_GRACE_MS = 500;

/** A host error with the mcptest spelling of its code in `details.protocol_code`. */
export function ndjsonError(code: HostErrorCode, message: string, details: Record<string, unknown>, cause?: unknown): HostError {
  const jsonrpc = spellingOf(code, 'jsonrpc');
  return hostError(code, message, {
    details: {
      protocol_code: spellingOf(code, 'ndjson') ?? null,
      ...(jsonrpc === undefined ? {} : { jsonrpc_code: jsonrpc }),
      ...details,
    },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Late-answer ids remembered per process at most (a plugin that never answers them must not grow the set without end). */
const MAX_ABANDONED_IDS = 1024;

/**
 * One running ndjson-rpc plugin process: writes requests, matches response
 * lines to pending requests by id, and turns the end of stdout into one crash
 * that fails every pending request.
 */
export class NdjsonConnection {
  private readonly pending = new Map<NdjsonRequestId, PendingRequest>();
  /** Takes a request's line back out of the write queue, for requests sent while it was backed up. */
  private readonly withdrawals = new Map<NdjsonRequestId, AbortController>();
  /** Ids whose caller gave up (timeout, cancel): a late answer is dropped, not misdelivered. */
  private readonly abandoned = new Set<NdjsonRequestId>();
  private readonly channel: LineChannel;
  /**
   * Warnings about lines no request owns, by code: the plugin writes those
   * for free, so past a burst they are counted into one summary warning.
   */
  private readonly warnings: EventBudget<HostErrorCode>;
  private resolveCrash!: (error: HostError) => void;
  /** Resolves with the crash error once the plugin stopped talking (never, if the host stops it first). */
  readonly crashed: Promise<HostError> = new Promise((resolve) => (this.resolveCrash = resolve));

  constructor(
    readonly process: PluginProcess,
    private readonly env: ConnectionEnvironment,
  ) {
    this.warnings = new EventBudget({ perSecond: ndjsonSettings.unattributedWarningsPerSecond, burst: ndjsonSettings.unattributedWarningsBurst }, env.clock);
    this.channel = new LineChannel(
      process,
      {
        onLine: (line) => this.onLine(line),
        onOversize: (violation) => this.failUnattributed(violation.code, violation.message, violation.details),
        onEnd: ({ byPeer, partial }) => {
          if (byPeer) void this.crash(partial);
        },
        onWriteError: (error) => env.logger.debug({ pid: process.pid, error: error.message }, 'ndjson-rpc: write to plugin stdin failed'),
      },
      { maxFrameBytes: env.maxFrameBytes, clock: env.clock, stdoutGraceAfterExitMs: STDOUT_AFTER_EXIT_GRACE_MS },
    );
  }

  /** Whether requests can still be sent. */
  get alive(): boolean {
    return !this.channel.isEnded;
  }

  /** Bytes the host holds for the plugin's stdin (see `LineChannel.queuedBytes`). */
  get queuedBytes(): number {
    return this.channel.queuedBytes;
  }

  /**
   * Writes one request line, or queues it while the plugin's stdin is full;
   * `waiting` receives its response or a host error.
   */
  send(request: NdjsonRequest, waiting: PendingRequest): void {
    this.pending.set(request.id, waiting);
    let withdraw: AbortController | undefined;
    if (this.channel.isBackedUp) {
      withdraw = new AbortController();
      this.withdrawals.set(request.id, withdraw);
    }
    void this.channel.send(JSON.stringify(request), withdraw?.signal);
  }

  /** Stops waiting for `id`: a line still queued is dropped, an answer that comes anyway is dropped too. */
  forget(id: NdjsonRequestId): void {
    if (!this.pending.delete(id)) return;
    this.withdrawn(id)?.abort();
    this.abandon(id);
  }

  /** Forgets the withdrawal of `id`'s line, returning it. */
  private withdrawn(id: NdjsonRequestId): AbortController | undefined {
    if (this.withdrawals.size === 0) return undefined;
    const withdraw = this.withdrawals.get(id);
    this.withdrawals.delete(id);
    return withdraw;
  }

  /** Remembers `id` as answered already, so a late answer to it is dropped; the oldest are forgotten past the bound. */
  private abandon(id: NdjsonRequestId): void {
    this.abandoned.add(id);
    if (this.abandoned.size > MAX_ABANDONED_IDS) this.abandoned.delete(this.abandoned.values().next().value as NdjsonRequestId);
  }

  /** Graceful shutdown: close stdin, wait `graceMs` for the exit, then kill; then logs the count of warnings still waiting for their budget. */
  stop(graceMs: number): Promise<ExitInfo> {
    this.channel.close();
    return this.process.stop({ stdinGraceMs: graceMs }).finally(() => this.warnings.flush());
  }

  private oldestPending(): [NdjsonRequestId, PendingRequest] | undefined {
    return this.pending.entries().next().value;
  }

  private take(id: NdjsonRequestId): PendingRequest | undefined {
    const found = this.pending.get(id);
    if (found === undefined) return undefined;
    this.pending.delete(id);
    this.withdrawn(id);
    return found;
  }

  /** Fails the oldest pending request, the one the plugin most likely owed; logs when none waits. */
  private failUnattributed(code: HostErrorCode, message: string, details: Record<string, unknown>): void {
    const oldest = this.oldestPending();
    if (oldest === undefined) {
      const pid = this.process.pid;
      const summary = (suppressed: number): void =>
        this.env.logger.warn({ pid, code, suppressed }, `ndjson-rpc: ${suppressed} more lines (${code}) while no request was pending; ignored, not logged one by one`);
      if (this.warnings.admit(code, summary)) this.env.logger.warn({ pid, code, ...details }, `ndjson-rpc: ${message} while no request was pending; ignored`);
      return;
    }
    const [id, pending] = oldest;
    this.take(id);
    // Its own answer may still come (the bad line was plugin output before it): that answer must not fail the next call.
    this.abandon(id);
    pending.deliver(err(ndjsonError(code, message, { method: pending.method, request_id: id, ...details })));
  }

  private onLine(line: string): void {
    const parsed = parseResponseLine(line);
    if (parsed.kind === 'invalid-json') {
      this.failUnattributed('PLUGIN_INVALID_JSON', `plugin wrote a line that is not JSON: ${parsed.reason}`, rawLineDetails(line));
      return;
    }
    const id = parsed.kind === 'response' ? parsed.response.id : parsed.id;
    if (id !== undefined && this.abandoned.size > 0 && this.abandoned.delete(id)) {
      this.env.logger.debug({ pid: this.process.pid, request_id: id }, 'ndjson-rpc: dropped a late answer to an abandoned request');
      return;
    }
    const pending = id === undefined ? undefined : this.take(id);
    if (pending === undefined) {
      const reason = parsed.kind === 'response' ? `response id ${JSON.stringify(id)} matches no pending request` : parsed.reason;
      this.failUnattributed('PLUGIN_MALFORMED_RESPONSE', `plugin sent an invalid response: ${reason}`, { reason, ...rawLineDetails(line) });
      return;
    }
    if (parsed.kind === 'invalid-response') {
      pending.deliver(
        err(ndjsonError('PLUGIN_MALFORMED_RESPONSE', `plugin sent an invalid response: ${parsed.reason}`, { method: pending.method, request_id: id, reason: parsed.reason, ...rawLineDetails(line) })),
      );
      return;
    }
    const response = parsed.response;
    pending.deliver(ok('error' in response ? { isError: true, value: response.error } : { isError: false, value: response.result }));
  }

  private async crash(partial: string | undefined): Promise<void> {
    // Every line was read by now: the count still waiting for a token goes out before the crash it preceded.
    this.warnings.flush();
    const details: Record<string, unknown> = {
      ...(await crashDetails(this.process, this.env.clock)),
      ...(partial === undefined ? {} : { partial_line: rawLineDetails(partial).raw_line }),
    };
    const message = `plugin stopped before answering (${this.process.exitInfo?.description ?? 'stdout closed'})`;
    const crash = crashOrLimit(ndjsonError('PLUGIN_CRASHED', message, details), this.process);
    this.env.logger.warn({ pid: this.process.pid, ...details }, 'ndjson-rpc: plugin crashed');
    for (const [id, pending] of this.pending) {
      pending.deliver(err(crashOrLimit(ndjsonError('PLUGIN_CRASHED', message, { method: pending.method, request_id: id, ...details }), this.process)));
    }
    this.pending.clear();
    this.withdrawals.clear();
    this.resolveCrash(crash);
    // Reap: stdout may have closed while the process lives on.
    void this.process.stop({ stdinGraceMs: 0 });
  }
}
