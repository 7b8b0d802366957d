/**
 * The gateway's stdio side: newline-delimited JSON-RPC on a pair of streams,
 * read with the host's own line reader (a cap on each line) and parsed once.
 * A `tools/call` the fast path takes never meets the SDK's message schemas;
 * every other message is checked against them and handed to the SDK server
 * as its own stdio transport would.
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { droppedLineId } from '../framing/droppedLineId.js';
import { isJsonObject } from '../framing/jsonRpcValues.js';
import { LineReader, type OversizeLine } from '../framing/LineReader.js';
import { isNotification, NotificationBound } from './notificationBound.js';

/** Requests served beside the SDK server, before their frame is checked against its schemas. */
export interface FastRequestRoute {
  /** Serves a `tools/call` request frame (a parsed JSON object) and returns true, or returns false to leave it to the SDK server. */
  take(request: Readonly<Record<string, unknown>>): boolean;
  /** The client cancelled a request (`notifications/cancelled`); `reason` as it gave it. */
  cancel(requestId: unknown, reason: unknown): void;
  /** The transport closed: whatever is in flight stops. */
  close(): void;
}

/**
 * An SDK server `Transport` over stdin and stdout that lets a
 * {@link FastRequestRoute} take `tools/call` requests first. A line over
 * `maxFrameBytes` is answered with an Invalid Request error (its id read
 * from the line's ends) and reading goes on; a line that is not JSON gets a
 * Parse error answer.
 */
export class GatewayStdioTransport implements Transport {
  /** Set by the SDK: the connection ended. */
  onclose?: (() => void) | undefined;
  /** Set by the SDK: a message that could not be read or written. */
  onerror?: ((error: Error) => void) | undefined;
  /** Set by the SDK: one incoming JSON-RPC message the fast route did not take. */
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;

  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #notifications = new NotificationBound('stdio');
  readonly #maxFrameBytes: number;
  #route: FastRequestRoute | undefined;
  #reader: LineReader | undefined;
  #closed = false;
  readonly #onStdinError = (error: Error): void => this.onerror?.(error);

  /**
   * @param stdin - Where the client's messages come from.
   * @param stdout - Where the answers go.
   * @param maxFrameBytes - The cap on one incoming line, in bytes.
   */
  constructor(stdin: Readable, stdout: Writable, maxFrameBytes: number) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Sets the route that sees `tools/call` requests and cancellations before the SDK server. */
  routeFirst(route: FastRequestRoute): void {
    this.#route = route;
  }

  /** Starts reading stdin. Called once by `Server.connect`. */
  start(): Promise<void> {
    if (this.#reader !== undefined) return Promise.reject(new Error('GatewayStdioTransport already started'));
    this.#stdin.on('error', this.#onStdinError);
    this.#reader = new LineReader(this.#stdin, { onLine: (line) => this.#receive(line), onOversizeEnd: (line) => this.#oversize(line) }, this.#maxFrameBytes);
    return Promise.resolve();
  }

  /** Writes one SDK message as one line; a notification only within the client's {@link NotificationBound}. */
  send(message: JSONRPCMessage): Promise<void> {
    if (!isNotification(message)) return this.write(JSON.stringify(message));
    const admitted = this.#notifications.admit(message, this.#stdout.writableLength);
    return Promise.all(admitted.map((m) => this.write(JSON.stringify(m)))).then(() => undefined);
  }

  /** Writes one serialized message as one line; settles once stdout takes more (at once unless it is full). */
  write(text: string): Promise<void> {
    if (this.#stdout.write(`${text}\n`)) return Promise.resolve();
    return new Promise((resolve) => this.#stdout.once('drain', resolve));
  }

  /** Stops reading, stops what the fast route has in flight and tells the SDK server. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#reader?.dispose();
    this.#stdin.off('error', this.#onStdinError);
    // Another reader of stdin (an embedding application's) keeps it flowing.
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.#route?.close();
    this.onclose?.();
    return Promise.resolve();
  }

  #receive(line: string): void {
    if (line.trim() === '') return;
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.#refuse(null, ErrorCode.ParseError, 'Parse error: the line is not JSON');
      return;
    }
    if (isJsonObject(message)) {
      if (message.method === 'tools/call' && 'id' in message && this.#route?.take(message) === true) return;
      if (message.method === 'notifications/cancelled' && !('id' in message) && isJsonObject(message.params)) this.#route?.cancel(message.params.requestId, message.params.reason);
    }
    const checked = JSONRPCMessageSchema.safeParse(message);
    if (!checked.success) {
      this.onerror?.(new Error(`not a JSON-RPC 2.0 message: ${checked.error.message}`));
      return;
    }
    this.#notifications.observe(checked.data);
    try {
      this.onmessage?.(checked.data);
    } catch (error) {
      // The SDK prints a message it cannot place (an answer to no request) with JSON.stringify, which a value nested
      // deep enough overflows: thrown here, it would leave stdin's reader as an uncaught exception and end the gateway.
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  #oversize(line: OversizeLine): void {
    this.#refuse(droppedLineId(line) ?? null, ErrorCode.InvalidRequest, `Invalid Request: a message of ${line.bytes} bytes is over the ${this.#maxFrameBytes}-byte frame cap`);
  }

  #refuse(id: RequestId | null, code: number, message: string): void {
    this.onerror?.(new Error(message));
    void this.write(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }));
  }
}
