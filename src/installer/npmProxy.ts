/**
 * The proxy npm runs behind while it resolves and installs a package: it
 * passes requests to the registry's origin and refuses every other one.
 * npm fetches a dependency given as a tarball URL while it resolves the
 * tree, from the host and before the lockfile check can refuse it, so a
 * package (at any depth of its tree) made the host send a request to any
 * address it named: a service of the host's network, a cloud metadata
 * address, a server that learns who installs the package. Behind this proxy
 * the request ends here, and npm's failure names the URL, which
 * npmFetch.ts reads as the dependency source it is.
 *
 * A host that has its own https proxy (HTTPS_PROXY, which npm is given)
 * keeps it: that proxy is then where such requests are decided. An
 * HTTP_PROXY alone is not one: npm sends https URLs through HTTPS_PROXY only.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

/** A running registry-only proxy. */
export interface RegistryOnlyProxy {
  /** `http://127.0.0.1:<port>`, for npm's `proxy` and `https-proxy`. */
  readonly url: string;
  /** The URLs it refused, in order. */
  readonly refused: readonly string[];
  /** Stops listening and ends the connections it holds. */
  close(): Promise<void>;
}

const defaultPort = (protocol: string): string => (protocol === 'https:' ? '443' : '80');

/** `host:port` of a URL, the port spelled out. */
function originOf(url: URL): string {
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
 * Starts a proxy on 127.0.0.1 that forwards to `registry`'s origin only, and
 * to `redirectOrigins` (`host:port`: where a registry redirects its tarball
 * downloads, etc/npm-install.json `registryRedirectOrigins`).
 */
export function startRegistryOnlyProxy(registry: string, redirectOrigins: readonly string[] = []): Promise<RegistryOnlyProxy> {
  const origins = new Set([originOf(new URL(registry)), ...redirectOrigins.map((origin) => origin.toLowerCase())]);
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let target: URL | undefined;
    try {
      target = new URL(req.url ?? '');
    } catch {
      target = undefined;
    }
    if (target === undefined || target.protocol !== 'http:' || !origins.has(originOf(target))) {
      refused.push(target?.href ?? String(req.url));
      res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' }).end('mcp-plugin-host: only the registry is reachable while npm installs\n');
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
    if (target === undefined || !origins.has(target.origin)) {
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
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        refused,
        close: () =>
          new Promise<void>((closed) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => closed());
          }),
      });
    });
  });
}
