import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import { hostError, HostError, withDetails } from '../../errors/HostError.js';
import { CallDeadlines } from '../../framing/CallDeadlines.js';
import { sessionClosedError } from '../../framing/LineChannel.js';
import { DEFAULT_MAX_FRAME_BYTES } from '../../framing/LineReader.js';
import { silentLogger, systemClock, type Clock, type Logger } from '../../ports/ports.js';
import type { CallOptions, PluginSession, ProcessLauncher, ToolDescriptor, ToolResult } from '../PluginSession.js';
import { cancelledError, NdjsonCall, type CallRegistry } from './NdjsonCall.js';
import { NdjsonConnection } from './NdjsonConnection.js';
import { InFlightLimiter, type ReleaseSlot } from '../InFlightLimiter.js';
import { LazyStart } from '../LazyStart.js';

/** Default time a call may take, and the grace period of the EOF shutdown: 30 s. */
export const DEFAULT_NDJSON_CALL_TIMEOUT_MS = 30_000;

/** How an {@link NdjsonRpcSession} runs its plugin. */
export interface NdjsonRpcSessionOptions {
  /** Starts the plugin process (verified, sandboxed); called on first use, and again after a crash only with `respawn`. */
  readonly launch: ProcessLauncher;
  /**
   * The methods the plugin offers, as its manifest advertises them: the
   * protocol has no discovery, so {@link NdjsonRpcSession.listTools} returns these.
   */
  readonly tools?: readonly (string | ToolDescriptor)[];
  /** The mcptest `call_timeout`: per-call default and EOF-shutdown grace, in ms. Default 30,000. */
  readonly callTimeoutMs?: number;
  /** The cap on a call that sets no `maxTotalTimeoutMs` of its own, in ms. Default none. */
  readonly maxTotalTimeoutMs?: number;
  /**
   * How many requests may await their answers at once. 1 (default) serializes
   * requests as the protocol describes; more pipelines them, responses matched by id.
   */
  readonly maxInFlight?: number;
  /** Launch a fresh process on the call after a crash, instead of reporting every later call as crashed. Default false. */
  readonly respawn?: boolean;
  /** The cap on one response line, in bytes. Default 1 MiB. */
  readonly maxFrameBytes?: number;
  /** Timers. */
  readonly clock?: Clock;
  /** Where protocol oddities that fail no call (unsolicited lines, late answers) are logged. */
  readonly logger?: Logger;
}

const positiveInteger = (value: number): boolean => Number.isSafeInteger(value) && value > 0;

/**
 * A session over the mcptest subprocess plugin protocol v1 (newline-delimited
 * JSON requests and responses). The process is launched on the first call,
 * kept alive across calls, and shut down by closing its stdin.
 *
 * Host failures: PLUGIN_SPAWN_FAILED (first call, no process), PLUGIN_CRASHED
 * (sticky unless `respawn`), PLUGIN_TIMEOUT and PLUGIN_INVALID_JSON /
 * PLUGIN_MALFORMED_RESPONSE / PLUGIN_FRAME_TOO_LARGE (child left running),
 * PLUGIN_CANCELLED, HOST_CLOSED. Each carries `details.protocol_code`, the
 * seed's spelling (`SpawnFailed`, `PluginCrashed`, `Timeout`, `InvalidJson`,
 * `InvalidResponse`). A response's `error` object is not a host failure: it
 * comes back as `{ isError: true, value: error }`.
 */
export class NdjsonRpcSession implements PluginSession {
  /** {@inheritDoc PluginSession.shape} */
  readonly shape = 'ndjson-rpc' as const;
  private readonly tools: readonly ToolDescriptor[];
  private readonly callTimeoutMs: number;
  private readonly permits: InFlightLimiter;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly calls: CallRegistry;
  private readonly connections: LazyStart<NdjsonConnection>;
  private nextId = 1;

  private constructor(private readonly options: NdjsonRpcSessionOptions) {
    this.tools = (options.tools ?? []).map((tool) => (typeof tool === 'string' ? { name: tool } : tool));
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_NDJSON_CALL_TIMEOUT_MS;
    this.permits = new InFlightLimiter(options.maxInFlight ?? 1);
    this.clock = options.clock ?? systemClock;
    this.calls = { open: new Set(), deadlines: new CallDeadlines(this.clock) };
    this.logger = options.logger ?? silentLogger;
    this.connections = new LazyStart({
      start: () => this.launch(),
      isLive: (connection) => connection.alive,
      refuseRestart: async (dead) => (options.respawn === true ? undefined : stickyCrash(await dead.crashed)),
      discard: async (connection) => {
        await connection.stop(this.callTimeoutMs);
      },
      closedError,
    });
  }

  /** Checks the options and builds a session; nothing is launched until the first call. */
  static create(options: NdjsonRpcSessionOptions): Result<NdjsonRpcSession, HostError> {
    const problems: string[] = [];
    if (options.callTimeoutMs !== undefined && !positiveInteger(options.callTimeoutMs)) problems.push('callTimeoutMs must be a positive integer');
    if (options.maxInFlight !== undefined && !positiveInteger(options.maxInFlight)) problems.push('maxInFlight must be a positive integer');
    if (options.maxFrameBytes !== undefined && !positiveInteger(options.maxFrameBytes)) problems.push('maxFrameBytes must be a positive integer');
    if (problems.length > 0) {
      return err(hostError('HOST_INVALID_OPTIONS', `invalid ndjson-rpc session options: ${problems.join('; ')}`, { details: { problems } }));
    }
    return ok(new NdjsonRpcSession(options));
  }

  /** The configured methods; the protocol has no discovery, so this never launches the plugin. */
  listTools(): ResultAsync<readonly ToolDescriptor[], HostError> {
    if (this.connections.isClosed) return errAsync(closedError());
    return okAsync(this.tools);
  }

  /** Calls holding an in-flight slot, and calls waiting for one: for monitoring and tests. */
  stats(): { readonly inFlight: number; readonly waiting: number } {
    return { inFlight: this.permits.inFlight, waiting: this.permits.waiting };
  }

  /**
   * Sends `{"method": name, "params": args, "id": n}` and waits for the answer.
   * `options.timeoutMs` (default: the session's call timeout) bounds the whole
   * call as the caller sees it, including the launch and waiting behind other
   * calls; `maxTotalTimeoutMs` caps it too (v1 has no progress). The protocol
   * has no cancel message: an abort fails the call with PLUGIN_CANCELLED and
   * drops the plugin's late answer. `onProgress` is never called.
   */
  callTool(name: string, args: unknown, options: CallOptions = {}): ResultAsync<ToolResult, HostError> {
    return new ResultAsync(this.call(name, args, options));
  }

  /**
   * Graceful shutdown: calls still waiting fail with HOST_CLOSED, stdin is
   * closed, the plugin gets the call timeout to exit, then it is killed.
   */
  async close(): Promise<void> {
    if (this.connections.isClosed) return;
    const closing = this.connections.close();
    for (const call of this.calls.open) call.settle(err(closedError()));
    const connection = await closing;
    if (connection !== undefined) await connection.stop(this.callTimeoutMs);
  }

  /**
   * Starts one call. Synchronous while a permit and a live process are at
   * hand (every warm call of a serialized session): no async frame or race
   * promise per call, which the round trip's bench shows; waiting for a
   * permit or a launch goes through callAfterWaiting.
   */
  private call(method: string, params: unknown, options: CallOptions): Promise<Result<ToolResult, HostError>> {
    if (this.connections.isClosed) return Promise.resolve(err(closedError()));
    if (options.signal?.aborted === true) return Promise.resolve(err(cancelledError(method, 'queued')));
    const timeoutMs = Math.min(options.timeoutMs ?? this.callTimeoutMs, options.maxTotalTimeoutMs ?? this.options.maxTotalTimeoutMs ?? Number.POSITIVE_INFINITY);
    const call = new NdjsonCall(method, timeoutMs, this.calls, this.clock.now());
    if (options.signal !== undefined) call.cancelOn(options.signal);
    const release = this.permits.tryAcquire();
    const connection = this.connections.live;
    if (release === undefined || connection === undefined) return this.callAfterWaiting(call, release, params, options.caller);
    call.holdSlot(release);
    call.sendOn(connection, this.nextId++, params);
    return call.outcome;
  }

  private async callAfterWaiting(call: NdjsonCall, held: ReleaseSlot | undefined, params: unknown, caller: string | undefined): Promise<Result<ToolResult, HostError>> {
    let release = held;
    if (release === undefined) {
      release = await this.permits.acquire(call.endSignal, caller);
      if (release === undefined) return call.outcome;
    }
    call.holdSlot(release);

    call.phase = 'spawning';
    let connection = this.connections.live;
    if (connection === undefined) {
      const connected = await Promise.race([this.connections.get(), call.outcome.then(() => undefined)]);
      if (connected === undefined || call.isSettled) return call.outcome;
      if (connected.isErr()) {
        call.settle(err(connected.error));
        return call.outcome;
      }
      connection = connected.value;
    }
    call.sendOn(connection, this.nextId++, params);
    return call.outcome;
  }

  private async launch(): Promise<Result<NdjsonConnection, HostError>> {
    const launched = await this.options.launch();
    if (launched.isErr()) return err(spawnFailure(launched.error));
    return ok(
      new NdjsonConnection(launched.value, {
        maxFrameBytes: this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
        clock: this.clock,
        logger: this.logger,
      }),
    );
  }
}

function closedError(): HostError {
  return sessionClosedError('ndjson-rpc');
}

/** A later call after a crash: same code and facts, marked sticky. */
function stickyCrash(crash: HostError): HostError {
  return new HostError(crash.code, `the plugin crashed earlier in this session: ${crash.message}`, {
    details: { ...crash.details, sticky: true },
    cause: crash,
  });
}

/** Any launcher failure is the protocol's SpawnFailed; the launcher's own code (e.g. an untrusted binary) is kept. */
function spawnFailure(error: HostError): HostError {
  return withDetails(error, { protocol_code: 'SpawnFailed' });
}
