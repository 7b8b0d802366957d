/**
 * The cheapest honest MCP client over Streamable HTTP, for the gateway
 * throughput bench: one `node:net` connection per session, HTTP/1.1
 * keep-alive, one `tools/call` in flight at a time. The request's bytes are
 * built once per connection (the bearer token, `Mcp-Session-Id`,
 * `MCP-Protocol-Version`, Accept and Content-Type headers, the tool and its
 * arguments); only the JSON-RPC id and the Content-Length that follows from
 * it change per call. Of the answer it reads the status line and
 * Content-Length, then parses the JSON body and checks it is the result of
 * its own request and not a tool error; anything else (another status, a
 * streamed or chunked answer, an error, another id, a closed connection)
 * fails the call. The session is opened with `node:http` (initialize,
 * notifications/initialized) on a connection of its own.
 *
 * It exists so that the bench measures the gateway and not the client: the
 * node:http client (bench/support/leanMcpHttpClient.ts) spends more CPU per
 * call on its own request and response machinery than the gateway does.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';

const PROTOCOL_VERSION = '2025-06-18';
const HEAD_END = Buffer.from('\r\n\r\n');

interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** One POST or DELETE over `node:http` without keep-alive, for the session's opening and closing. */
function exchange(url: URL, method: string, headers: Readonly<Record<string, string>>, message?: unknown): Promise<Reply> {
  const payload = message === undefined ? '' : JSON.stringify(message);
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false, headers: { ...headers, 'content-length': String(Buffer.byteLength(payload)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

interface Waiting {
  readonly id: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** One MCP session on one keep-alive `node:net` connection, one `tools/call` at a time. */
export class RawMcpHttpClient {
  readonly #url: URL;
  readonly #headers: Record<string, string>;
  #socket: Socket | undefined;
  #head = '';
  #bodyStart = '';
  #bodyEnd = '';
  #nextId = 1;
  #received: Buffer = Buffer.alloc(0);
  #waiting: Waiting | undefined;

  constructor(url: string, token: string) {
    this.#url = new URL(url);
    this.#headers = { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
  }

  /** Opens the session (initialize, then notifications/initialized) and the connection its calls of `name` with `args` go on. */
  async open(name: string, args: Record<string, unknown>): Promise<void> {
    const init = await exchange(this.#url, 'POST', this.#headers, {
      jsonrpc: '2.0',
      id: this.#nextId++,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench-raw', version: '0.0.0' } },
    });
    const session = init.headers['mcp-session-id'];
    if (init.status !== 200 || typeof session !== 'string') throw new Error(`initialize refused (status ${init.status}): ${init.body}`);
    this.#headers['mcp-session-id'] = session;
    this.#headers['mcp-protocol-version'] = PROTOCOL_VERSION;
    const initialized = await exchange(this.#url, 'POST', this.#headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
    if (initialized.status !== 202) throw new Error(`notifications/initialized refused (status ${initialized.status})`);
    const lines = [`POST ${this.#url.pathname} HTTP/1.1`, `host: ${this.#url.host}`, 'connection: keep-alive', ...Object.entries(this.#headers).map(([key, value]) => `${key}: ${value}`)];
    this.#head = `${lines.join('\r\n')}\r\ncontent-length: `;
    const [start, end] = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name, arguments: args } }).split('"id":0');
    if (start === undefined || end === undefined) throw new Error('the request template has no id');
    this.#bodyStart = `${start}"id":`;
    this.#bodyEnd = end;
    const socket = connect(Number(this.#url.port), this.#url.hostname);
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => this.#fail(new Error('the gateway closed the connection')));
    this.#socket = socket;
  }

  /** Calls the tool once; rejects unless the answer is a 200 JSON body holding this request's result, not a tool error. */
  call(): Promise<void> {
    const socket = this.#socket;
    if (socket === undefined || this.#waiting !== undefined) return Promise.reject(new Error('not open, or a call is already in flight'));
    const id = this.#nextId++;
    const body = `${this.#bodyStart}${id}${this.#bodyEnd}`;
    return new Promise((resolve, reject) => {
      this.#waiting = { id, resolve, reject };
      socket.write(`${this.#head}${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  #onData(chunk: Buffer): void {
    this.#received = this.#received.length === 0 ? chunk : Buffer.concat([this.#received, chunk]);
    const headEnd = this.#received.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const head = this.#received.toString('latin1', 0, headEnd);
    const status = Number(head.slice(9, 12));
    const lengthAt = head.toLowerCase().indexOf('\r\ncontent-length:');
    if (lengthAt < 0) return this.#fail(new Error(`an answer without Content-Length (status ${status}), so not one JSON body: ${head}`));
    const lineEnd = head.indexOf('\r\n', lengthAt + 2);
    const length = Number(head.slice(lengthAt + 17, lineEnd < 0 ? undefined : lineEnd).trim());
    const bodyStart = headEnd + HEAD_END.length;
    if (this.#received.length < bodyStart + length) return;
    const body = this.#received.toString('utf8', bodyStart, bodyStart + length);
    this.#received = this.#received.subarray(bodyStart + length);
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined || this.#received.length > 0) return this.#fail(new Error(`an answer nobody asked for: ${body}`), waiting);
    let answer: { jsonrpc?: unknown; id?: unknown; result?: { isError?: unknown }; error?: unknown };
    try {
      answer = JSON.parse(body) as typeof answer;
    } catch {
      return waiting.reject(new Error(`an answer that is not JSON (status ${status}): ${body}`));
    }
    if (status !== 200 || answer.jsonrpc !== '2.0' || answer.id !== waiting.id || typeof answer.result !== 'object' || answer.result === null || answer.result.isError === true) {
      return waiting.reject(new Error(`tools/call ${waiting.id} failed (status ${status}): ${body}`));
    }
    waiting.resolve();
  }

  #fail(error: Error, waiting = this.#waiting): void {
    this.#waiting = undefined;
    this.#socket?.destroy();
    this.#socket = undefined;
    waiting?.reject(error);
  }

  /** Ends the session (DELETE) and the connection. */
  async close(): Promise<void> {
    const socket = this.#socket;
    this.#socket = undefined;
    socket?.removeAllListeners('close');
    socket?.destroy();
    await exchange(this.#url, 'DELETE', this.#headers).catch(() => undefined);
  }
}
