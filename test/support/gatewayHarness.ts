/** Shared pieces of the gateway tests: gateways and SDK clients that close themselves, and the host code a gateway answer carries. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach } from 'vitest';
import { serveGateway, type GatewayHandle, type GatewayOptions } from '../../src/index.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { HostPool, removePackages } from './hostHarness.js';

/** An SDK client connected to a gateway over Streamable HTTP, with its transport (to end or inspect its session). */
export interface HttpClient {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

/** The result `_meta` key of a failed call's host error, spelled out here so that the tests pin what clients read. */
const ERROR_META = 'io.github.mcp-plugin-host/error';

/** Serves gateways and connects SDK clients for a test, and closes them afterwards (clients first). */
export class GatewayPool {
  readonly #gateways: GatewayHandle[] = [];
  readonly #clients: Client[] = [];

  /** `serveGateway(host, options)`, closed by {@link GatewayPool.cleanup}; a failure to serve fails the test. */
  async serve(host: PluginHost, options: GatewayOptions): Promise<GatewayHandle> {
    const served = await serveGateway(host, options);
    if (served.isErr()) throw served.error;
    this.#gateways.push(served.value);
    return served.value;
  }

  /** A client named `name` connected to the gateway at `url` with `token` as its bearer token, closed by {@link GatewayPool.cleanup}. */
  async connectHttp(url: string, token: string, name: string, capabilities: ClientCapabilities = {}): Promise<HttpClient> {
    const client = new Client({ name, version: '1.0.0' }, { capabilities });
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    await client.connect(transport);
    this.#clients.push(client);
    return { client, transport };
  }

  /** Closes `gateway` with the others, for a gateway served by the test itself (to see its error when it fails). */
  keepGateway(gateway: GatewayHandle): GatewayHandle {
    this.#gateways.push(gateway);
    return gateway;
  }

  /** Closes `client` with the others, for a client connected some other way (stdio). */
  keep(client: Client): Client {
    this.#clients.push(client);
    return client;
  }

  /** Closes every client, then every gateway. */
  async cleanup(): Promise<void> {
    await Promise.all(this.#clients.splice(0).map((c) => c.close()));
    await Promise.all(this.#gateways.splice(0).map((g) => g.close()));
  }
}

/**
 * The pools of a gateway test file: hosts (with their profiles) and gateways
 * (with their clients), closed after each test, gateways first; the fixtures
 * the file packaged are removed after its last test.
 */
export function gatewayTestPools(): { readonly pool: HostPool; readonly gateways: GatewayPool } {
  const pool = new HostPool();
  const gateways = new GatewayPool();
  afterEach(async () => {
    await gateways.cleanup();
    await pool.cleanup();
  });
  afterAll(() => removePackages());
  return { pool, gateways };
}

/** The host code a gateway tool result carries for a failed call. */
export function resultErrorCode(result: CallToolResult): unknown {
  return (result._meta?.[ERROR_META] as { code?: unknown } | undefined)?.code;
}

/** The host code of the JSON-RPC error a gateway request is answered with; fails when it is answered otherwise. */
export async function requestErrorCode(request: Promise<unknown>): Promise<unknown> {
  const failure = await request.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(failure instanceof McpError)) throw new Error(`expected an McpError, got ${String(failure)}`);
  return (failure.data as { code?: unknown } | undefined)?.code;
}

/** A raw Streamable HTTP session on a gateway: `post` sends a JSON-RPC body (a string is sent as written) with the token and the session's headers. */
export interface RawHttpSession {
  readonly session: Readonly<Record<string, string>>;
  post(body: unknown, signal?: AbortSignal): Promise<Response>;
}

/** POSTs `initialize` and `notifications/initialized` with fetch, as a client that speaks the protocol by hand does. */
export async function openRawHttpSession(url: string, token: string, protocolVersion: string, clientName: string): Promise<RawHttpSession> {
  const send = (body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> =>
    fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...(signal === undefined ? {} : { signal }),
    });
  const opened = await send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: clientName, version: '1' } } }, {});
  await opened.body?.cancel();
  const session = { 'mcp-session-id': opened.headers.get('mcp-session-id') ?? '', 'mcp-protocol-version': protocolVersion };
  await (await send({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).body?.cancel();
  return { session, post: (body, signal) => send(body, session, signal) };
}
