/**
 * A lean MCP client over Streamable HTTP for the gateway throughput bench:
 * node:http with a keep-alive agent of one socket, JSON POSTs, nothing but
 * what the protocol asks of a client calling tools on an initialized
 * session. It accepts both `application/json` and `text/event-stream`
 * answers, as every Streamable HTTP client must, and checks each answer is
 * the result of its own request. It exists so that a bench measures the
 * server: the SDK's HTTP client spends more CPU per call than the gateway.
 */
import { Agent, request, type IncomingMessage } from 'node:http';

const PROTOCOL_VERSION = '2025-06-18';

interface Answer {
  readonly id?: unknown;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly code: number; readonly message: string };
}

/** The JSON-RPC answers an HTTP answer carries, whether one JSON body or SSE events. */
function answersOf(res: IncomingMessage, body: string): Answer[] {
  const type = res.headers['content-type'] ?? '';
  if (type.startsWith('application/json')) {
    const parsed = JSON.parse(body) as Answer | Answer[];
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  if (!type.startsWith('text/event-stream')) throw new Error(`answer of type ${type} (status ${res.statusCode ?? 0}): ${body}`);
  const answers: Answer[] = [];
  for (const event of body.split('\n\n')) {
    const data = event
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data !== '') answers.push(JSON.parse(data) as Answer);
  }
  return answers;
}

/** One MCP session on one keep-alive connection, one request at a time. */
export class LeanMcpHttpClient {
  readonly #url: URL;
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });
  readonly #headers: Record<string, string>;
  #nextId = 1;

  constructor(url: string, token: string) {
    this.#url = new URL(url);
    this.#headers = { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
  }

  #post(message: unknown, method = 'POST'): Promise<{ res: IncomingMessage; body: string }> {
    const payload = message === undefined ? '' : JSON.stringify(message);
    return new Promise((resolve, reject) => {
      const req = request(this.#url, { method, agent: this.#agent, headers: { ...this.#headers, 'content-length': String(Buffer.byteLength(payload)) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ res, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Opens the session: initialize, then notifications/initialized. */
  async initialize(): Promise<void> {
    const { res, body } = await this.#post({
      jsonrpc: '2.0',
      id: this.#nextId++,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench-lean', version: '0.0.0' } },
    });
    const session = res.headers['mcp-session-id'];
    if (res.statusCode !== 200 || typeof session !== 'string') throw new Error(`initialize refused (status ${res.statusCode ?? 0}): ${body}`);
    this.#headers['mcp-session-id'] = session;
    this.#headers['mcp-protocol-version'] = PROTOCOL_VERSION;
    const initialized = await this.#post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    if (initialized.res.statusCode !== 202) throw new Error(`notifications/initialized refused (status ${initialized.res.statusCode ?? 0})`);
  }

  /** Calls a tool; the result, or a rejection when the answer is an error or not this request's. */
  async callTool(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    const { res, body } = await this.#post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    const answer = answersOf(res, body).find((message) => message.id === id);
    if (answer?.result === undefined || answer.result.isError === true) throw new Error(`tools/call ${name} failed (status ${res.statusCode ?? 0}): ${body}`);
    return answer.result;
  }

  /** Ends the session (DELETE) and the connection. */
  async close(): Promise<void> {
    await this.#post(undefined, 'DELETE').catch(() => undefined);
    this.#agent.destroy();
  }
}
