import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, JSONRPCMessageSchema, McpError, ProgressNotificationSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import clientRequestLimits from '../../../etc/client-requests.json' with { type: 'json' };
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { hostError, type HostError } from '../../errors/HostError.js';
import { droppedLineId } from '../../framing/droppedLineId.js';
import { isJsonObject, isRequestId } from '../../framing/jsonRpcValues.js';
import { frameTooLarge, LineChannel } from '../../framing/LineChannel.js';
import { DEFAULT_MAX_FRAME_BYTES, type OversizeLine } from '../../framing/LineReader.js';
import { nestedDeeperThan } from '../../framing/nestingDepth.js';
import { systemClock, type Clock } from '../../ports/ports.js';
import type { PluginProcess } from '../../process/PluginProcess.js';
import type { DirectAnswer, DirectToolCalls } from './DirectToolCalls.js';
import { repairInitializeResult, repairToolListResult, type ToolListRepairs } from './answerLeniency.js';

const EXCERPT_CHARS = 200;
/** How deep a plugin's line may nest: the bound on the values it carries, plus the envelope's own level. */
const LINE_NESTING_LIMIT = pluginAnswerLimits.maxNestingDepth + 1;
/** Each level of nesting takes two characters of the line (its brackets), so a shorter line cannot break the bound. */
const SHORTEST_TOO_DEEP_LINE = 2 * LINE_NESTING_LIMIT;
/** What a log message nested too deep carries instead of its data, so that a listener can still print the event. */
const DROPPED_LOG_DATA = `[log data nested deeper than ${pluginAnswerLimits.maxNestingDepth} levels, dropped]`;
/** After the process exits, how long stdout may still deliver buffered lines before the connection ends. */
const EXIT_DRAIN_MS = 200;
/**
 * What the host's SDK `Client` sees in place of a plugin's request id 0. The
 * SDK drops a `notifications/cancelled` whose `requestId` is falsy (it tests
 * the id for truth), and an SDK-based plugin numbers its requests from 0: its
 * first sampling, elicitation or roots request, withdrawn (its own timeout, an
 * abort), kept the application's callback or a gateway client running until
 * the call ended. The ids are swapped, not shifted, so each id of the plugin's
 * still stands for exactly one at the SDK: a plugin that uses this very id gets
 * 0 at the SDK in its place (its cancel of it is then dropped, as the SDK does).
 */
const PLUGIN_ID_ZERO_STAND_IN = 'mcp-plugin-host:plugin-request-0';

/** The two ids swapped between the plugin's numbering and the SDK's. */
type SwappedId = 0 | typeof PLUGIN_ID_ZERO_STAND_IN;

/** Whether an id is one of the two the swap changes. */
const swapsZero = (id: unknown): id is SwappedId => id === 0 || id === PLUGIN_ID_ZERO_STAND_IN;

/** 0 for the stand-in, the stand-in for 0 (the swap is its own inverse, either way round). */
const swapZero = (id: SwappedId): SwappedId => (id === 0 ? PLUGIN_ID_ZERO_STAND_IN : 0);

/**
 * A message from the plugin with the ids of its own numbering (its requests,
 * its cancels of them) as the SDK is to see them; answers to the host's
 * requests carry the host's numbering and pass as they are.
 */
function towardSdk(message: JSONRPCMessage): JSONRPCMessage {
  if (!('method' in message)) return message;
  if ('id' in message) return swapsZero(message.id) ? { ...message, id: swapZero(message.id) } : message;
  if (message.method !== 'notifications/cancelled' || !isJsonObject(message.params) || !swapsZero(message.params.requestId)) return message;
  return { ...message, params: { ...message.params, requestId: swapZero(message.params.requestId) } };
}

/** An answer of the host's to one of the plugin's requests with the id the plugin gave it; any other message as it is. */
function towardPlugin(message: JSONRPCMessage): JSONRPCMessage {
  return !('method' in message) && 'id' in message && swapsZero(message.id) ? { ...message, id: swapZero(message.id) } : message;
}

/** Options of a {@link PluginProcessTransport}. */
export interface PluginProcessTransportOptions {
  /** The cap on one stdout line, in bytes. Default 1 MiB ({@link DEFAULT_MAX_FRAME_BYTES}). */
  readonly maxFrameBytes?: number;
  /**
   * Told about every stdout line that is not a JSON-RPC message
   * (`PLUGIN_INVALID_JSON`, `PLUGIN_MALFORMED_RESPONSE`) and every line over
   * the cap that answers no request (`PLUGIN_FRAME_TOO_LARGE`). `output` is
   * whether the line looks like plugin output (not JSON, or JSON without a
   * `jsonrpc` member, as a JSON logger writes) rather than a broken protocol
   * message. The line is dropped either way; the listener decides whether
   * the connection survives.
   */
  readonly onViolation?: (violation: HostError, output: boolean) => void;
  /**
   * Told about an answer over the cap whose request id the line's ends show:
   * that one request fails with `PLUGIN_RESULT_TOO_LARGE` and the connection
   * goes on. An oversize line whose id cannot be found goes to `onViolation`
   * as `PLUGIN_FRAME_TOO_LARGE` once its newline arrives.
   */
  readonly onOversizeAnswer?: (failure: HostError) => void;
  /** Runs the wait for stdout after the process exited. Default the system clock. */
  readonly clock?: Clock;
  /** The host's own `tools/call` requests: their answers and progress go there instead of to the SDK. */
  readonly directCalls?: DirectToolCalls;
  /** Told what was repaired in a `tools/list` answer before the SDK read it (`etc/answer-leniency.json`). */
  readonly onToolListRepaired?: (repairs: ToolListRepairs) => void;
  /**
   * Told when a request of the plugin's is dropped unanswered because the
   * plugin does not read its stdin and `maxQueuedAnswersPerProcess` answers
   * already wait for it (`etc/client-requests.json`); once per backlog, with
   * the method of the first request dropped.
   */
  readonly onRequestsDropped?: (method: string) => void;
}


/**
 * A JSON-RPC answer whose envelope is plainly what the SDK's strict schema
 * accepts (exactly `jsonrpc`, `id` and a `result` object without `_meta`,
 * or an `error` with an integer code and a message); undefined sends it to
 * the schema itself.
 */
function plainAnswer(message: Record<string, unknown>, id: number): DirectAnswer | undefined {
  let keys = 0;
  for (const key in message) {
    if (key !== 'jsonrpc' && key !== 'id' && key !== 'result' && key !== 'error') return undefined;
    keys++;
  }
  if (keys !== 3 || message.jsonrpc !== '2.0') return undefined;
  const { result, error } = message;
  if (isJsonObject(result)) return result._meta === undefined ? { id, result } : undefined;
  if (!isJsonObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') return undefined;
  return { id, error: { code: error.code as number, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) } };
}

/** Whether a parsed line is a request (a method and an id), whatever else it holds: the host owes it an answer. */
function isPluginRequest(message: unknown): message is { method: string } {
  return isJsonObject(message) && typeof message.method === 'string' && isRequestId(message.id);
}

/**
 * Whether a parsed message is plainly a JSON-RPC notification as the SDK's
 * strict schema has it (`jsonrpc` 2.0, a method and at most `params`); the
 * method's own schema checks the rest.
 */
function notificationEnvelope(message: Record<string, unknown>): boolean {
  for (const key in message) if (key !== 'jsonrpc' && key !== 'method' && key !== 'params') return false;
  return message.jsonrpc === '2.0';
}

/** What ends a stdout line excerpt that was cut (the redaction of known secrets looks for it: a secret may straddle the cut). */
export const EXCERPT_CUT_MARK = '…';
const excerpt = (line: string): string => (line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS)}${EXCERPT_CUT_MARK}` : line);

/**
 * An MCP SDK `Transport` over a {@link PluginProcess}: newline-delimited
 * JSON-RPC on the plugin's stdin and stdout. Unlike the SDK's own stdio
 * transport it does not spawn anything (the process arrives verified and
 * sandboxed) and it speaks through the shared line channel (`LineChannel`), so a
 * plugin cannot make the host buffer an unbounded line, and a plugin that
 * stops reading makes `send` wait for the pipe to drain. Closing the
 * transport stops the process.
 */
export class PluginProcessTransport implements Transport {
  /** Set by the SDK: the connection ended. */
  onclose?: (() => void) | undefined;
  /** Set by the SDK: a non-fatal error (including every dropped stdout line). */
  onerror?: ((error: Error) => void) | undefined;
  /** Set by the SDK: one incoming JSON-RPC message. */
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;

  private channel: LineChannel | undefined;
  private started = false;
  private closed = false;
  private endedByPeer = false;
  private cutOffLine: string | undefined;
  private negotiatedVersion: string | undefined;
  private initializeId: string | number | undefined;
  private offeredVersion: string | undefined;
  /** Requests sent while the pipe was full, by id, until their line reaches the pipe. */
  private readonly queuedRequests = new Map<string | number, AbortController>();
  /** The ids of `tools/list` requests not answered yet, whose answers get the leniency repairs. */
  private readonly toolListIds = new Set<string | number>();
  /** Answers to the plugin's own requests written while the pipe was full, until their line reaches the pipe. */
  private answersQueued = 0;
  /** Their bytes: an answer repeats its request's id, which the plugin chooses (up to the frame cap). */
  private answerBytesQueued = 0;
  /** Whether a request was dropped since the backlog last fell below its bound (told once per backlog). */
  private droppingRequests = false;
  private toolListBytes = 0;

  /**
   * @param process - The running plugin; the transport owns it from `start()` on.
   * @param options - Frame cap and the stdout violation listener.
   */
  constructor(
    private readonly process: PluginProcess,
    private readonly options: PluginProcessTransportOptions = {},
  ) {}

  /** The protocol version the SDK negotiated with the plugin, once initialized. */
  get protocolVersion(): string | undefined {
    return this.negotiatedVersion;
  }

  /**
   * The protocolVersion the plugin put in its `initialize` answer, even one
   * the SDK then refused; for explaining a version mismatch.
   */
  get offeredProtocolVersion(): string | undefined {
    return this.offeredVersion;
  }

  /** The bytes of every answer to a `tools/list` so far (its lines): what a listing of several pages took is the difference. */
  get toolListAnswerBytes(): number {
    return this.toolListBytes;
  }

  /** Whether the connection has ended (process gone, stdout closed, or `close()` called). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The start of a line the plugin left unfinished when its stdout ended, if any. */
  get partialLine(): string | undefined {
    return this.cutOffLine;
  }

  /** Whether the plugin ended the connection (exit or end of stdout) rather than `close()`. */
  get closedByPeer(): boolean {
    return this.endedByPeer;
  }

  /** Called by the SDK after `initialize` with the version both sides agreed on. */
  setProtocolVersion(version: string): void {
    this.negotiatedVersion = version;
  }

  /** Starts reading the plugin's stdout. Called once by `Client.connect`. */
  start(): Promise<void> {
    if (this.started) return Promise.reject(new Error('PluginProcessTransport already started'));
    this.started = true;
    this.channel = new LineChannel(
      this.process,
      {
        onLine: (line) => this.receive(line),
        // Whether the line answered one request is known only at its newline.
        onOversize: () => undefined,
        onOversizeEnd: (line) => this.oversizeLine(line),
        // Output that may never end: no answer can get through behind it.
        onOversizeRunaway: (violation) => this.violation(violation, false),
        onEnd: ({ byPeer, partial }) => {
          // A line cut off by the end of stdout is a crash mid-message, not a message.
          if (partial !== undefined && partial.trim() !== '') this.cutOffLine = excerpt(partial);
          this.finish(byPeer);
        },
        onWriteError: (error) => this.onerror?.(error),
      },
      { maxFrameBytes: this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, clock: this.options.clock ?? systemClock, stdoutGraceAfterExitMs: EXIT_DRAIN_MS },
    );
    return Promise.resolve();
  }

  /** Writes one message as one line, waiting for the pipe to drain when it is full. */
  send(message: JSONRPCMessage): Promise<void> {
    return this.write(towardPlugin(message));
  }

  /** Writes one message with the ids it will have on the wire. */
  private write(message: JSONRPCMessage): Promise<void> {
    const channel = this.channel;
    if (this.closed || channel === undefined) return Promise.reject(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'));
    if ('method' in message && message.method === 'initialize' && 'id' in message) this.initializeId = message.id;
    if ('method' in message && message.method === 'tools/list' && 'id' in message) this.toolListIds.add(message.id);
    else if ('method' in message && message.method === 'notifications/cancelled' && this.toolListIds.size > 0) this.forgetCancelled(message.params);
    const text = JSON.stringify(message);
    // The SDK only awaits a send; handing on the channel's promise spares one promise per message on the warm path.
    if (!channel.isBackedUp) return channel.send(text) as Promise<unknown> as Promise<void>;
    return this.sendBehindFullPipe(channel, message, text);
  }

  /** Whether the answers waiting for a plugin that does not read reached either bound of etc/client-requests.json. */
  private answersBackedUp(): boolean {
    return this.answersQueued >= clientRequestLimits.maxQueuedAnswersPerProcess || this.answerBytesQueued >= clientRequestLimits.maxQueuedAnswerBytesPerProcess;
  }

  /** Ends the connection and stops the plugin process (its stop sequence: EOF, SIGTERM, SIGKILL). */
  async close(): Promise<void> {
    this.channel?.close();
    this.finish(false);
    await this.process.stop();
  }

  /**
   * A plugin that stops reading its stdin must not make the host hold the
   * requests the SDK has given up on: the SDK cancels a timed-out request with
   * `notifications/cancelled`, and when that request's line still waits in the
   * queue, the line is taken back and the plugin, which never saw it, gets no
   * cancellation either.
   */
  private async sendBehindFullPipe(channel: LineChannel, message: JSONRPCMessage, text: string): Promise<void> {
    if ('method' in message && message.method === 'notifications/cancelled' && !('id' in message)) {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      const queued = typeof requestId === 'string' || typeof requestId === 'number' ? this.queuedRequests.get(requestId) : undefined;
      if (queued !== undefined && channel.isQueued(queued.signal)) {
        queued.abort();
        return;
      }
    }
    if (!('method' in message && 'id' in message)) {
      if (!('id' in message)) {
        await channel.send(text);
        return;
      }
      // An answer to one of the plugin's own requests: counted until it reaches the pipe (see receive).
      const bytes = Buffer.byteLength(text);
      this.answersQueued += 1;
      this.answerBytesQueued += bytes;
      try {
        await channel.send(text);
      } finally {
        this.answersQueued -= 1;
        this.answerBytesQueued -= bytes;
        if (this.answersQueued === 0) this.droppingRequests = false;
      }
      return;
    }
    const id = message.id;
    const withdraw = new AbortController();
    this.queuedRequests.set(id, withdraw);
    try {
      await channel.send(text, withdraw.signal);
    } finally {
      this.queuedRequests.delete(id);
    }
  }

  private receive(line: string): void {
    if (this.closed || line.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      this.violation(hostError('PLUGIN_INVALID_JSON', 'plugin wrote a stdout line that is not JSON', { details: { line_excerpt: excerpt(line) } }), true);
      return;
    }
    if (this.answersBackedUp() && isPluginRequest(parsed)) {
      // The plugin reads none of the answers it already has: each further answer, and its request's state in the
      // SDK, would wait in the host's memory for as long as the plugin writes requests (a ping flood from a plugin
      // that never reads grew the host by gigabytes). A request it sends now goes unanswered, as if lost.
      if (!this.droppingRequests) {
        this.droppingRequests = true;
        this.options.onRequestsDropped?.(parsed.method);
      }
      return;
    }
    // The one bound on nesting for everything the plugin writes (answers, error data, progress, notices, its own
    // requests): JSON.parse reads any depth, but a recursive walk of the value (the SDK's JSON.stringify of a message
    // it cannot place, the gateway sending a result on, an application's logger) overflows the stack.
    if (line.length >= SHORTEST_TOO_DEEP_LINE && nestedDeeperThan(parsed, LINE_NESTING_LIMIT)) {
      parsed = this.boundedInPlaceOf(parsed, line);
      if (parsed === undefined) return;
    }
    if (this.options.directCalls !== undefined && this.routeDirect(this.options.directCalls, parsed)) return;
    if (this.toolListIds.size > 0) parsed = this.repairedToolList(parsed, line);
    const message = JSONRPCMessageSchema.safeParse(parsed);
    if (!message.success) {
      const claimsJsonRpc = typeof parsed === 'object' && parsed !== null && 'jsonrpc' in parsed;
      const violation = hostError('PLUGIN_MALFORMED_RESPONSE', 'plugin wrote JSON on stdout that is not a JSON-RPC 2.0 message', { details: { line_excerpt: excerpt(line) } });
      this.violation(violation, !claimsJsonRpc);
      return;
    }
    let data = message.data;
    if (this.initializeId !== undefined && 'id' in data && data.id === this.initializeId) data = this.noteInitializeAnswer(data);
    data = towardSdk(data);
    try {
      this.onmessage?.(data);
    } catch (error) {
      // The SDK prints a message it cannot place (an answer to no request, progress on no token) with JSON.stringify,
      // which a value nested deep enough overflows: thrown here, it would leave the pipe's reader as an uncaught exception.
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * Hands an answer to, or progress on, one of the host's own calls to them,
   * past the SDK; false leaves the message to the common path (which also
   * reports a message that breaks the JSON-RPC schema).
   */
  private routeDirect(direct: DirectToolCalls, parsed: unknown): boolean {
    if (!isJsonObject(parsed)) return false;
    if (parsed.method === undefined) {
      const id = direct.callOf(parsed.id);
      if (id === undefined) return false;
      const answer = plainAnswer(parsed, id);
      if (answer !== undefined) {
        direct.answer(answer);
        return true;
      }
      const checked = JSONRPCMessageSchema.safeParse(parsed);
      if (!checked.success) return false;
      direct.answer({ ...(checked.data as DirectAnswer), id });
      return true;
    }
    if (parsed.method !== 'notifications/progress') return false;
    const token = direct.callOf(isJsonObject(parsed.params) ? parsed.params.progressToken : undefined);
    if (token === undefined || !notificationEnvelope(parsed)) return false;
    const progress = ProgressNotificationSchema.safeParse(parsed);
    if (progress.success) {
      direct.progress(token, progress.data.params);
      return true;
    }
    // Which of the two verdicts the SDK gave: a message that breaks JSON-RPC itself is a stdout violation, one that
    // only breaks the progress schema an error of the notification handler.
    if (!JSONRPCMessageSchema.safeParse(parsed).success) return false;
    this.onerror?.(new Error(`Uncaught error in notification handler: ${progress.error.message}`));
    return true;
  }

  /**
   * What takes the place of a message nested deeper than the bound: for an
   * answer, an error answer to the same request carrying
   * `PLUGIN_MALFORMED_RESPONSE` (only that request fails, as for an answer
   * over the frame cap); for a log message, the same message with a marker for
   * its data. A request of the plugin's is refused in an error answer; any
   * other message is dropped, and JSON that is no message at all is plugin
   * output (a stdout violation). Undefined when nothing takes its place.
   */
  private boundedInPlaceOf(parsed: unknown, line: string): Record<string, unknown> | undefined {
    const limit = pluginAnswerLimits.maxNestingDepth;
    const message = isJsonObject(parsed) ? parsed : {};
    if (message.jsonrpc === undefined) {
      // JSON without a `jsonrpc` member is plugin output (a JSON logger's line), as on the common path.
      const output = hostError('PLUGIN_MALFORMED_RESPONSE', `plugin wrote JSON on stdout nested more than ${limit} levels deep`, {
        details: { line_excerpt: excerpt(line), max_nesting_depth: limit },
      });
      this.violation(output, true);
      return undefined;
    }
    const id = isRequestId(message.id) ? message.id : undefined;
    const failure = hostError('PLUGIN_MALFORMED_RESPONSE', `plugin wrote a message nested more than ${limit} levels deep`, { details: { max_nesting_depth: limit } });
    if (id !== undefined && message.method === undefined) {
      // The HostError rides in `data`, which no plugin can put there: the failure mapping recognizes it by its class.
      return { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: failure.message, data: failure } };
    }
    const params = isJsonObject(message.params) ? message.params : {};
    if (id === undefined && message.method === 'notifications/message') {
      const logger = typeof params.logger === 'string' ? { logger: params.logger } : {};
      return { jsonrpc: '2.0', method: message.method, params: { level: params.level, ...logger, data: DROPPED_LOG_DATA } };
    }
    if (id !== undefined && typeof message.method === 'string') {
      const refusal = { code: ErrorCode.InvalidRequest, message: `request nested more than ${limit} levels deep` };
      // The plugin's own id, past the swap of id 0 in send: the SDK never saw this request.
      this.write({ jsonrpc: '2.0', id, error: refusal }).catch((error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))));
    }
    this.onerror?.(failure);
    return undefined;
  }

  /** Fails the one request an oversize line answered, as if the plugin had answered it with that error. */
  private oversizeLine(line: OversizeLine): void {
    if (this.closed) return;
    const maxFrameBytes = this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    const id = droppedLineId(line);
    if (id === undefined) {
      this.violation(frameTooLarge(line.bytes, maxFrameBytes), false);
      return;
    }
    const failure = hostError('PLUGIN_RESULT_TOO_LARGE', `plugin answered with ${line.bytes} bytes, over the ${maxFrameBytes}-byte frame cap`, {
      details: { bytes: line.bytes, max_frame_bytes: maxFrameBytes },
    });
    this.options.onOversizeAnswer?.(failure);
    // The HostError rides in `data`, which no plugin can put there: the failure mapping recognizes it by its class.
    const error = { code: ErrorCode.InternalError, message: failure.message, data: failure };
    const call = this.options.directCalls?.callOf(id);
    if (call !== undefined) this.options.directCalls?.answer({ id: call, error });
    else this.onmessage?.({ jsonrpc: '2.0', id, error });
  }

  /** A `tools/list` the SDK gave up on (timed out, aborted) is forgotten: a plugin that never answers its lists must not grow the set. */
  private forgetCancelled(params: unknown): void {
    const requestId = isJsonObject(params) ? params.requestId : undefined;
    if (isRequestId(requestId)) this.toolListIds.delete(requestId);
  }

  /** An answer to a `tools/list` request with the leniency repairs made; any other message as it is. */
  private repairedToolList(parsed: unknown, line: string): unknown {
    if (!isJsonObject(parsed) || parsed.method !== undefined || !isRequestId(parsed.id) || !this.toolListIds.delete(parsed.id)) return parsed;
    this.toolListBytes += Buffer.byteLength(line);
    const repaired = repairToolListResult(parsed.result);
    if (repaired === undefined) return parsed;
    this.options.onToolListRepaired?.(repaired.repairs);
    return { ...parsed, result: repaired.result };
  }

  /** Notes the protocol version the plugin offered; returns its answer with the leniency repairs made. */
  private noteInitializeAnswer(message: JSONRPCMessage): JSONRPCMessage {
    this.initializeId = undefined;
    if (!('result' in message)) return message;
    const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
    if (typeof version === 'string') this.offeredVersion = version;
    const repaired = repairInitializeResult(message.result);
    return repaired === undefined ? message : { ...message, result: repaired };
  }

  private violation(error: HostError, output: boolean): void {
    this.onerror?.(error);
    this.options.onViolation?.(error, output);
  }

  private finish(byPeer: boolean): void {
    if (this.closed) return;
    this.closed = true;
    this.endedByPeer = byPeer;
    this.toolListIds.clear();
    this.options.directCalls?.close();
    this.onclose?.();
  }
}
