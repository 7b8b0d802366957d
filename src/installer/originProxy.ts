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

/** A proxy that admits a fixed set of origins. */
export interface OriginOnlyProxy {
  /** The URLs it refused, in order (`https://host:port` for a refused tunnel). */
  readonly refused: readonly string[];
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
 * of two addresses (theirs and a host-only one) from reaching the second by
 * refusing later connections to the first.
 */
function pinningResolver(): PinningResolver {
  const answers = new Map<string, Promise<LookupAddress[]>>();
  const pinned = new Map<string, LookupAddress>();
  const lookup: LookupFunction = (hostname, options, callback) => {
    const address = pinned.get(hostname);
    let answer = address === undefined ? answers.get(hostname) : Promise.resolve([address]);
    if (answer === undefined) {
      answer = resolve(hostname, { all: true });
      answers.set(hostname, answer);
      // A failed resolution is not kept: the next dial asks again.
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

/**
 * A proxy that forwards plain requests (absolute-form `http:` URLs) and
 * tunnels (`CONNECT host:port`) to `origins` only; anything else gets 403
 * with `refusal` as its body and is recorded. It listens nowhere until
 * {@link OriginOnlyProxy.listen} or {@link OriginOnlyProxy.serve}.
 */
export function originOnlyProxy(origins: readonly string[], refusal: string): OriginOnlyProxy {
  const admitted = new Set(origins.map((origin) => origin.toLowerCase()));
  const refused: string[] = [];
  // Code the install runs can send refused requests as fast as it connects: only the first ones are kept (review R12 F2).
  const refuse = (url: string): void => {
    if (refused.length < bounds.maxRefusedRecorded) refused.push(recordable(url));
  };
  const resolver = pinningResolver();
  const { lookup } = resolver;
  const sockets = new Set<Socket>();
  const served = new Set<Server>();
  // A connection that has not sent a request head in time is ended; a listener served by hand gets none of Node's own header timeouts.
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
    // An IPv6 literal's hostname keeps its brackets, which the dial must not.
    const upstream = httpRequest({ host: target.hostname.replace(/^\[|\]$/g, ''), port: target.port || 80, method: req.method, path: `${target.pathname}${target.search}`, headers, lookup }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    const hostname = target.hostname;
    upstream.on('socket', (socket: Socket) => {
      if (socket.connecting) socket.once('connect', () => resolver.connected(hostname, socket));
    });
    upstream.on('error', () => res.destroy());
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
    const upstream = connect({ host: target.host, port: target.port, lookup }, () => {
      resolver.connected(target.host, upstream);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
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
