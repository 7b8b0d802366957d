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
import { connect, type AddressInfo, type Server, type Socket } from 'node:net';

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

/**
 * A proxy that forwards plain requests (absolute-form `http:` URLs) and
 * tunnels (`CONNECT host:port`) to `origins` only; anything else gets 403
 * with `refusal` as its body and is recorded. It listens nowhere until
 * {@link OriginOnlyProxy.listen} or {@link OriginOnlyProxy.serve}.
 */
export function originOnlyProxy(origins: readonly string[], refusal: string): OriginOnlyProxy {
  const admitted = new Set(origins.map((origin) => origin.toLowerCase()));
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const served = new Set<Server>();
  const server: HttpServer = createServer((req: IncomingMessage, res: ServerResponse) => {
    let target: URL | undefined;
    try {
      target = new URL(req.url ?? '');
    } catch {
      target = undefined;
    }
    if (target === undefined || target.protocol !== 'http:' || !admitted.has(originOf(target))) {
      refused.push(target?.href ?? String(req.url));
      res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' }).end(`mcp-plugin-host: ${refusal}\n`);
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const upstream = httpRequest({ host: target.hostname, port: target.port || 80, method: req.method, path: `${target.pathname}${target.search}`, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = connectTarget(req.url ?? '');
    client.on('error', () => client.destroy());
    if (target === undefined || !admitted.has(target.origin)) {
      refused.push(`https://${req.url ?? ''}`);
      client.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\n\r\n');
      return;
    }
    const upstream = connect({ host: target.host, port: target.port }, () => {
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
    socket.on('close', () => sockets.delete(socket));
  });
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
