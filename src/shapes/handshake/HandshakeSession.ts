import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { HostError, hostError, withDetails } from '../../errors/HostError.js';
import { sessionClosedError } from '../../framing/LineChannel.js';
import { DEFAULT_MAX_FRAME_BYTES } from '../../framing/LineReader.js';
import { silentLogger, systemClock, systemRandom, type Clock, type Logger, type Random } from '../../ports/ports.js';
import { crashOrLimit, exitWithin } from '../../process/exitInfo.js';
import type { PluginProcess } from '../../process/PluginProcess.js';
import { crashDetails, exitDetails, rawLineDetails } from '../ndjson-rpc/processDiagnostics.js';
import type { CallOptions, PluginSession, ProcessLauncher, ToolDescriptor, ToolResult } from '../PluginSession.js';
import {
  checkExecuteResponse,
  checkHandshakeResponse,
  handshakeFailure,
  nameListProblem,
  nameProblem,
  type HandshakeExpectations,
  type HandshakePhase,
} from './handshakeChecks.js';
import { PullChannel, type ChannelEvent } from './PullChannel.js';
import { HANDSHAKE_PROTOCOL_VERSION, type HandshakeManifest, type PluginHandshakeRequest, type PluginRequest } from './wire.js';

/** The host-owned deadlines of one launch, in ms. */
export interface HandshakeTimeouts {
  /** From asking the launcher for a process to having one. */
  readonly launchMs: number;
  /** From writing the handshake request to a complete response line. */
  readonly handshakeMs: number;
  /** From writing the execute request to a complete response line (a call's `timeoutMs` overrides it). */
  readonly invokeMs: number;
  /** From closing stdin after the response to the process having exited. */
  readonly teardownMs: number;
}

/** The runtime defaults, used where a plugin spec sets no timeout of its own. */
export const DEFAULT_HANDSHAKE_TIMEOUTS: HandshakeTimeouts = Object.freeze({
  launchMs: 10_000,
  handshakeMs: 5_000,
  invokeMs: 30_000,
  teardownMs: 2_000,
});

/** The host's plugin spec for one handshake plugin binding. */
export interface HandshakeSessionOptions {
  /** Starts the plugin process (verified, sandboxed); called once per invocation. */
  readonly launch: ProcessLauncher;
  /** The protocol version to request. Default {@link HANDSHAKE_PROTOCOL_VERSION}. */
  readonly protocolVersion?: string;
  /** The plugin id this binding is for; a handshake naming another id fails. */
  readonly pluginId?: string;
  /**
   * The host-owned capability allow-list. When non-empty, the manifest must
   * declare capabilities; every declared one must be in this list.
   */
  readonly allowedCapabilities?: readonly string[];
  /** Capabilities the plugin is known to request (e.g. from its installed manifest); each must be declared. Must be allowed. */
  readonly expectedCapabilities?: readonly string[];
  /** Per-plugin timeouts; unset ones fall back to {@link DEFAULT_HANDSHAKE_TIMEOUTS}. */
  readonly timeouts?: Partial<HandshakeTimeouts>;
  /** The cap on a launch whose call sets no `maxTotalTimeoutMs` of its own (tool listing included), in ms. Default none. */
  readonly maxTotalTimeoutMs?: number;
  /** The cap on one protocol line, in bytes. Default 1 MiB. */
  readonly maxFrameBytes?: number;
  /** Timers. */
  readonly clock?: Clock;
  /** Request ids. */
  readonly random?: Random;
  /** Where failed launches are logged (debug). */
  readonly logger?: Logger;
}

/** What one launch established. */
interface LaunchOutcome {
  readonly manifest: HandshakeManifest;
  readonly result?: ToolResult;
}

/** Fires once with the reason an invocation must stop (abort, total deadline, session closed). */
class Interrupt {
  private fire!: (error: HostError) => void;
  readonly fired: Promise<HostError> = new Promise((resolve) => (this.fire = resolve));
  private done = false;
  trigger(error: HostError): void {
    if (this.done) return;
    this.done = true;
    this.fire(error);
  }
}

const TIMEOUT_KEYS = ['launchMs', 'handshakeMs', 'invokeMs', 'teardownMs'] as const;

/**
 * A session over the one-shot handshake protocol: every call launches the
 * plugin, exchanges one handshake and one execute request, and tears the
 * process down. Any deviation (a timeout, an exit before a valid response, a
 * malformed or extra line, a failed contract check) is a `HostError` whose
 * `details.failure_class` is one of the seed's nine classes; nothing falls
 * back to success.
 */
export class HandshakeSession implements PluginSession {
  /** {@inheritDoc PluginSession.shape} */
  readonly shape = 'handshake' as const;
  private readonly timeouts: HandshakeTimeouts;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly logger: Logger;
  private readonly active = new Set<Interrupt>();
  private readonly running = new Set<Promise<unknown>>();
  private closed = false;

  private constructor(private readonly options: HandshakeSessionOptions) {
    this.timeouts = { ...DEFAULT_HANDSHAKE_TIMEOUTS, ...options.timeouts };
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? systemRandom;
    this.logger = options.logger ?? silentLogger;
  }

  /** Checks the plugin spec (allow-list hygiene, timeouts) and builds a session; nothing is launched. */
  static create(options: HandshakeSessionOptions): Result<HandshakeSession, HostError> {
    const allowed = options.allowedCapabilities ?? [];
    const expected = options.expectedCapabilities ?? [];
    const problems = [
      options.protocolVersion === undefined ? undefined : nameProblem(options.protocolVersion, 'protocolVersion'),
      options.pluginId === undefined ? undefined : nameProblem(options.pluginId, 'pluginId'),
      nameListProblem(allowed, 'allowedCapabilities', false),
      nameListProblem(expected, 'expectedCapabilities', false),
      ...expected.filter((c) => !allowed.includes(c)).map((c) => `expectedCapabilities lists ${JSON.stringify(c)}, which is not allowed`),
      ...TIMEOUT_KEYS.map((key) => {
        const value = options.timeouts?.[key];
        return value === undefined || (Number.isSafeInteger(value) && value > 0) ? undefined : `timeouts.${key} must be a positive integer`;
      }),
      options.maxFrameBytes === undefined || (Number.isSafeInteger(options.maxFrameBytes) && options.maxFrameBytes > 0) ? undefined : 'maxFrameBytes must be a positive integer',
    ].filter((p): p is string => p !== undefined);
    if (problems.length > 0) {
      return err(hostError('HOST_INVALID_OPTIONS', `invalid handshake plugin spec: ${problems.join('; ')}`, { details: { problems } }));
    }
    return ok(new HandshakeSession(options));
  }

  /** Launches the plugin for a handshake only and returns its validated manifest. */
  handshake(options: CallOptions = {}): ResultAsync<HandshakeManifest, HostError> {
    return new ResultAsync(this.track(this.invoke(undefined, undefined, options))).map((outcome) => outcome.manifest);
  }

  /** The manifest's `exposed_tools`, from a handshake-only launch. */
  listTools(): ResultAsync<readonly ToolDescriptor[], HostError> {
    return this.handshake().map((manifest) => manifest.exposed_tools.map((name) => ({ name })));
  }

  /**
   * One launch: handshake, one execute request `{tool: name, input: args}`,
   * one response, teardown. `options.timeoutMs` replaces the invoke timeout;
   * `maxTotalTimeoutMs` bounds the whole launch; an abort kills the process
   * (PLUGIN_CANCELLED). A plugin error comes back as `{ isError: true, value: PluginError }`,
   * a result as `{ isError: false, value: result }`.
   */
  callTool(name: string, args: unknown, options: CallOptions = {}): ResultAsync<ToolResult, HostError> {
    return new ResultAsync(this.track(this.invoke(name, args, options))).map((outcome) => outcome.result ?? { isError: false, value: undefined });
  }

  /** Stops every launch in progress (their calls fail with HOST_CLOSED) and refuses new ones. */
  async close(): Promise<void> {
    this.closed = true;
    for (const interrupt of this.active) interrupt.trigger(sessionClosedError(this.shape));
    await Promise.all(this.running);
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.running.add(promise);
    void promise.finally(() => this.running.delete(promise));
    return promise;
  }

  private async invoke(tool: string | undefined, input: unknown, callOptions: CallOptions): Promise<Result<LaunchOutcome, HostError>> {
    const options = callOptions.maxTotalTimeoutMs === undefined && this.options.maxTotalTimeoutMs !== undefined ? { ...callOptions, maxTotalTimeoutMs: this.options.maxTotalTimeoutMs } : callOptions;
    if (this.closed) return err(sessionClosedError(this.shape));
    const interrupt = new Interrupt();
    if (options.signal?.aborted === true) return err(cancelled(tool));
    const onAbort = (): void => interrupt.trigger(cancelled(tool));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const cancelTotal =
      options.maxTotalTimeoutMs === undefined
        ? undefined
        : this.clock.setTimer(
            () => interrupt.trigger(handshakeFailure('PLUGIN_TIMEOUT', `the invocation exceeded its ${options.maxTotalTimeoutMs} ms total`, { phase: 'total', timeout_ms: options.maxTotalTimeoutMs })),
            options.maxTotalTimeoutMs,
          );
    this.active.add(interrupt);
    try {
      const launched = await this.launchProcess(interrupt);
      if (launched.isErr()) return err(launched.error);
      const process = launched.value;
      const channel = new PullChannel(process, this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, this.clock);
      try {
        const outcome = await this.exchange(process, channel, tool, input, options.timeoutMs ?? this.timeouts.invokeMs, interrupt);
        if (outcome.isErr()) {
          this.logger.debug({ pid: process.pid, code: outcome.error.code, ...outcome.error.details }, `handshake: ${outcome.error.message}`);
          await process.stop({ stdinGraceMs: 0, termGraceMs: this.timeouts.teardownMs });
        }
        return outcome;
      } finally {
        channel.dispose();
      }
    } finally {
      this.active.delete(interrupt);
      cancelTotal?.();
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  private async launchProcess(interrupt: Interrupt): Promise<Result<PluginProcess, HostError>> {
    const launching = this.options.launch();
    const launchMs = this.timeouts.launchMs;
    let cancelTimer: () => void = () => undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (cancelTimer = this.clock.setTimer(() => resolve('timeout'), launchMs)));
    const first = await Promise.race([launching, timedOut, interrupt.fired]);
    cancelTimer();
    if (first === 'timeout' || first instanceof HostError) {
      // The launcher may still deliver a process: it must not outlive this call, and close() waits for it.
      void this.track(Promise.resolve(launching.map((late) => late.stop({ stdinGraceMs: 0 }))));
      return err(first === 'timeout' ? handshakeFailure('PLUGIN_TIMEOUT', `the plugin was not started within ${launchMs} ms`, { phase: 'launch', timeout_ms: launchMs }) : first);
    }
    if (first.isErr()) {
      return err(withDetails(first.error, { failure_class: 'launch_failed', phase: 'launch' }));
    }
    return ok(first.value);
  }

  private write(channel: PullChannel, message: PluginHandshakeRequest | PluginRequest): void {
    void channel.send(JSON.stringify(message));
  }

  private async exchange(
    process: PluginProcess,
    channel: PullChannel,
    tool: string | undefined,
    input: unknown,
    invokeMs: number,
    interrupt: Interrupt,
  ): Promise<Result<LaunchOutcome, HostError>> {
    const expectations: HandshakeExpectations = {
      protocolVersion: this.options.protocolVersion ?? HANDSHAKE_PROTOCOL_VERSION,
      allowedCapabilities: this.options.allowedCapabilities ?? [],
      expectedCapabilities: this.options.expectedCapabilities ?? [],
      ...(this.options.pluginId === undefined ? {} : { pluginId: this.options.pluginId }),
      ...(tool === undefined ? {} : { tool }),
    };
    this.write(channel, {
      type: 'handshake',
      protocol_version: expectations.protocolVersion,
      ...(tool === undefined ? {} : { tool }),
      allowed_capabilities: expectations.allowedCapabilities,
    });
    const handshakeLine = await this.expectLine(process, channel, 'handshake', this.timeouts.handshakeMs, interrupt);
    if (handshakeLine.isErr()) return err(handshakeLine.error);
    const checked = checkHandshakeResponse(handshakeLine.value, expectations);
    if (checked.isErr()) return err(checked.error);
    const manifest = checked.value;
    if (channel.hasQueued) return err(extraOutput('handshake', 'a second line followed the handshake response before the execute request'));

    let result: ToolResult | undefined;
    if (tool !== undefined) {
      const requestId = Buffer.from(this.random.bytes(12)).toString('hex');
      this.write(channel, { type: 'execute', request_id: requestId, tool, input: input === undefined ? {} : input });
      const responseLine = await this.expectLine(process, channel, 'execute', invokeMs, interrupt);
      if (responseLine.isErr()) return err(responseLine.error);
      const response = checkExecuteResponse(responseLine.value, requestId);
      if (response.isErr()) return err(response.error);
      result = response.value.ok ? { isError: false, value: response.value.result } : { isError: true, value: response.value.error };
    }

    const teardown = await this.teardown(process, channel, interrupt);
    if (teardown.isErr()) return err(teardown.error);
    return ok(result === undefined ? { manifest } : { manifest, result });
  }

  /** Reads the one line a phase expects, classifying everything else. */
  private async expectLine(
    process: PluginProcess,
    channel: PullChannel,
    phase: HandshakePhase,
    timeoutMs: number,
    interrupt: Interrupt,
  ): Promise<Result<string, HostError>> {
    const event = await channel.next(timeoutMs, interrupt.fired);
    if (event.kind === 'line') return ok(event.line);
    return err(await this.unexpected(process, event, phase, timeoutMs));
  }

  private async unexpected(process: PluginProcess, event: Exclude<ChannelEvent, { kind: 'line' }>, phase: HandshakePhase, timeoutMs: number): Promise<HostError> {
    switch (event.kind) {
      case 'interrupted':
        return event.error;
      case 'timeout':
        return handshakeFailure('PLUGIN_TIMEOUT', `the plugin did not complete its ${phase} within ${timeoutMs} ms`, {
          phase,
          timeout_ms: timeoutMs,
          stderr_tail: process.stderrTail(),
        });
      case 'oversize': {
        const { bytes_seen: bytesSeen, max_frame_bytes: maxFrameBytes } = event.violation.details;
        return handshakeFailure('PLUGIN_FRAME_TOO_LARGE', `the plugin wrote a ${phase} line longer than the ${String(maxFrameBytes)}-byte frame cap (${String(bytesSeen)} bytes seen)`, {
          phase,
          bytes_seen: bytesSeen,
          max_frame_bytes: maxFrameBytes,
        });
      }
      case 'end': {
        const details = await crashDetails(process, this.clock);
        return crashOrLimit(
          handshakeFailure('PLUGIN_CRASHED', `the plugin stopped before a valid ${phase} response (${process.exitInfo?.description ?? 'stdout closed'})`, {
            phase,
            ...details,
            ...(event.partial === undefined ? {} : { partial_line: rawLineDetails(event.partial).raw_line }),
          }),
          process,
        );
      }
    }
  }

  /** Closes stdin and requires a quiet, successful exit within the teardown timeout. */
  private async teardown(process: PluginProcess, channel: PullChannel, interrupt: Interrupt): Promise<Result<void, HostError>> {
    const teardownMs = this.timeouts.teardownMs;
    const started = this.clock.now();
    process.stdin.end();
    const event = await channel.next(teardownMs, interrupt.fired);
    if (event.kind === 'line' || event.kind === 'oversize') return err(extraOutput('teardown', 'the plugin wrote more output after its one expected response'));
    if (event.kind !== 'end') return err(await this.unexpected(process, event, 'teardown', teardownMs));
    if (event.partial !== undefined) return err(extraOutput('teardown', 'the plugin wrote an unterminated fragment after its response'));
    const exit = await exitWithin(process, Math.max(1, teardownMs - (this.clock.now() - started)), this.clock);
    if (exit === undefined) {
      return err(handshakeFailure('PLUGIN_TIMEOUT', `the plugin did not exit within ${teardownMs} ms of its response`, { phase: 'teardown', timeout_ms: teardownMs }));
    }
    if (exit.status !== 0) {
      return err(
        crashOrLimit(
          handshakeFailure('PLUGIN_CRASHED', `the plugin ${exit.description} after its response`, {
            phase: 'teardown',
            exit: exitDetails(exit),
            stderr_tail: process.stderrTail(),
          }),
          process,
          exit,
        ),
      );
    }
    return ok(undefined);
  }
}

function extraOutput(phase: HandshakePhase, message: string): HostError {
  return handshakeFailure('PLUGIN_MALFORMED_RESPONSE', message, { phase, reason: 'extra output' });
}

function cancelled(tool: string | undefined): HostError {
  return hostError('PLUGIN_CANCELLED', tool === undefined ? 'the handshake was cancelled' : `call to ${tool} was cancelled`, { details: tool === undefined ? {} : { tool } });
}
