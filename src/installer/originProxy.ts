/**
 * The proxy a package manager runs behind while it installs a package: it
 * passes requests to a fixed set of origins (`host:port`) and refuses every
 * other one, recording what it refused. npm runs on the host behind it
 * (npmProxy.ts: the registry's origin), pip inside its confinement
 * (installConfinement.ts: the index's origin and the origins its files are
 * served from). Either way a package, at any depth of its tree, cannot make
 * the install send a request to an address it names: a service of the
 * host's network, a cloud metadata address, a server that learns who
 * installs the package. The refused request ends here, and the package
 * manager's failure names its URL.
 *
 * It serves connections from a loopback listener of its own
 * ({@link OriginOnlyProxy.listen}, for npm on the host) or from listeners
 * opened elsewhere and handed to the host ({@link OriginOnlyProxy.serve}: a
 * confinement's own network namespace has no route out, and the only socket
 * its loopback proxy address leads to is one the host accepts on).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { LookupAddress } from 'node:dns';
import { lookup as resolve } from 'node:dns/promises';
import { connect, isIP, type AddressInfo, type LookupFunction, type Server, type Socket } from 'node:net';
import bounds from '../../etc/install-proxy.json' with { type: 'json' };
import { isOwnInterfaceAddress, ownInterfaceAddresses, refusedKind } from '../egress/addresses.js';
import { readClientHello, type ClientHelloReading } from './clientHello.js';

/** A proxy that admits a fixed set of origins. */
export interface OriginOnlyProxy {
  /**
   * The URLs it refused, in order (`https://host:port` for a refused tunnel;
   * `https://name:port (through host:port)` for an admitted tunnel whose TLS
   * server name was another's, `https://host:port (why)` for one without a
   * readable ClientHello).
   */
  readonly refused: readonly string[];
  /**
   * The answers it would not dial (`name → address (kind), …`): an admitted
   * name whose every address is one only the host reaches. The first ones,
   * each once.
   */
  readonly hostOnly: readonly string[];
  /** The origins it admits, `host:port`, lower case. */
  readonly origins: readonly string[];
  /** Listens on 127.0.0.1 (an ephemeral port) and resolves to `http://127.0.0.1:<port>`. */
  listen(): Promise<string>;
  /** Serves every connection `listener` accepts (a listener opened in another network namespace and handed over). */
  serve(listener: Server): void;
  /** Stops listening (its own listener and the ones it serves) and ends the connections it holds. */
  close(): Promise<void>;
}

const defaultPort = (protocol: string): string => (protocol === 'https:' ? '443' : '80');

/** `host:port` of a URL, the port spelled out. */
export function originOf(url: URL): string {
  return `${url.hostname.toLowerCase()}:${url.port || defaultPort(url.protocol)}`;
}

/** `host:port` of a CONNECT target (`host:port`, `[v6]:port`). */
function connectTarget(target: string): { host: string; port: number; origin: string } | undefined {
  try {
    const url = new URL(`https://${target}`);
    const port = Number(url.port || '443');
    return { host: url.hostname.replace(/^\[|\]$/g, ''), port, origin: `${url.hostname.toLowerCase()}:${port}` };
  } catch {
    return undefined;
  }
}

/** The proxy's resolver: a `lookup` for its dials, and what to call once a dial connected. */
interface PinningResolver {
  readonly lookup: LookupFunction;
  /** Records the address a dial of `hostname` connected to: every later dial of that name goes there alone. */
  connected(hostname: string, socket: Socket): void;
}

/** The code of the error a dial fails with when every address of an admitted name's answer is one only the host reaches. */
export const HOST_ONLY_ANSWER = 'ERR_HOST_ONLY_ANSWER';

// `localhost` and names under it (RFC 6761) say loopback themselves: a local devpi or Verdaccio is named so on purpose.
const LOOPBACK_NAME = /(^|\.)localhost\.?$/i;
const hostOnlyKinds: ReadonlySet<string> = new Set(bounds.hostOnlyAddressKinds);

/**
 * The addresses of `hostname`'s answer the proxy may dial: for a name, none
 * that only the host reaches (its loopback, link-local and metadata
 * addresses, its own interfaces' addresses: etc/install-proxy.json
 * `hostOnlyAddressKinds`), whatever the name's DNS answers, except that
 * `localhost` names reach loopback and only loopback. An index or registry
 * whose owner answers its name with 127.0.0.1 or 169.254.169.254 from the
 * first look-up on (review R12, left open) led the code pip runs to the
 * host's own services; an address written in the URL is dialled as written,
 * since the user wrote it. Throws {@link HOST_ONLY_ANSWER} when none is left.
 */
function dialableAnswer(hostname: string, answer: readonly LookupAddress[]): LookupAddress[] {
  const addresses = answer.slice(0, bounds.maxAddressesPerName);
  const loopbackName = LOOPBACK_NAME.test(hostname);
  const own = loopbackName ? new Set<string>() : ownInterfaceAddresses();
  const kindOf = (address: string): string | undefined => {
    const kind = refusedKind(address);
    if (loopbackName) return kind === 'loopback' ? undefined : (kind ?? 'not loopback');
    if (kind !== undefined && hostOnlyKinds.has(kind)) return kind;
    return isOwnInterfaceAddress(address, own) ? 'self' : undefined;
  };
  const kept = addresses.filter(({ address }) => kindOf(address) === undefined);
  if (kept.length > 0 || addresses.length === 0) return kept;
  const seen = addresses.map(({ address }) => `${address} (${kindOf(address) ?? ''})`).join(', ');
  throw Object.assign(new Error(`${hostname} resolves to ${seen}, which only the host reaches`), { code: HOST_ONLY_ANSWER, answer: `${hostname} → ${seen}` });
}

/**
 * Resolves each host name once: until a dial of it connects, every dial is
 * offered that first answer whole (Node tries its addresses in turn, so a
 * host without IPv6 routes still reaches a dual-stack index), and from then
 * on the address it connected to alone. The system resolver, asked anew for
 * each connection, let a name whose DNS the index's (or the registry's)
 * owner answers lead first to their server and then to 127.0.0.1 or
 * 169.254.169.254 (DNS rebinding): the admitted origin then reached the
 * host's loopback services and the cloud metadata service (review R12 F4).
 * Pinning the connected address, not the answer, also keeps a first answer
 * of two addresses (theirs and a LAN one) from reaching the second by
 * refusing later connections to the first. Host-only addresses are never
 * offered ({@link dialableAnswer}).
 */
function pinningResolver(resolveName: (hostname: string) => Promise<LookupAddress[]>): PinningResolver {
  const answers = new Map<string, Promise<LookupAddress[]>>();
  const pinned = new Map<string, LookupAddress>();
  const lookup: LookupFunction = (hostname, options, callback) => {
    const address = pinned.get(hostname);
    let answer = address === undefined ? answers.get(hostname) : Promise.resolve([address]);
    if (answer === undefined) {
      answer = resolveName(hostname).then((addresses) => dialableAnswer(hostname, addresses));
      answers.set(hostname, answer);
      // A failed resolution (a host-only answer too) is not kept: the next dial asks again.
      answer.catch(() => answers.delete(hostname));
    }
    answer.then(
      (addresses) => {
        const first = addresses[0];
        if (options.all === true) callback(null, addresses);
        else if (first === undefined) callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
        else callback(null, first.address, first.family);
      },
      (cause: NodeJS.ErrnoException) => callback(cause, ''),
    );
  };
  const connected = (hostname: string, socket: Socket): void => {
    const { remoteAddress, remoteFamily } = socket;
    if (pinned.has(hostname) || remoteAddress === undefined || isIP(hostname) !== 0) return;
    pinned.set(hostname, { address: remoteAddress, family: remoteFamily === 'IPv6' ? 6 : 4 });
  };
  return { lookup, connected };
}

/** A refused URL as recorded: cut to `maxRefusedUrlChars` (Node's parser has already refused control characters in it). */
const recordable = (url: string): string => (url.length > bounds.maxRefusedUrlChars ? `${url.slice(0, bounds.maxRefusedUrlChars)}…` : url);

/** How the proxy dials: a resolver (tests answer names themselves) and the host's own proxy. */
export interface OriginProxyOptions {
  /** Resolves a name to its addresses. Default: the system resolver, every address. */
  readonly resolve?: (hostname: string) => Promise<LookupAddress[]>;
  /**
   * The host's own proxy for an origin (`http://host:port/` for a plain
   * request, `https://host:port/` for a tunnel), an `http:` proxy URL
   * (`http://user:password@proxy:port`), or undefined to dial the origin
   * directly (hostProxy.ts reads the host's settings). Through it the host's proxy resolves
   * and decides; the origin check and the tunnel's server name check stay.
   */
  readonly upstream?: (origin: URL) => URL | undefined;
}

/** The proxy's own address from a proxy URL's host name (an IPv6 literal without its brackets). */
const bare = (hostname: string): string => hostname.replace(/^\[|\]$/g, '');

/** The `proxy-authorization` header a proxy URL's user and password make, if it has them. */
function proxyAuthorization(proxy: URL): Record<string, string> {
  if (proxy.username === '' && proxy.password === '') return {};
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { 'proxy-authorization': `Basic ${Buffer.from(credentials).toString('base64')}` };
}

/**
 * A tunnel to `host:port` through the host's proxy at `proxy`: connects to
 * it, asks `CONNECT`, and resolves once it answered 200 (its answer's head
 * read up to `maxUpstreamHeadBytes`), with the socket that then carries the
 * tunnel. Any other answer rejects.
 */
function tunnelThrough(proxy: URL, authority: string): { socket: Socket; ready: Promise<void> } {
  const socket = connect({ host: bare(proxy.hostname), port: Number(proxy.port || '80') });
  const ready = new Promise<void>((opened, failed) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > bounds.maxUpstreamHeadBytes) failed(new Error(`the host's proxy ${proxy.host} answered CONNECT with a head over ${bounds.maxUpstreamHeadBytes} bytes`));
        return;
      }
      socket.off('data', onData);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1', 0, end))?.[1];
      if (status !== '200') {
        failed(Object.assign(new Error(`the host's proxy ${proxy.host} answered CONNECT ${authority} with ${status ?? 'no status'}`), { code: 'ERR_UPSTREAM_REFUSED' }));
        return;
      }
      // Bytes the origin sent right after the proxy's answer belong to the tunnel.
      if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
      opened();
    };
    socket.on('data', onData);
    socket.once('error', failed);
    socket.once('close', () => failed(new Error(`the host's proxy ${proxy.host} closed the connection before answering CONNECT`)));
    socket.once('connect', () => {
      const headers = Object.entries({ host: authority, ...proxyAuthorization(proxy) }).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`CONNECT ${authority} HTTP/1.1\r\n${headers.join('')}\r\n`);
    });
  });
  return { socket, ready };
}

// TLS alerts (RFC 8446 6): fatal, unrecognized_name (a server name other than the admitted host's) or access_denied.
const UNRECOGNIZED_NAME_ALERT = Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112]);
const ACCESS_DENIED_ALERT = Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49]);

/**
 * Waits for the first record `client` sends into its tunnel (`head` already
 * sent) and calls `decide` with what {@link readClientHello} reads in it and
 * the bytes received so far, which then belong to the origin. Buffers at
 * most one TLS record (the reader refuses a larger one first).
 */
function awaitClientHello(client: Socket, head: Buffer, decide: (reading: ClientHelloReading, received: Buffer) => void): void {
  const chunks: Buffer[] = head.length > 0 ? [head] : [];
  let length = head.length;
  let need = 1;
  const read = (): boolean => {
    if (length < need) return false;
    const received = Buffer.concat(chunks, length);
    chunks.splice(0, chunks.length, received);
    const reading = readClientHello(received);
    if (reading.kind === 'incomplete') {
      need = reading.need;
      return false;
    }
    client.off('data', onData);
    decide(reading, received);
    return true;
  };
  const onData = (chunk: Buffer): void => {
    chunks.push(chunk);
    length += chunk.length;
    read();
  };
  if (!read()) client.on('data', onData);
}

/**
 * Whether a ClientHello asks for the tunnel's own host: its server name is
 * the admitted host's; for an origin named by an IP address, none (a client
 * sends no server name for an address, RFC 6066 3).
 */
function tunnelRefusal(reading: ClientHelloReading, host: string): string | undefined {
  if (reading.kind === 'refused') return reading.reason;
  if (reading.kind !== 'hello') return 'an incomplete ClientHello';
  const wanted = isIP(host) === 0 ? host.toLowerCase().replace(/\.$/, '') : undefined;
  if (reading.serverName === wanted) return undefined;
  if (reading.serverName === undefined) return 'no TLS server name';
  return wanted === undefined ? `TLS server name ${reading.serverName} for an address` : `TLS server name ${reading.serverName}`;
}

/**
 * A proxy that forwards plain requests (absolute-form `http:` URLs) and
 * tunnels (`CONNECT host:port`) to `origins` only; anything else gets 403
 * with `refusal` as its body and is recorded. A tunnel carries bytes only
 * once the client's TLS ClientHello asks for the admitted host by name: the
 * address behind a name may serve other sites (a CDN), which a client picks
 * by the server name it sends. It listens nowhere until
 * {@link OriginOnlyProxy.listen} or {@link OriginOnlyProxy.serve}.
 */
export function originOnlyProxy(origins: readonly string[], refusal: string, options: OriginProxyOptions = {}): OriginOnlyProxy {
  const admitted = new Set(origins.map((origin) => origin.toLowerCase()));
  const refused: string[] = [];
  const hostOnly: string[] = [];
  // Code the install runs can send refused requests as fast as it connects: only the first ones are kept (review R12 F2).
  const refuse = (url: string): void => {
    if (refused.length < bounds.maxRefusedRecorded) refused.push(recordable(url));
  };
  const refuseHostOnly = (cause: unknown): boolean => {
    const { code, answer } = (cause ?? {}) as { code?: unknown; answer?: unknown };
    if (code !== HOST_ONLY_ANSWER) return false;
    const record = recordable(String(answer));
    if (hostOnly.length < bounds.maxRefusedRecorded && !hostOnly.includes(record)) hostOnly.push(record);
    return true;
  };
  const resolver = pinningResolver(options.resolve ?? ((hostname) => resolve(hostname, { all: true })));
  const { lookup } = resolver;
  const upstreamOf = options.upstream ?? (() => undefined);
  const sockets = new Set<Socket>();
  const served = new Set<Server>();
  // A connection that has not sent a request head (or a tunnel its ClientHello) in time is ended; a listener served by
  // hand gets none of Node's own header timeouts.
  const headDeadlines = new WeakMap<Socket, NodeJS.Timeout>();
  const headArrived = (socket: Socket): void => clearTimeout(headDeadlines.get(socket));
  const server: HttpServer = createServer((req: IncomingMessage, res: ServerResponse) => {
    let target: URL | undefined;
    try {
      target = new URL(req.url ?? '');
    } catch {
      target = undefined;
    }
    headArrived(req.socket);
    if (target === undefined || target.protocol !== 'http:' || !admitted.has(originOf(target))) {
      refuse(target?.href ?? String(req.url));
      res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' }).end(`mcp-plugin-host: ${refusal}\n`);
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    // The origin's own name: a client's Host header chose another virtual host of the admitted address (review R12 F1).
    headers.host = target.host;
    const path = `${target.pathname}${target.search}`;
    const via = upstreamOf(new URL(`http://${target.host}/`));
    const upstream =
      via === undefined
        ? // An IPv6 literal's hostname keeps its brackets, which the dial must not.
          httpRequest({ host: bare(target.hostname), port: target.port || 80, method: req.method, path, headers, lookup })
        : // The host's proxy takes the absolute URL (without any user or password the client put in it).
          httpRequest({ host: bare(via.hostname), port: via.port || 80, method: req.method, path: `http://${target.host}${path}`, headers: { ...headers, ...proxyAuthorization(via) } });
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    const hostname = target.hostname;
    upstream.on('socket', (socket: Socket) => {
      if (via === undefined && socket.connecting) socket.once('connect', () => resolver.connected(hostname, socket));
    });
    upstream.on('error', (cause) => {
      if (refuseHostOnly(cause) && !res.headersSent) res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' }).end(`mcp-plugin-host: ${cause.message}\n`);
      else res.destroy();
    });
    req.pipe(upstream);
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = connectTarget(req.url ?? '');
    headArrived(client);
    client.on('error', () => client.destroy());
    if (target === undefined || !admitted.has(target.origin)) {
      refuse(`https://${req.url ?? ''}`);
      client.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\n\r\n');
      return;
    }
    const via = upstreamOf(new URL(`https://${target.origin}/`));
    let tunnel: { socket: Socket; ready: Promise<void> };
    if (via === undefined) {
      const socket = connect({ host: target.host, port: target.port, lookup });
      tunnel = { socket, ready: new Promise((opened, failed) => socket.once('connect', opened).once('error', failed)) };
      void tunnel.ready.then(() => resolver.connected(target.host, socket), () => undefined);
    } else {
      tunnel = tunnelThrough(via, target.origin);
    }
    const upstream = tunnel.socket;
    let opened = false;
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    // Before the tunnel opened, a failed dial is answered below (502, or 403 for a host-only answer).
    upstream.on('error', () => (opened ? client.destroy() : undefined));
    client.on('close', () => upstream.destroy());
    tunnel.ready.then(
      () => {
        opened = true;
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        headDeadlines.set(
          client,
          setTimeout(() => client.destroy(), bounds.headersTimeoutMs),
        );
        awaitClientHello(client, head, (reading, received) => {
          headArrived(client);
          const refusedFor = tunnelRefusal(reading, target.host);
          if (refusedFor !== undefined) {
            refuse(reading.kind === 'hello' && reading.serverName !== undefined ? `https://${reading.serverName}:${target.port} (through ${target.origin})` : `https://${target.origin} (${refusedFor})`);
            upstream.destroy();
            // A client that spoke TLS reads why in an alert; anything else is just closed.
            client.end(reading.kind === 'hello' ? UNRECOGNIZED_NAME_ALERT : received[0] === 0x16 ? ACCESS_DENIED_ALERT : Buffer.alloc(0));
            return;
          }
          upstream.write(received);
          upstream.pipe(client);
          client.pipe(upstream);
        });
      },
      (cause: Error) => {
        upstream.destroy();
        if (!client.writable) return;
        const status = refuseHostOnly(cause) ? '403 Forbidden' : '502 Bad Gateway';
        client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nmcp-plugin-host: ${cause.message.replace(/[^\x20-\x7e]/g, '?')}\n`);
      },
    );
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    // Silent both ways for idleTimeoutMs (a tunnel carrying a download is not): ended, as a slow request head is.
    socket.setTimeout(bounds.idleTimeoutMs, () => socket.destroy());
    headDeadlines.set(
      socket,
      setTimeout(() => socket.destroy(), bounds.headersTimeoutMs),
    );
    socket.on('close', () => {
      headArrived(socket);
      sockets.delete(socket);
    });
  });
  // Each connection holds a socket of the host (and a tunnel one more): what the install runs cannot open them without end (review R12 F3).
  server.maxConnections = bounds.maxConnections;
  return {
    refused,
    hostOnly,
    origins: [...admitted],
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: '127.0.0.1', port: 0 }, () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
      }),
    serve: (listener: Server) => {
      served.add(listener);
      listener.maxConnections = bounds.maxConnections;
      // An accept that fails costs the client one connection, never the host its life.
      listener.on('error', () => undefined);
      listener.on('connection', (socket: Socket) => server.emit('connection', socket));
    },
    close: () =>
      new Promise<void>((closed) => {
        for (const listener of served) listener.close();
        served.clear();
        for (const socket of sockets) socket.destroy();
        if (server.listening) server.close(() => closed());
        else closed();
      }),
  };
}
