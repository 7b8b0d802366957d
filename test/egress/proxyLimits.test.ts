/**
 * The egress proxy's own bounds and refusals, on real loopback sockets: a
 * loopback listener stands in for each plugin's listener in its sandbox and
 * hands every connection it accepts to the proxy under that plugin's list,
 * as the sandbox's listener does.
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EgressProxy, type EgressEvent, type EgressProxyLimits } from '../../src/egress/EgressProxy.js';
import { egressPolicy } from '../../src/egress/destinations.js';

const servers: (Server | HttpServer)[] = [];
const clients: Socket[] = [];
let originPort = 0;

function listen<T extends Server | HttpServer>(server: T, host = '127.0.0.1'): Promise<number> {
  servers.push(server);
  return new Promise((resolve) => server.listen({ host, port: 0 }, () => resolve((server.address() as AddressInfo).port)));
}

beforeAll(async () => {
  originPort = await listen(createHttpServer((req, res) => res.end(`origin ${req.headers.host ?? ''}${req.url ?? ''}`)));
});
afterEach(() => clients.splice(0).forEach((c) => c.destroy()));
afterAll(() => servers.forEach((s) => s.close()));

/** A proxy whose names resolve as `addresses` says; test addresses of TEST-NET-3 are dialled on the loopback origin. */
function proxyWith(addresses: Record<string, string>, limits: Partial<EgressProxyLimits> = {}): { proxy: EgressProxy; events: EgressEvent[] } {
  const events: EgressEvent[] = [];
  const proxy = new EgressProxy({
    resolver: {
      resolve: (name) => (addresses[name] === undefined ? Promise.reject(new Error(`ENOTFOUND ${name}`)) : Promise.resolve([addresses[name]!])),
      route: (address, port) => (address.startsWith('203.0.113.') ? { host: '127.0.0.1', port: originPort } : { host: address, port }),
    },
    onEvent: (event) => events.push(event),
    limits,
  });
  return { proxy, events };
}

/** The stand-in for one plugin's listener in its sandbox: its loopback port. */
async function listenerFor(proxy: EgressProxy, pluginId: string, destinations: string[]): Promise<number> {
  const serve = proxy.attach(pluginId, egressPolicy(destinations, '/egress')._unsafeUnwrap());
  return listen(createServer(serve));
}

/** Sends `payload` on a new connection to the listener and returns everything the proxy answered until it closed or `until` matched. */
function exchange(port: number, payload: string, until?: RegExp): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    clients.push(socket);
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
      if (until?.test(answer) === true) resolve(answer);
    });
    socket.on('error', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    socket.write(payload);
  });
}

async function openIdle(port: number, count: number): Promise<Socket[]> {
  const sockets = await Promise.all(
    Array.from({ length: count }, () => {
      const socket = connect(port, '127.0.0.1');
      clients.push(socket);
      socket.on('error', () => undefined);
      return once(socket, 'connect').then(() => socket);
    }),
  );
  return sockets;
}

describe('egress proxy bounds', () => {
  it("refuses an address the host itself holds on an interface (kind 'self') unless the list names it literally", async () => {
    const own = Object.values(networkInterfaces())
      .flat()
      .find((entry) => entry !== undefined && !entry.internal && entry.family === 'IPv4');
    expect(own, 'this host has no non-loopback IPv4 interface to test with').toBeDefined();
    const hostService = createHttpServer((_req, res) => res.end('host-only service'));
    const servicePort = await listen(hostService, '0.0.0.0');
    const { proxy, events } = proxyWith({ 'self.test': own!.address });
    const byName = await listenerFor(proxy, 'by-name', [`self.test:${servicePort}`]);
    const refused = await exchange(byName, `GET http://self.test:${servicePort}/z HTTP/1.1\r\nHost: self.test\r\nConnection: close\r\n\r\n`);
    expect(refused).toMatch(/^HTTP\/1\.1 403/);
    expect(refused).not.toMatch(/host-only service/);
    expect(events).toEqual([expect.objectContaining({ plugin_id: 'by-name', allowed: false, reason: 'refused_address', refused_kind: 'self', address: own!.address })]);
    const literal = await listenerFor(proxy, 'literal', [`${own!.address}:${servicePort}`]);
    expect(await exchange(literal, `GET http://${own!.address}:${servicePort}/z HTTP/1.1\r\nHost: ${own!.address}\r\nConnection: close\r\n\r\n`)).toMatch(/host-only service/);
  });

  it('reads a CONNECT tunnel to port 80 as HTTP: each request goes to the tunnel target under its name, whatever Host the plugin writes', async () => {
    const { proxy, events } = proxyWith({ 'api.test': '203.0.113.10' });
    const port = await listenerFor(proxy, 'p', ['api.test']);
    const spoofed = await exchange(port, 'CONNECT api.test:80 HTTP/1.1\r\nHost: api.test:80\r\n\r\nGET /x HTTP/1.1\r\nHost: not-listed.example\r\nConnection: close\r\n\r\n');
    expect(spoofed).toMatch(/^HTTP\/1\.1 200 Connection Established/);
    expect(spoofed).toMatch(/origin api\.test\/x/);
    expect(spoofed).not.toMatch(/not-listed/);
    const elsewhere = await exchange(port, 'CONNECT api.test:80 HTTP/1.1\r\nHost: api.test:80\r\n\r\nGET http://other.example/y HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n');
    expect(elsewhere).toMatch(/HTTP\/1\.1 400/);
    expect(elsewhere).not.toMatch(/origin/);
    expect(events).toEqual([
      expect.objectContaining({ method: 'GET', host: 'api.test', port: 80, allowed: true }),
      expect.objectContaining({ method: 'GET', allowed: false, reason: 'bad_request' }),
    ]);
    const unlisted = await exchange(port, 'CONNECT other.example:80 HTTP/1.1\r\nHost: other.example:80\r\n\r\n');
    expect(unlisted).toMatch(/^HTTP\/1\.1 403 Forbidden/);
  });

  it("passes a response's headers on as soon as the origin sent them, before any of its body (an SSE stream that writes later)", async () => {
    // An MCP Streamable HTTP server opens its SSE stream with headers alone; a client waits for them before it sends its next request.
    const streams: HttpServer = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
    });
    const streamPort = await listen(streams);
    const { proxy } = proxyWith({});
    const port = await listenerFor(proxy, 'sse', [`127.0.0.1:${streamPort}`]);
    const direct = await exchange(port, `GET http://127.0.0.1:${streamPort}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, /\r\n\r\n/);
    expect(direct).toMatch(/^HTTP\/1\.1 200 OK\r\n(.+\r\n)*content-type: text\/event-stream\r\n/i);
    streams.closeAllConnections();
  });

  it('closes a tunnel that carries nothing for the idle time', async () => {
    const { proxy } = proxyWith({ 'api.test': '203.0.113.10' }, { tunnelIdleTimeoutMs: 200 });
    const port = await listenerFor(proxy, 'p', ['api.test:443']);
    // Closed by the proxy, not by the test: without the idle bound this never resolves and the test times out.
    const answer = await exchange(port, 'CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 Connection Established/);
  });

  /** Writes `text` one byte per `gapMs` on a new connection; resolves with whether the proxy closed it before the last byte. */
  function drip(port: number, text: string, gapMs: number): Promise<'closed' | 'outlived'> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      clients.push(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => resolve('closed'));
      let at = 0;
      const next = (): void => {
        if (socket.destroyed) return;
        if (at === text.length) return resolve('outlived');
        socket.write(text[at++] ?? '');
        setTimeout(next, gapMs);
      };
      socket.once('connect', next);
    });
  }

  it('closes a connection whose request headers take longer than headersTimeoutMs in all, however steadily they drip in', async () => {
    const { proxy } = proxyWith({ 'api.test': '203.0.113.10' }, { headersTimeoutMs: 400 });
    const port = await listenerFor(proxy, 'p', ['api.test']);
    // 40 bytes a tenth of the headers time apart: never idle for the headers time, yet ten times over it in all.
    const headers = 'GET http://api.test/ HTTP/1.1\r\nX-Slow: 1';
    expect(await drip(port, headers, 40)).toBe('closed');
    // The same through a CONNECT tunnel to port 80, whose requests the proxy reads itself.
    const tunnel = connect(port, '127.0.0.1');
    clients.push(tunnel);
    tunnel.write('CONNECT api.test:80 HTTP/1.1\r\nHost: api.test:80\r\n\r\n');
    await once(tunnel, 'data');
    const closed = once(tunnel, 'close').then(() => 'closed' as const);
    let sent = 0;
    const dripping = (async (): Promise<'outlived'> => {
      while (sent < headers.length && !tunnel.destroyed) {
        tunnel.write(headers[sent++] ?? '');
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      return 'outlived';
    })();
    expect(await Promise.race([closed, dripping])).toBe('closed');
  });

  it('caps the connections of all plugins together, and one plugin over its own cap does not stop another', async () => {
    const { proxy, events } = proxyWith({ 'api.test': '203.0.113.10' }, { maxConnectionsPerPlugin: 8, maxConnections: 12 });
    const greedy = await listenerFor(proxy, 'greedy', ['api.test']);
    const modest = await listenerFor(proxy, 'modest', ['api.test']);
    const third = await listenerFor(proxy, 'third', ['api.test']);
    await openIdle(greedy, 20);
    await expect.poll(() => events.filter((e) => e.plugin_id === 'greedy' && e.reason === 'connection_limit').length).toBe(12);
    expect(await exchange(modest, 'GET http://api.test/m HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n')).toMatch(/origin api\.test\/m/);
    await openIdle(modest, 4);
    // The proxy takes each accepted connection in a later turn of the event loop than the client sees it connected.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    // 8 + 4 held: the host's bound is reached, so a third plugin's connection is refused too.
    await exchange(third, 'GET http://api.test/t HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n');
    expect(events.filter((e) => e.plugin_id === 'third')).toEqual([expect.objectContaining({ allowed: false, reason: 'connection_limit' })]);
  });
});
