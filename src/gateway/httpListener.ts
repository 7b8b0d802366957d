/**
 * The gateway's Streamable HTTP side: a node:http server on loopback by
 * default, where every request must carry a known bearer token and, when it
 * has an Origin, an allowed one. Each MCP session has its own transport (the
 * gateway's own, in streamableHttpTransport.ts) and server and belongs to the
 * token that opened it.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { BlockList, isIP, type AddressInfo, type Socket } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { errAsync, ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { BearerTokens, tokenDigest, type TokenHolder } from './bearerTokens.js';
import type { GatewayClientPolicy } from './clientPolicy.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';
import { lastVerdictOf } from './lastVerdict.js';
import { HttpSessionTransport, isInitialize, readPostedMessages, TRANSPORT_ERROR_CODES, writeJsonRpcError, type BodyBudget, type PostLimits } from './streamableHttpTransport.js';
import { tokenFromFile, weakToken } from './tokenFile.js';

/** An HTTP client known by its own bearer token, with its own policy. */
export interface GatewayHttpClient {
  /** A name for logs and docs. */
  readonly name: string;
  /** The bearer token it presents. */
  readonly token: string;
  /**
   * The file `token` was read from. The gateway reads it again every second (`tokenFileCheckMs`) and, when its first
   * line changed, takes that as the client's token and refuses the old one from then on (docs/gateway.md, "HTTP
   * security"). {@link resolveGatewayConfig} sets it for `{ "file": ... }` token sources.
   */
  readonly tokenFile?: string;
  /** What it may see and call. */
  readonly policy: GatewayClientPolicy;
}

/** The HTTP transport's options. */
export interface GatewayHttpOptions {
  /** The address to bind. Default `127.0.0.1`. */
  readonly host?: string;
  /** The port; 0 picks a free one. Default 8765. */
  readonly port?: number;
  /** The default bearer token (the gateway's `policy` applies to it). Default: read from `tokenFile`, or generated; read it from {@link GatewayHandle.token}. */
  readonly token?: string;
  /** The file the default token is read from, and read again as {@link GatewayHttpClient.tokenFile} is; read at start when `token` is not given. */
  readonly tokenFile?: string;
  /** Hears what an operator should know and no client is told: a token file whose token changed, or that cannot give one (the token stays). */
  readonly onNotice?: (message: string) => void;
  /** Clients with their own tokens and policies. */
  readonly clients?: readonly GatewayHttpClient[];
  /** Origins (`scheme://host[:port]`) accepted besides loopback ones. */
  readonly allowedOrigins?: readonly string[];
  /**
   * MCP sessions open at once, all tokens together; one more initialize is refused with 503. Default 256. Each client
   * (the default token and every one of `clients`) holds at most its share, `maxSessions` divided by the number of
   * clients (at least 1), so that one token cannot take every session and lock the others out.
   */
  readonly maxSessions?: number;
  /** Time a session may go without a request (and hold no open stream) before the gateway closes it, in ms. Default 15 minutes. */
  readonly sessionIdleMs?: number;
  /**
   * HTTP connections open at once, with or without a token; one more is closed as it arrives, so that whoever reaches
   * the port cannot take every file descriptor of the host's process (no plugin could start then). Default 2048.
   */
  readonly maxConnections?: number;
  /**
   * Bytes of request bodies held at once, all clients together: a body is held from its first byte until its answer
   * ends (its messages wait for plugins meanwhile), and one past the bound is answered 503. Each client holds at most
   * its share, this divided by the number of clients but never less than one largest body, so that one token
   * posting on many connections cannot take the host's memory (with every plugin it runs) nor lock the others out.
   * Default 64 MiB.
   */
  readonly maxBodyBytesInFlight?: number;
}

/** A listening HTTP side. */
export interface HttpListener {
  /** The MCP endpoint. */
  readonly url: string;
  /** The default bearer token: the one it started with, even after its file changed. */
  readonly token: string;
  /** MCP sessions open now. */
  readonly sessions: number;
  /** Stops accepting and ends every session. */
  close(): Promise<void>;
}

/** The Authorization header a connection's last authenticated request carried, the client it named, and when. */
interface AcceptedAuthorization {
  readonly header: Buffer;
  readonly client: TokenHolder;
  /** The tokens' generation it was accepted under; after a rotation it is checked anew. */
  readonly generation: number;
}

interface Session {
  readonly transport: HttpSessionTransport;
  /** The client that opened it: a session belongs to the client, not to the token it held then, and outlives a rotation. */
  readonly owner: TokenHolder;
  /** When its last request ended (or began), by `performance.now()`. */
  lastSeen: number;
  /** Its requests still open (an SSE stream counts until it closes). */
  open: number;
}

const MCP_PATH = '/mcp';

/** Whether a URL (an Origin) names this machine by a loopback host name. */
function loopbackUrl(url: string): boolean {
  return GATEWAY_DEFAULTS.loopbackHostnames.includes(hostnameOf(url) ?? '');
}

/** The host name of a URL as WHATWG URL writes it (IPv4 numbers normalized, IPv6 in brackets), or undefined. */
function hostnameOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

/** The loopback addresses: all of 127.0.0.0/8 (Linux answers on each), ::1 and IPv4-mapped 127.x. */
const LOOPBACK_ADDRESSES = new BlockList();
LOOPBACK_ADDRESSES.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK_ADDRESSES.addAddress('::1', 'ipv6');
LOOPBACK_ADDRESSES.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** Whether `address` (an IP literal, IPv6 without brackets) is a loopback address. */
function loopbackAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && LOOPBACK_ADDRESSES.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

function refuse(res: ServerResponse, status: number, message: string, headers: Readonly<Record<string, string>> = {}): void {
  writeJsonRpcError(res, status, TRANSPORT_ERROR_CODES.refused, message, headers);
}

const ALLOWED_METHODS = { allow: 'GET, POST, DELETE' };

/** A client's limits on its POSTs, with the budget its bodies, answers and the plugin requests waiting for it share. */
type ClientLimits = PostLimits & { readonly budget: BodyBudget };

/** Limits under which no body is read (answered 503). */
const NO_BODIES: ClientLimits = { maxBytes: 0, maxBatch: 0, budget: { take: () => false, give: () => undefined } };

/** Makes a new session's server; `budget` is its client's share of `maxBodyBytesInFlight`, the same object for each of the client's sessions. */
type SessionServer = (policy: GatewayClientPolicy, clientName: string, transport: HttpSessionTransport, budget: BodyBudget) => Server;

/** Starts the HTTP side; `connect` makes the MCP server of one new session, which the listener connects to the session's transport. */
export function listenHttp(options: GatewayHttpOptions, defaultPolicy: GatewayClientPolicy, connect: SessionServer): ResultAsync<HttpListener, HostError> {
  const notice = options.onNotice ?? ((): void => undefined);
  if (options.token !== undefined || options.tokenFile === undefined) return listenWith(options.token ?? randomBytes(GATEWAY_DEFAULTS.tokenBytes).toString('base64url'), options, defaultPolicy, connect);
  const file = options.tokenFile;
  const warnings: string[] = [];
  return ResultAsync.fromSafePromise(tokenFromFile(file, warnings)).andThen((read) => {
    for (const warning of warnings) notice(warning);
    return read.isOk() ? listenWith(read.value, options, defaultPolicy, connect) : errAsync(hostError('HOST_INVALID_OPTIONS', `token file ${file} ${read.error}`, { details: { option: 'http.tokenFile' } }));
  });
}

function listenWith(token: string, options: GatewayHttpOptions, defaultPolicy: GatewayClientPolicy, connect: SessionServer): ResultAsync<HttpListener, HostError> {
  const clients: readonly GatewayHttpClient[] = [
    { name: GATEWAY_DEFAULTS.defaultClientName, token, ...(options.tokenFile === undefined ? {} : { tokenFile: options.tokenFile }), policy: defaultPolicy },
    ...(options.clients ?? []),
  ];
  const weak = clients.find((c) => weakToken(c.token) !== undefined);
  if (weak !== undefined) {
    return errAsync(hostError('HOST_INVALID_OPTIONS', `a gateway bearer token needs at least ${GATEWAY_DEFAULTS.minTokenLength} characters and no spaces`, { details: { option: 'http.token' } }));
  }
  // One token, one policy: a token shared by two clients would make the policy depend on their order.
  if (new Set(clients.map((c) => c.token)).size !== clients.length) {
    return errAsync(hostError('HOST_INVALID_OPTIONS', 'two gateway clients have the same bearer token', { details: { option: 'http.clients' } }));
  }
  const maxSessions = options.maxSessions ?? GATEWAY_DEFAULTS.maxSessions;
  const sessionIdleMs = options.sessionIdleMs ?? GATEWAY_DEFAULTS.sessionIdleMs;
  const maxConnections = options.maxConnections ?? GATEWAY_DEFAULTS.maxConnections;
  const maxBodyBytes = options.maxBodyBytesInFlight ?? GATEWAY_DEFAULTS.maxBodyBytesInFlight;
  for (const [option, value] of [
    ['http.maxSessions', maxSessions],
    ['http.sessionIdleMs', sessionIdleMs],
    ['http.maxConnections', maxConnections],
    ['http.maxBodyBytesInFlight', maxBodyBytes],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) return errAsync(hostError('HOST_INVALID_OPTIONS', `${option} must be a positive whole number, not ${String(value)}`, { details: { option } }));
  }
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  const sessions = new Map<string, Session>();
  const share = Math.max(1, Math.floor(maxSessions / clients.length));
  const heldBy = (owner: TokenHolder): number => [...sessions.values()].filter((s) => s.owner === owner).length;
  // Bodies held at once: within the listener's bound, and each client within its share of it.
  let bodyBytes = 0;
  const bodyShare = Math.max(GATEWAY_DEFAULTS.maxRequestBytes, Math.floor(maxBodyBytes / clients.length));
  const limitsOf = (): ClientLimits => {
    let held = 0;
    const budget: BodyBudget = {
      take: (bytes) => {
        if (held + bytes > bodyShare || bodyBytes + bytes > maxBodyBytes) return false;
        held += bytes;
        bodyBytes += bytes;
        return true;
      },
      give: (bytes) => {
        held -= bytes;
        bodyBytes -= bytes;
      },
    };
    return { maxBytes: GATEWAY_DEFAULTS.maxRequestBytes, maxBatch: GATEWAY_DEFAULTS.maxBatchMessages, budget };
  };
  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (const session of sessions.values()) if (session.open === 0 && now - session.lastSeen > sessionIdleMs) void session.transport.close();
    },
    Math.max(1, Math.min(sessionIdleMs, GATEWAY_DEFAULTS.sessionSweepMs)),
  );
  sweep.unref();
  const bindHost = options.host ?? GATEWAY_DEFAULTS.bindHost;
  const bindName = hostnameOf(`http://${bindHost.includes(':') && !bindHost.startsWith('[') ? `[${bindHost}]` : bindHost}`);
  // A loopback address beyond the listed names (127.0.0.2) is loopback too: a DNS-rebound page reaches it as well.
  const loopbackBind = GATEWAY_DEFAULTS.loopbackHostnames.includes(bindName ?? '') || loopbackAddress(bindHost.replace(/^\[(.*)\]$/, '$1'));

  /** A request counts as activity until its answer (an SSE stream included) closes. */
  const track = (session: Session, res: ServerResponse): void => {
    session.open += 1;
    session.lastSeen = performance.now();
    // 'on', not 'once': a ServerResponse emits 'close' once (Node guards it), and once() wraps the listener in two more objects per request.
    res.on('close', () => {
      session.open -= 1;
      session.lastSeen = performance.now();
    });
  };

  const holders = clients.map((c): TokenHolder => ({ name: c.name, policy: c.policy, tokenFile: c.tokenFile, token: c.token, digest: tokenDigest(c.token) }));
  const postLimits = new Map(holders.map((h) => [h, limitsOf()] as const));
  // A rotated token ends the GET streams of its client's sessions: they were opened with a token that is refused now.
  const tokens = new BearerTokens(holders, GATEWAY_DEFAULTS.tokenFileCheckMs, options.onNotice ?? ((): void => undefined), (holder) => {
    for (const session of sessions.values()) if (session.owner === holder) session.transport.endStream();
  });
  const accepted = new WeakMap<Socket, AcceptedAuthorization>();
  const clientOf = (req: IncomingMessage): TokenHolder | undefined => {
    const header = req.headers.authorization ?? '';
    const last = accepted.get(req.socket);
    // A keep-alive connection presenting the header it was last accepted with, under the tokens of now. A proxy may carry another
    // user's requests on the same connection, so the comparison must not tell how much of the accepted header they guessed:
    // constant-time, after a length check.
    const presented = Buffer.from(header);
    if (last !== undefined && last.generation === tokens.generation && last.header.length === presented.length && timingSafeEqual(last.header, presented)) return last.client;
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const given = match?.[1];
    if (given === undefined) return undefined;
    const client = tokens.holderOf(given);
    if (client !== undefined) accepted.set(req.socket, { header: presented, client, generation: tokens.generation });
    return client;
  };
  const loopbackOrigin = lastVerdictOf(loopbackUrl);
  // A loopback name, or the address bound (a client of 127.0.0.2 names it).
  const loopbackHost = lastVerdictOf((host) => {
    const name = hostnameOf(`http://${host}`);
    return name !== undefined && (GATEWAY_DEFAULTS.loopbackHostnames.includes(name) || name === bindName);
  });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // A failure is caught here, not with .catch() on the call: that made a promise and a closure per request.
    try {
      const origin = req.headers.origin;
      if (origin !== undefined && !loopbackOrigin(origin) && !allowedOrigins.has(origin)) return refuse(res, 403, `origin ${origin} is not allowed`);
      // On loopback, a Host that is not a loopback name is a DNS-rebound page even when it sends no Origin.
      if (loopbackBind && !loopbackHost(req.headers.host ?? '')) return refuse(res, 403, `host ${req.headers.host ?? '(none)'} is not allowed`);
      if (req.url !== MCP_PATH && new URL(req.url ?? '/', 'http://gateway').pathname !== MCP_PATH) return refuse(res, 404, `the MCP endpoint is ${MCP_PATH}`);
      const client = clientOf(req);
      if (client === undefined) return refuse(res, 401, 'a valid bearer token is required', { 'www-authenticate': 'Bearer' });
      // Every holder has its limits; a client that had none would read no body.
      const limits = postLimits.get(client) ?? NO_BODIES;
      const sessionId = req.headers['mcp-session-id'];
      if (typeof sessionId === 'string') {
        const session = sessions.get(sessionId);
        // Another token's session is as unknown to this client as a session that never existed.
        if (session === undefined || session.owner !== client) return writeJsonRpcError(res, 404, TRANSPORT_ERROR_CODES.sessionNotFound, 'unknown session');
        track(session, res);
        switch (req.method) {
          case 'POST': {
            const posted = await readPostedMessages(req, res, limits);
            if (posted !== undefined) session.transport.handlePost(req, res, posted);
            return;
          }
          case 'GET':
            return session.transport.handleGet(req, res);
          case 'DELETE':
            // Awaited: a rejection returned from inside the try would pass its catch.
            return await session.transport.handleDelete(req, res);
          default:
            return refuse(res, 405, `method ${req.method ?? '(none)'} is not allowed`, ALLOWED_METHODS);
        }
      }
      if (req.method !== 'POST') {
        return req.method === 'GET' || req.method === 'DELETE' ? refuse(res, 400, 'Bad Request: Mcp-Session-Id header is required') : refuse(res, 405, `method ${req.method ?? '(none)'} is not allowed`, ALLOWED_METHODS);
      }
      const posted = await readPostedMessages(req, res, limits);
      if (posted === undefined) return;
      // Only an initialize opens a session; anything else without one belongs to no session.
      if (!posted.messages.some(isInitialize)) return refuse(res, 400, 'Bad Request: Mcp-Session-Id header is required');
      if (posted.messages.length > 1) return writeJsonRpcError(res, 400, ErrorCode.InvalidRequest, 'Invalid Request: an initialize request comes alone');
      if (sessions.size >= maxSessions) return refuse(res, 503, `the gateway serves at most ${maxSessions} sessions; close one or retry later`, { 'retry-after': '1' });
      if (heldBy(client) >= share) return refuse(res, 503, `a client holds at most ${share} of the gateway's ${maxSessions} sessions; close one or retry later`, { 'retry-after': '1' });
      const transport = new HttpSessionTransport(randomUUID(), GATEWAY_DEFAULTS.sseKeepAliveMs);
      // Registered before the first await, so a burst of initializes cannot open more sessions than the caps allow.
      const session: Session = { transport, owner: client, lastSeen: performance.now(), open: 0 };
      sessions.set(transport.sessionId, session);
      track(session, res);
      transport.onclose = () => sessions.delete(transport.sessionId);
      await connect(client.policy, client.name, transport, limits.budget).connect(transport);
      transport.handlePost(req, res, posted);
    } catch {
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.end();
    }
  };

  const http = createServer((req, res) => void handle(req, res));
  http.keepAliveTimeout = GATEWAY_DEFAULTS.httpKeepAliveMs;
  http.maxConnections = maxConnections;
  const port = options.port ?? GATEWAY_DEFAULTS.port;
  return ResultAsync.fromPromise(
    new Promise<AddressInfo>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, bindHost, () => resolve(http.address() as AddressInfo));
    }),
    (cause) => {
      clearInterval(sweep);
      tokens.stop();
      return hostError('GATEWAY_LISTEN_FAILED', `the gateway cannot listen on ${bindHost}:${port}`, { cause, details: { host: bindHost, port } });
    },
  ).map((address): HttpListener => {
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return {
      url: `http://${shown}:${address.port}${MCP_PATH}`,
      token,
      get sessions() {
        return sessions.size;
      },
      close: async () => {
        clearInterval(sweep);
        tokens.stop();
        await Promise.all([...sessions.values()].map((s) => s.transport.close()));
        sessions.clear();
        http.closeAllConnections();
        await new Promise<void>((resolve) => http.close(() => resolve()));
      },
    };
  });
}
