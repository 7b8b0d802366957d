/**
 * The gateway's server side of the MCP Streamable HTTP transport, written on
 * node:http rather than the SDK's server transport, which turns every request
 * into a web-standard Request and every answer into a Response and stream.
 *
 * One {@link HttpSessionTransport} serves one MCP session under the SDK
 * `Server`; the listener authenticates each HTTP request, finds its session
 * and hands the request over. A POST's answers go back as one
 * `application/json` body, unless the server sends something about one of
 * its requests before answering (progress, an elicitation, a sampling
 * request): that POST's answer then becomes an SSE stream carrying those
 * messages and, last, the answers. Messages about no open request go to the
 * session's standalone GET stream, or nowhere when the client has none open.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, type MessageExtraInfo, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isJsonObject, isRequestId } from '../framing/jsonRpcValues.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';
import { lastVerdictOf } from './lastVerdict.js';
import { isNotification, NotificationBound } from './notificationBound.js';
import { SlotMap } from './slotMap.js';
import type { FastRequestRoute } from './stdioTransport.js';

/**
 * The server-error codes of the transport's refusals that JSON-RPC 2.0 does
 * not name, as the SDK's own Streamable HTTP server transport answers them.
 * The SDK exports no constant with these meanings (its `ErrorCode` gives
 * -32000 and -32001 to a closed connection and a timeout), so they are named
 * here; parse errors and invalid requests use `ErrorCode`.
 */
export const TRANSPORT_ERROR_CODES = Object.freeze({ refused: -32000, sessionNotFound: -32001 });

/** Writes a JSON-RPC error without an id as the whole HTTP answer (or ends an answer already under way). */
export function writeJsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Readonly<Record<string, string>> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** What one POST carried. */
export interface PostedMessages {
  readonly messages: readonly JSONRPCMessage[];
  /** Whether the body was a JSON array, answered with an array. */
  readonly batch: boolean;
  /** The client's budget, which the POST's answers are held against too (see {@link HttpSessionTransport.send}). */
  readonly budget?: BodyBudget | undefined;
}

/** The structural rules of JSON-RPC 2.0 as MCP uses them; the SDK `Server` checks each method's params itself. */
function isJsonRpcMessage(value: unknown): value is JSONRPCMessage {
  if (!isJsonObject(value) || value.jsonrpc !== '2.0') return false;
  if ('method' in value) return typeof value.method === 'string' && (value.params === undefined || isJsonObject(value.params)) && (!('id' in value) || isRequestId(value.id));
  if ('result' in value) return isRequestId(value.id) && isJsonObject(value.result) && !('error' in value);
  const error = value.error;
  return (value.id === undefined || isRequestId(value.id)) && isJsonObject(error) && typeof error.code === 'number' && typeof error.message === 'string';
}

/** A message with a method and an id: a request, to be answered. */
function isRequest(message: JSONRPCMessage): message is Extract<JSONRPCMessage, { method: string; id: RequestId }> {
  return 'method' in message && 'id' in message;
}

/** Whether `message` is an initialize request. */
export function isInitialize(message: JSONRPCMessage): boolean {
  return isRequest(message) && message.method === 'initialize';
}

/** The media types of an Accept or Content-Type header, lower-cased, without parameters. */
function mediaTypes(header: string | undefined): Set<string> {
  const types = new Set<string>();
  for (const part of (header ?? '').split(',')) {
    const type = (part.split(';', 1)[0] ?? '').trim().toLowerCase();
    if (type !== '') types.add(type);
  }
  return types;
}

function accepts(types: ReadonlySet<string>, type: string): boolean {
  return types.has(type) || types.has('*/*') || types.has(`${type.slice(0, type.indexOf('/'))}/*`);
}

/** Whether the client takes SSE answers, as a GET must. */
function acceptsEventStream(req: IncomingMessage): boolean {
  return accepts(mediaTypes(req.headers.accept), 'text/event-stream');
}

/** Whether an Accept header names both JSON and SSE, as a POST's must. */
const acceptsJsonAndEventStream = lastVerdictOf((header) => {
  const accepted = mediaTypes(header);
  return accepts(accepted, 'application/json') && accepts(accepted, 'text/event-stream');
});

/** Whether a Content-Type header says JSON. */
const jsonContent = lastVerdictOf((header) => mediaTypes(header).has('application/json'));

/**
 * The bytes of request bodies a listener holds at once, across requests: `maxBytes` bounds one body, not how many are
 * read at the same time, and every body is held whole until it parses.
 */
export interface BodyBudget {
  /** Takes `bytes` more for a body being read; false, taking nothing, when that would pass the bound. */
  take(bytes: number): boolean;
  /** Gives back `bytes` taken. */
  give(bytes: number): void;
}

/** The body, or why there is none: larger than `maxBytes`, more than `budget` lets be held now, or the client went away first. */
function readBody(req: IncomingMessage, maxBytes: number, budget: BodyBudget | undefined): Promise<Buffer | 'too-large' | 'busy' | 'aborted'> {
  return new Promise((resolve) => {
    // A body in one chunk (nearly every POST) is held without an array.
    let first: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let size = 0;
    const settle = (outcome: Buffer | 'too-large' | 'busy' | 'aborted'): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      // A body read whole is given back when its answer ends (readPostedMessages); one not read whole, here.
      if (!Buffer.isBuffer(outcome)) budget?.give(size);
      resolve(outcome);
    };
    const onData = (chunk: Buffer): void => {
      if (size + chunk.length > maxBytes || budget?.take(chunk.length) === false) {
        // The rest is read and dropped, so the refusal can be written before the connection closes.
        settle(size + chunk.length > maxBytes ? 'too-large' : 'busy');
        req.resume();
        return;
      }
      size += chunk.length;
      if (first === undefined) first = chunk;
      else (chunks ??= [first]).push(chunk);
    };
    const onEnd = (): void => settle(chunks !== undefined ? Buffer.concat(chunks, size) : (first ?? Buffer.alloc(0)));
    const onClose = (): void => settle('aborted');
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
  });
}

/** The listener's bounds on one POST. */
export interface PostLimits {
  /** The largest body, in bytes. */
  readonly maxBytes: number;
  /** The most messages in a batch. */
  readonly maxBatch: number;
  /** What bounds the bodies of the client's requests read at once; none: only `maxBytes`. */
  readonly budget?: BodyBudget;
}

/**
 * Reads a POST's JSON-RPC message or batch, checking what every POST must
 * satisfy whatever its session: an Accept naming both JSON and SSE (406),
 * a JSON body (415), within the size cap (413), that parses (400, -32700),
 * of well-formed messages and a bounded, non-empty batch (400, -32600).
 * Undefined when it has answered the request itself with the refusal.
 */
export async function readPostedMessages(req: IncomingMessage, res: ServerResponse, limits: PostLimits): Promise<PostedMessages | undefined> {
  if (!acceptsJsonAndEventStream(req.headers.accept ?? '')) {
    writeJsonRpcError(res, 406, TRANSPORT_ERROR_CODES.refused, 'Not Acceptable: a POST must accept both application/json and text/event-stream');
    return undefined;
  }
  if (!jsonContent(req.headers['content-type'] ?? '')) {
    writeJsonRpcError(res, 415, TRANSPORT_ERROR_CODES.refused, 'Unsupported Media Type: the body must be application/json');
    return undefined;
  }
  const tooLarge = `Payload Too Large: a request body holds at most ${limits.maxBytes} bytes`;
  if (Number(req.headers['content-length'] ?? 0) > limits.maxBytes) {
    writeJsonRpcError(res, 413, ErrorCode.InvalidRequest, tooLarge, { connection: 'close' });
    return undefined;
  }
  const body = await readBody(req, limits.maxBytes, limits.budget);
  if (body === 'aborted') return undefined;
  if (body === 'too-large') {
    writeJsonRpcError(res, 413, ErrorCode.InvalidRequest, tooLarge, { connection: 'close' });
    return undefined;
  }
  if (body === 'busy') {
    writeJsonRpcError(res, 503, TRANSPORT_ERROR_CODES.refused, 'Service Unavailable: the gateway holds as many request bodies of this client as it takes at once; retry later', {
      connection: 'close',
      'retry-after': '1',
    });
    return undefined;
  }
  // Given back when the answer ends, not once parsed: the messages, as large as the body or larger, are held while
  // their requests wait for a plugin, and a client must not hold more of them at once than of bodies.
  const { budget } = limits;
  // 'on': a ServerResponse emits 'close' once, and once() would wrap the listener in two more objects per POST.
  if (budget !== undefined) res.on('close', () => budget.give(body.length));
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    writeJsonRpcError(res, 400, ErrorCode.ParseError, 'Parse error: the body is not JSON');
    return undefined;
  }
  const batch = Array.isArray(parsed);
  const messages: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  if (messages.length === 0 || messages.length > limits.maxBatch) {
    writeJsonRpcError(res, 400, ErrorCode.InvalidRequest, `Invalid Request: a batch holds 1 to ${limits.maxBatch} messages`);
    return undefined;
  }
  if (!messages.every(isJsonRpcMessage)) {
    writeJsonRpcError(res, 400, ErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message');
    return undefined;
  }
  // Set even when undefined: a spread of a conditional object made two objects more per POST.
  return { messages, batch, budget };
}

/** One POST whose requests are being answered. */
interface Exchange {
  readonly res: ServerResponse;
  /** Its requests' ids, in the order they came. */
  readonly ids: readonly RequestId[];
  /**
   * Its answers so far, serialized: they are counted in bytes, and written as they are. Undefined for a request the
   * client cancelled, which gets no answer.
   */
  readonly answers: SlotMap<RequestId, string | undefined>;
  readonly batch: boolean;
  /** What its answers are held against; none: nothing bounds them. */
  readonly budget: BodyBudget | undefined;
  /** Bytes of its answers taken from `budget`, given back once the response closes (written out, or the connection gone). */
  held: number;
  /** Whether its answer became an SSE stream. */
  streaming: boolean;
  keepAlive: NodeJS.Timeout | undefined;
  /** Whether the client cancelled one of its requests: then it ends only once the server's requests on it are settled too. */
  withdrawn: boolean;
  /**
   * The ids of the server's requests sent on its stream (a confirmation, a plugin's sampling) that are neither answered
   * nor cancelled yet; made with the first, so that an ordinary call allocates nothing for it.
   */
  asking: Set<RequestId> | undefined;
}

/** The standalone GET stream. */
interface EventStream {
  readonly res: ServerResponse;
  readonly keepAlive: NodeJS.Timeout;
}

const EVENT_STREAM_HEADERS = Object.freeze({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });

function sseEvent(message: JSONRPCMessage): string {
  return sseEventOf(JSON.stringify(message));
}

/** The SSE event of a serialized message: JSON.stringify escapes every line break, so it is one data line. */
function sseEventOf(serialized: string): string {
  return `event: message\ndata: ${serialized}\n\n`;
}

/** SSE comments that keep proxies and clients from timing an open stream out. */
function keepAlive(res: ServerResponse, everyMs: number): NodeJS.Timeout {
  const timer = setInterval(() => res.write(': keepalive\n\n'), everyMs);
  timer.unref();
  return timer;
}

/**
 * One MCP session's Streamable HTTP transport, under the SDK `Server`
 * (`server.connect(transport)`). It trusts the listener for authentication,
 * Origin and Host checks and for routing by `Mcp-Session-Id`, and enforces
 * the rest of the protocol itself: one initialize, opening the session; the
 * negotiated `MCP-Protocol-Version` on every later request; one GET stream
 * at a time; DELETE ending the session.
 */
export class HttpSessionTransport implements Transport {
  /** Set by the SDK `Server` it serves. */
  onclose?: () => void;
  /** Set by the SDK `Server` it serves. */
  onerror?: (error: Error) => void;
  /** Set by the SDK `Server` it serves. */
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  /** The `Mcp-Session-Id` this session was given. */
  readonly sessionId: string;
  readonly #sseKeepAliveMs: number;
  /** Open exchanges by the id of each request they still wait on (or that the client cancelled, until they end). */
  readonly #pending = new SlotMap<RequestId, Exchange>();
  /** Open exchanges by the id of each server request sent on them and not settled yet. */
  readonly #asked = new Map<RequestId, Exchange>();
  /** Open exchanges, as keys; one at a time on nearly every session, so a SlotMap and not a Set (a table per POST). */
  readonly #exchanges = new SlotMap<Exchange, true>();
  #standalone: EventStream | undefined;
  readonly #notifications = new NotificationBound('http');
  #initializeId: RequestId | undefined;
  #protocolVersion: string | undefined;
  #closed = false;
  #route: FastRequestRoute | undefined;

  /** A session under the id the listener chose. */
  constructor(sessionId: string, sseKeepAliveMs: number = GATEWAY_DEFAULTS.sseKeepAliveMs) {
    this.sessionId = sessionId;
    this.#sseKeepAliveMs = sseKeepAliveMs;
  }

  /**
   * Sets the route that may take a POST carrying one `tools/call` on an
   * initialized session, once every check of {@link handlePost} passed; it
   * answers through {@link send}, like the SDK `Server`, and hears the
   * cancellations of what it took.
   */
  routeFirst(route: FastRequestRoute): void {
    this.#route = route;
  }

  /** Nothing to start: requests arrive through the listener. */
  start(): Promise<void> {
    return Promise.resolve();
  }

  /** Whether the session is open (its initialize was not refused, nor the session ended). */
  get closed(): boolean {
    return this.#closed;
  }

  /** A request whose `MCP-Protocol-Version` is not the negotiated one is refused (400); without the header, the negotiated one is assumed. */
  #refusedVersion(req: IncomingMessage, res: ServerResponse): boolean {
    const version = req.headers['mcp-protocol-version'];
    if (version === undefined || version === this.#protocolVersion) return false;
    writeJsonRpcError(res, 400, TRANSPORT_ERROR_CODES.refused, `Bad Request: MCP-Protocol-Version ${String(version)} is not the session's ${this.#protocolVersion ?? '(none negotiated yet)'}`);
    return true;
  }

  /** Handles a POST whose body {@link readPostedMessages} read. */
  handlePost(req: IncomingMessage, res: ServerResponse, posted: PostedMessages): void {
    const { messages, batch } = posted;
    if (this.#closed) return writeJsonRpcError(res, 404, TRANSPORT_ERROR_CODES.sessionNotFound, 'Session not found');
    const initialize = messages.find(isInitialize);
    if (initialize !== undefined) {
      if (this.#initializeId !== undefined) return writeJsonRpcError(res, 400, ErrorCode.InvalidRequest, 'Invalid Request: the session is already initialized');
      if (messages.length > 1) return writeJsonRpcError(res, 400, ErrorCode.InvalidRequest, 'Invalid Request: an initialize request comes alone');
      this.#initializeId = (initialize as { id: RequestId }).id;
    } else if (this.#refusedVersion(req, res)) return;
    const ids: RequestId[] = [];
    for (const message of messages) if (isRequest(message)) ids.push(message.id);
    let reused = false;
    for (let i = 0; i < ids.length && !reused; i++) reused = this.#pending.has(ids[i] as RequestId) || ids.indexOf(ids[i] as RequestId) !== i;
    if (reused) {
      return writeJsonRpcError(res, 400, ErrorCode.InvalidRequest, 'Invalid Request: a request id is already in use in this session');
    }
    for (const message of messages) {
      this.#notifications.observe(message);
      // Wherever it comes, alone or in a batch beside requests, a cancellation reaches the fast route too.
      if ('method' in message && message.method === 'notifications/cancelled' && isJsonObject(message.params)) {
        this.#route?.cancel(message.params.requestId, message.params.reason);
        this.#withdraw(message.params.requestId);
      } else if (!('method' in message) && message.id !== undefined) this.#settleAsk(message.id);
    }
    if (ids.length === 0) {
      // Notifications and answers to the server's own requests have nothing to wait for.
      res.writeHead(202).end();
      const extra: MessageExtraInfo = { requestInfo: { headers: req.headers } };
      for (const message of messages) this.onmessage?.(message, extra);
      return;
    }
    const exchange: Exchange = { res, ids, answers: new SlotMap(), batch, budget: posted.budget, held: 0, streaming: false, keepAlive: undefined, withdrawn: false, asking: undefined };
    this.#exchanges.set(exchange, true);
    for (const id of ids) this.#pending.set(id, exchange);
    res.on('close', () => {
      // A response closes once its last byte left the process (or its connection went): until then its answers are held.
      exchange.budget?.give(exchange.held);
      exchange.held = 0;
      this.#abandon(exchange);
    });
    const [single] = messages;
    // Only a lone tools/call on a session whose initialize was answered; a batch or anything else goes to the SDK `Server`.
    if (!batch && single !== undefined && this.#protocolVersion !== undefined && isRequest(single) && single.method === 'tools/call' && this.#route?.take(single) === true) return;
    const extra: MessageExtraInfo = { requestInfo: { headers: req.headers } };
    for (const message of messages) this.onmessage?.(message, extra);
  }

  /**
   * The client went away before all of a POST's answers were written (or
   * the exchange is ended, `reason` saying why): its requests still running
   * are cancelled, as a `notifications/cancelled` from the client would, so
   * the `Server` sends no answer for them. Else an answer that comes later
   * would go to a new request reusing the id.
   */
  #abandon(exchange: Exchange, reason = 'the client closed the HTTP request'): void {
    if (!this.#exchanges.has(exchange)) return;
    this.#release(exchange);
    for (const requestId of exchange.ids) {
      // An initialize is not cancelled (the protocol forbids it); its session stays uninitialized.
      if (exchange.answers.has(requestId) || (requestId === this.#initializeId && this.#protocolVersion === undefined)) continue;
      this.#route?.cancel(requestId, reason);
      const cancelled: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } };
      this.onmessage?.(cancelled);
    }
  }

  /**
   * A request the client cancelled gets no answer (MCP: the receiver does not respond to a cancelled request), so its
   * POST waits for nothing more of it: once every other request of that POST is answered or cancelled too, its
   * response ends, and the gateway holds neither the stream nor the answers, bytes and session activity that go with
   * it. Without this, the POST stayed open until the client closed it, which the SDK's client does only when it
   * closes its transport. An initialize is never withdrawn: the protocol does not let a client cancel it.
   */
  #withdraw(requestId: unknown): void {
    if (!isRequestId(requestId)) return;
    const exchange = this.#pending.get(requestId);
    // Already answered (no longer pending), already cancelled, or an initialize: nothing to withdraw.
    if (exchange === undefined || exchange.answers.has(requestId) || (requestId === this.#initializeId && this.#protocolVersion === undefined)) return;
    // The id stays pending until the exchange ends: an answer the server sends for it anyway is dropped, and the
    // client cannot reuse the id while the exchange is open.
    exchange.answers.set(requestId, undefined);
    exchange.withdrawn = true;
    if (this.#complete(exchange)) this.#finish(exchange, false);
  }

  /**
   * Whether an exchange has nothing more to carry: every request answered or cancelled, and, when one was cancelled,
   * no server request still open on its stream. Cancelling a call makes the gateway cancel what it asked the client
   * for it (a confirmation, a plugin's sampling), and that `notifications/cancelled` goes on this stream; ending it
   * first would leave the client's sampling or elicitation open, with no GET stream to carry the cancellation.
   */
  #complete(exchange: Exchange): boolean {
    return exchange.answers.size === exchange.ids.length && (!exchange.withdrawn || exchange.asking === undefined || exchange.asking.size === 0);
  }

  /** Notes what the server sends beside a request: its own requests, open until answered or cancelled. */
  #noteAsk(exchange: Exchange, message: JSONRPCMessage): void {
    if (!('method' in message)) return;
    if ('id' in message) {
      (exchange.asking ??= new Set()).add(message.id);
      this.#asked.set(message.id, exchange);
    } else if (message.method === 'notifications/cancelled' && isJsonObject(message.params)) this.#settleAsk(message.params.requestId);
  }

  /** A server request was answered by the client or cancelled by the server; its exchange may be complete now. */
  #settleAsk(requestId: unknown): void {
    if (!isRequestId(requestId)) return;
    const exchange = this.#asked.get(requestId);
    if (exchange === undefined) return;
    this.#asked.delete(requestId);
    exchange.asking?.delete(requestId);
    if (this.#complete(exchange)) this.#finish(exchange, false);
  }

  /** Opens the standalone SSE stream for messages about no request (list changes, resource updates, logs). */
  handleGet(req: IncomingMessage, res: ServerResponse): void {
    if (this.#closed) return writeJsonRpcError(res, 404, TRANSPORT_ERROR_CODES.sessionNotFound, 'Session not found');
    if (!acceptsEventStream(req)) return writeJsonRpcError(res, 406, TRANSPORT_ERROR_CODES.refused, 'Not Acceptable: a GET must accept text/event-stream');
    if (this.#refusedVersion(req, res)) return;
    if (this.#standalone !== undefined) return writeJsonRpcError(res, 409, TRANSPORT_ERROR_CODES.refused, 'Conflict: the session already has a GET stream open');
    res.writeHead(200, { ...EVENT_STREAM_HEADERS, 'mcp-session-id': this.sessionId });
    res.flushHeaders();
    const stream: EventStream = { res, keepAlive: keepAlive(res, this.#sseKeepAliveMs) };
    this.#standalone = stream;
    res.once('close', () => {
      clearInterval(stream.keepAlive);
      if (this.#standalone === stream) this.#standalone = undefined;
    });
  }

  /**
   * Ends the standalone GET stream, if one is open, and nothing else: the
   * listener does so when the token that opened it is rotated away, so that an
   * old token does not go on receiving the session's notifications. The client
   * may open another stream with the token it holds now.
   */
  endStream(): void {
    const stream = this.#standalone;
    if (stream === undefined) return;
    clearInterval(stream.keepAlive);
    this.#standalone = undefined;
    stream.res.end();
  }

  /** Ends the session at the client's request. */
  async handleDelete(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.#refusedVersion(req, res)) return;
    res.writeHead(200).end();
    await this.close();
  }

  /** Writes a server message on an SSE stream; a notification only within the session's {@link NotificationBound}. */
  #writeNotice(res: ServerResponse, message: JSONRPCMessage): void {
    if (!isNotification(message)) {
      res.write(sseEvent(message));
      return;
    }
    for (const admitted of this.#notifications.admit(message, res.writableLength)) res.write(sseEvent(admitted));
  }

  /**
   * Sends an answer (a message without a method) to its exchange, as {@link send} does, without a promise: the fast
   * route's answers go this way, one promise fewer per call.
   */
  sendAnswer(message: JSONRPCMessage): void {
    if ('method' in message) return;
    const id = message.id;
    const exchange = id === undefined ? undefined : this.#pending.get(id);
    // An answer whose POST is gone (the client disconnected) has nowhere to go; one the client cancelled is not wanted.
    if (id === undefined || exchange === undefined || exchange.answers.has(id)) return;
    this.#pending.delete(id);
    // Only the first answer with the initialize request's id is initialize's: a client may use the id again later.
    const answersInitialize = id === this.#initializeId && this.#protocolVersion === undefined;
    if (answersInitialize && 'result' in message) this.#protocolVersion = String(message.result.protocolVersion);
    const serialized = JSON.stringify(message);
    const written = exchange.streaming ? sseEventOf(serialized) : serialized;
    // A streamed answer is written at once and needs keeping only as answered.
    exchange.answers.set(id, exchange.streaming ? '' : serialized);
    if (!this.#hold(exchange, Buffer.byteLength(written))) return;
    if (exchange.streaming) exchange.res.write(written);
    if (this.#complete(exchange)) this.#finish(exchange, answersInitialize && 'error' in message);
  }

  /** Sends a message from the server: an answer to its exchange, anything else beside the request it is about or on the GET stream. */
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (!('method' in message)) {
      this.sendAnswer(message);
      return Promise.resolve();
    }
    const related = options?.relatedRequestId === undefined ? undefined : this.#pending.get(options.relatedRequestId);
    if (related !== undefined) {
      if (!related.streaming) this.#stream(related);
      this.#writeNotice(related.res, message);
      this.#noteAsk(related, message);
      return Promise.resolve();
    }
    if (this.#standalone !== undefined) {
      this.#writeNotice(this.#standalone.res, message);
      return Promise.resolve();
    }
    // A notification nobody listens for is dropped, as the protocol allows; a request must fail so its caller does not wait for a timeout.
    if ('id' in message) return Promise.reject(new Error(`no open stream of session ${this.sessionId} can carry the ${message.method} request`));
    return Promise.resolve();
  }

  /**
   * Takes `bytes` more of an exchange's answers from its client's budget. A
   * client that does not read its answers, or batches more of them than its
   * share, would otherwise make the host hold them without bound (review R7
   * N3): past the share, the exchange ends. Its connection is destroyed, as
   * a refusal could not be delivered to a client that is not reading, and
   * its requests still running are cancelled, as when the client goes away.
   */
  #hold(exchange: Exchange, bytes: number): boolean {
    if (exchange.budget === undefined) return true;
    if (exchange.budget.take(bytes)) {
      exchange.held += bytes;
      return true;
    }
    this.#abandon(exchange, 'the client holds more unread answers than its share of http.maxBodyBytesInFlight');
    exchange.answers.clear();
    exchange.res.destroy();
    return false;
  }

  /** Turns an exchange's answer into an SSE stream, for messages sent before its answers. */
  #stream(exchange: Exchange): void {
    exchange.streaming = true;
    exchange.res.writeHead(200, { ...EVENT_STREAM_HEADERS, 'mcp-session-id': this.sessionId });
    exchange.keepAlive = keepAlive(exchange.res, this.#sseKeepAliveMs);
    // Answers of the batch that came before the stream began go first, or they would never be written.
    for (const id of exchange.answers.keys()) {
      const serialized = exchange.answers.get(id);
      if (serialized === undefined) continue;
      exchange.res.write(sseEventOf(serialized));
      exchange.answers.set(id, '');
    }
  }

  /**
   * Writes the last of an exchange's answer; a refused initialize closes the session it would have opened. Requests
   * the client cancelled are left out; when that leaves nothing to say, the answer is an SSE stream that ends at once
   * (a POST of requests is answered with JSON or SSE, and the SDK's client, like the spec, reads an empty stream
   * ending as no message; it would not resume it, as it carries no event id).
   */
  #finish(exchange: Exchange, initializeRefused: boolean): void {
    this.#release(exchange);
    if (exchange.streaming) exchange.res.end();
    else {
      // A POST that is not a batch carries one request: its answer is the body, with no array made for it.
      let body = exchange.batch ? undefined : exchange.answers.get(exchange.ids[0] as RequestId);
      if (exchange.batch) {
        const answers: string[] = [];
        for (const id of exchange.ids) {
          const answer = exchange.answers.get(id);
          if (answer !== undefined) answers.push(answer);
        }
        // As JSON.stringify of the array of answers would write it, without serializing the answers again.
        if (answers.length > 0) body = `[${answers.join(',')}]`;
      }
      if (body === undefined) {
        exchange.res.writeHead(200, { ...EVENT_STREAM_HEADERS, 'mcp-session-id': this.sessionId }).end();
        return;
      }
      const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      if (!initializeRefused) headers['mcp-session-id'] = this.sessionId;
      exchange.res.writeHead(200, headers).end(body);
      // The body is queued now; the answers need not be held twice until it is written out.
      exchange.answers.clear();
    }
    if (initializeRefused) void this.close();
  }

  #release(exchange: Exchange): void {
    if (!this.#exchanges.delete(exchange)) return;
    clearInterval(exchange.keepAlive);
    for (const id of exchange.ids) if (this.#pending.get(id) === exchange) this.#pending.delete(id);
    if (exchange.asking !== undefined) for (const id of exchange.asking) if (this.#asked.get(id) === exchange) this.#asked.delete(id);
  }

  /** Ends every open answer and stream and tells the `Server` the session is over. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    for (const exchange of this.#exchanges.keys()) {
      this.#release(exchange);
      writeJsonRpcError(exchange.res, 404, TRANSPORT_ERROR_CODES.sessionNotFound, 'Session closed');
    }
    if (this.#standalone !== undefined) {
      clearInterval(this.#standalone.keepAlive);
      this.#standalone.res.end();
      this.#standalone = undefined;
    }
    this.#route?.close();
    this.onclose?.();
    return Promise.resolve();
  }
}
