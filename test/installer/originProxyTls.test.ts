/**
 * What code pip runs (a build backend, setup.py) can reach through an origin
 * the install proxy admits (src/installer/originProxy.ts), review R12's open
 * findings:
 * - inside an admitted CONNECT tunnel the client picked the TLS server name,
 *   so behind a CDN it reached any other site the CDN serves: now the
 *   tunnel carries bytes only after a ClientHello naming the admitted host;
 * - an admitted name answered with the host's loopback (or metadata) address
 *   from the first look-up was dialled: now refused, `localhost` excepted;
 * - the proxy dialled directly, so a host behind a proxy of its own could not
 *   use an index: now the host's HTTPS_PROXY / HTTP_PROXY is its upstream.
 * A real TLS server (a certificate made by openssl for two names, as a CDN
 * serves many) stands for the origin, node:tls for the client.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { promisify } from 'node:util';
import type { LookupAddress } from 'node:dns';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostProxyFor } from '../../src/installer/hostProxy.js';
import { originOnlyProxy, type OriginOnlyProxy, type OriginProxyOptions } from '../../src/installer/originProxy.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let certificate = { key: '', cert: '' };
let scratch = '';
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'origin-tls-'));
  const [key, cert] = [join(scratch, 'key.pem'), join(scratch, 'cert.pem')];
  // One certificate for two sites of one address, as a CDN holds.
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=index.localhost', '-addext', 'subjectAltName=DNS:index.localhost,DNS:other.localhost',
    '-keyout', key, '-out', cert,
  ]);
  certificate = { key: await readFile(key, 'utf8'), cert: await readFile(cert, 'utf8') };
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** A TLS origin on loopback serving both names; records the server name of every ClientHello it read, and each request's site. */
async function tlsOrigin(): Promise<{ port: number; names: string[]; served: string[] }> {
  const names: string[] = [];
  const served: string[] = [];
  const server: TlsServer = createTlsServer({ ...certificate, SNICallback: (name, done) => (names.push(name), done(null, undefined)) }, (socket) => {
    socket.once('data', () => {
      served.push((socket as unknown as { servername: string | false }).servername || '(none)');
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nsite');
    });
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  cleanups.push(() => server.close());
  return { port: (server.address() as AddressInfo).port, names, served };
}

// Names resolved by the proxy's resolver seam: every name under localhost is 127.0.0.1.
const loopbackResolver = (hostname: string): Promise<LookupAddress[]> =>
  /(^|\.)localhost$/.test(hostname) ? Promise.resolve([{ address: '127.0.0.1', family: 4 }]) : Promise.reject(Object.assign(new Error(hostname), { code: 'ENOTFOUND' }));

async function started(origins: readonly string[], options: OriginProxyOptions = { resolve: loopbackResolver }): Promise<{ proxy: OriginOnlyProxy; port: number }> {
  const proxy = originOnlyProxy(origins, 'only the index', options);
  const port = Number(new URL(await proxy.listen()).port);
  cleanups.push(() => proxy.close());
  return { proxy, port };
}

/** Opens `CONNECT authority` on the proxy: resolves to the socket once it answered 200, or to its status line. */
const tunnel = (proxyPort: number, authority: string): Promise<Socket | string> =>
  new Promise((resolve) => {
    const socket = netConnect(proxyPort, '127.0.0.1', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`));
    let head = '';
    const onData = (chunk: Buffer): void => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      resolve(head.startsWith('HTTP/1.1 200') ? socket : (head.split('\r\n')[0] ?? ''));
    };
    socket.on('data', onData).on('error', () => undefined);
    socket.on('close', () => resolve(head.split('\r\n')[0] || 'closed'));
  });

/** TLS over `socket` as `servername` ('' sends none); resolves to the site's answer body, or the TLS error's message. */
const overTls = (socket: Socket, servername: string): Promise<string> =>
  new Promise((resolve) => {
    const secure = tlsConnect({ socket, servername, ca: certificate.cert, checkServerIdentity: () => undefined }, () => secure.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n'));
    let body = '';
    secure.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    secure.on('end', () => resolve(body.split('\r\n\r\n')[1] ?? body));
    secure.on('error', (error: Error) => resolve(`error: ${error.message}`));
  });

/** Writes `bytes` into `socket` and resolves once the proxy closed it. */
const untilClosed = (socket: Socket, bytes: Buffer | string): Promise<string> =>
  new Promise((resolve) => {
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.write(bytes);
  });

describe('origin-only proxy: the TLS server name inside an admitted tunnel', () => {
  it('opens the tunnel for a ClientHello naming the admitted host', async () => {
    const origin = await tlsOrigin();
    const { proxy, port } = await started([`index.localhost:${origin.port}`]);
    const socket = await tunnel(port, `index.localhost:${origin.port}`);
    expect(typeof socket).not.toBe('string');
    expect(await overTls(socket as Socket, 'index.localhost')).toBe('site');
    expect(origin.served).toEqual(['index.localhost']);
    expect(proxy.refused).toEqual([]);
  });

  it('refuses a ClientHello naming another site of the same address: the origin never reads it', async () => {
    const origin = await tlsOrigin();
    const { proxy, port } = await started([`index.localhost:${origin.port}`]);
    const socket = await tunnel(port, `index.localhost:${origin.port}`);
    expect(typeof socket).not.toBe('string');
    // The origin serves other.localhost too (the certificate names it): only the proxy stands between.
    expect(await overTls(socket as Socket, 'other.localhost')).toMatch(/^error: .*unrecognized name/i);
    expect(origin.names).toEqual([]);
    expect(proxy.refused).toEqual([`https://other.localhost:${origin.port} (through index.localhost:${origin.port})`]);

    // The control: reached directly, the origin serves that site.
    const direct = netConnect(origin.port, '127.0.0.1');
    expect(await overTls(direct, 'other.localhost')).toBe('site');
  });

  it('refuses a ClientHello with no server name for an origin named by a name', async () => {
    const origin = await tlsOrigin();
    const { proxy, port } = await started([`index.localhost:${origin.port}`]);
    const socket = await tunnel(port, `index.localhost:${origin.port}`);
    expect(await overTls(socket as Socket, '')).toMatch(/^error: /);
    expect(origin.served).toEqual([]);
    expect(proxy.refused).toEqual([`https://index.localhost:${origin.port} (no TLS server name)`]);
  });

  it('admits no server name, and only none, for an origin named by its address', async () => {
    const origin = await tlsOrigin();
    const { proxy, port } = await started([`127.0.0.1:${origin.port}`]);
    expect(await overTls((await tunnel(port, `127.0.0.1:${origin.port}`)) as Socket, '')).toBe('site');
    expect(await overTls((await tunnel(port, `127.0.0.1:${origin.port}`)) as Socket, 'other.localhost')).toMatch(/^error: /);
    expect(origin.served).toEqual(['(none)']);
    expect(proxy.refused).toEqual([`https://other.localhost:${origin.port} (through 127.0.0.1:${origin.port})`]);
  });

  it('carries nothing that is not TLS: a plain request with a Host of its choice never reaches the origin', async () => {
    const requests: string[] = [];
    const plain: HttpServer = createHttpServer((request: IncomingMessage, response) => {
      requests.push(request.headers.host ?? '');
      response.end('plain');
    });
    await new Promise<void>((listening) => plain.listen(0, '127.0.0.1', listening));
    cleanups.push(() => plain.close());
    const plainPort = (plain.address() as AddressInfo).port;
    const { proxy, port } = await started([`127.0.0.1:${plainPort}`]);
    const socket = (await tunnel(port, `127.0.0.1:${plainPort}`)) as Socket;
    expect(await untilClosed(socket, 'GET / HTTP/1.1\r\nhost: jenkins.corp.internal\r\n\r\n')).toBe('');
    expect(requests).toEqual([]);
    expect(proxy.refused).toEqual([`https://127.0.0.1:${plainPort} (not a TLS handshake)`]);
  });

  it('refuses a record over 16 KiB as soon as its header arrives, without waiting for its bytes', async () => {
    const origin = await tlsOrigin();
    const { proxy, port } = await started([`index.localhost:${origin.port}`]);
    const socket = (await tunnel(port, `index.localhost:${origin.port}`)) as Socket;
    // Only the header is sent: a proxy that waited for the 65,535 announced bytes would never close.
    await untilClosed(socket, Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff]));
    expect(proxy.refused).toEqual([`https://index.localhost:${origin.port} (a TLS record of 65535 bytes)`]);
  });

  it('refuses a ClientHello that continues past its first record', async () => {
    const origin = await tlsOrigin();
    const { proxy, port } = await started([`index.localhost:${origin.port}`]);
    const socket = (await tunnel(port, `index.localhost:${origin.port}`)) as Socket;
    // A 4-byte record announcing a 1,000-byte ClientHello.
    await untilClosed(socket, Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x03, 0xe8]));
    expect(proxy.refused).toEqual([`https://index.localhost:${origin.port} (a ClientHello split across TLS records)`]);
    expect(origin.names).toEqual([]);
  });
});

describe('origin-only proxy: an admitted name answered with an address only the host reaches', () => {
  /** A plain request for `url` through the proxy: its status line and body. */
  const get = (port: number, url: string): Promise<string> =>
    new Promise((resolve) => {
      const request = httpRequest({ host: '127.0.0.1', port, path: url, headers: { host: new URL(url).host, connection: 'close' } }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve(`${response.statusCode ?? 0} ${body.trim()}`));
      });
      request.on('error', (error) => resolve(`error: ${error.message}`));
      request.end();
    });

  async function plainOrigin(): Promise<{ port: number; requests: string[] }> {
    const requests: string[] = [];
    const server: HttpServer = createHttpServer((request, response) => {
      requests.push(request.url ?? '');
      response.end('loopback service');
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    cleanups.push(() => server.close());
    return { port: (server.address() as AddressInfo).port, requests };
  }

  it('refuses a name whose first answer is the loopback, for requests and tunnels, and records the answer', async () => {
    const service = await plainOrigin();
    const resolve = (): Promise<LookupAddress[]> => Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
    const { proxy, port } = await started([`index.evil.test:${service.port}`], { resolve });
    expect(await get(port, `http://index.evil.test:${service.port}/simple/`)).toMatch(/^403 mcp-plugin-host: index\.evil\.test resolves to 127\.0\.0\.1 \(loopback\)/);
    expect(await tunnel(port, `index.evil.test:${service.port}`)).toBe('HTTP/1.1 403 Forbidden');
    expect(service.requests).toEqual([]);
    expect(proxy.hostOnly).toEqual(['index.evil.test → 127.0.0.1 (loopback)']);
  });

  it('refuses metadata and link-local answers, and one of the host’s own interface addresses', async () => {
    const own = Object.values(networkInterfaces())
      .flat()
      .find((entry) => entry !== undefined && !entry.internal && entry.family === 'IPv4')?.address;
    const answers: Record<string, string> = { 'meta.test': '169.254.169.254', 'link.test': '169.254.10.1', ...(own === undefined ? {} : { 'self.test': own }) };
    const resolve = (hostname: string): Promise<LookupAddress[]> => Promise.resolve([{ address: answers[hostname] ?? '', family: 4 }]);
    const { proxy, port } = await started(
      Object.keys(answers).map((name) => `${name}:80`),
      { resolve },
    );
    for (const name of Object.keys(answers)) expect(await get(port, `http://${name}/latest/meta-data/`)).toMatch(/^403 /);
    expect(proxy.hostOnly).toEqual([
      'meta.test → 169.254.169.254 (metadata)',
      'link.test → 169.254.10.1 (link_local)',
      ...(own === undefined ? [] : [`self.test → ${own} (self)`]),
    ]);
  });

  it('reaches the loopback by the name localhost, and by an address written in the URL (the controls)', async () => {
    const service = await plainOrigin();
    const { proxy, port } = await started([`localhost:${service.port}`, `127.0.0.1:${service.port}`]);
    expect(await get(port, `http://localhost:${service.port}/a`)).toBe('200 loopback service');
    expect(await get(port, `http://127.0.0.1:${service.port}/b`)).toBe('200 loopback service');
    expect(service.requests).toEqual(['/a', '/b']);
    expect(proxy.hostOnly).toEqual([]);
  });

  it('dials a localhost name at loopback only', async () => {
    const resolve = (): Promise<LookupAddress[]> => Promise.resolve([{ address: '169.254.169.254', family: 4 }]);
    const { proxy, port } = await started(['localhost:80'], { resolve });
    expect(await get(port, 'http://localhost/latest/meta-data/')).toMatch(/^403 /);
    expect(proxy.hostOnly).toEqual(['localhost → 169.254.169.254 (metadata)']);
  });
});

/**
 * A real HTTP proxy on loopback standing for the host's own (a company's):
 * `CONNECT` and absolute-form requests, refusing any without its
 * credentials. Records what it was asked.
 */
async function upstreamProxy(): Promise<{ url: string; asked: string[] }> {
  const asked: string[] = [];
  const authorized = (request: IncomingMessage): boolean => request.headers['proxy-authorization'] === `Basic ${Buffer.from('corp:s3cret').toString('base64')}`;
  const server: HttpServer = createHttpServer((request, response) => {
    asked.push(`${request.method ?? ''} ${request.url ?? ''}`);
    if (!authorized(request)) return void response.writeHead(407).end();
    const target = new URL(request.url ?? '');
    // It resolves names itself: every name is its loopback here.
    const forwarded = httpRequest({ host: '127.0.0.1', port: target.port, path: `${target.pathname}${target.search}`, headers: { host: target.host, connection: 'close' } }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    forwarded.on('error', () => response.destroy());
    forwarded.end();
  });
  server.on('connect', (request: IncomingMessage, client: Socket) => {
    asked.push(`CONNECT ${request.url ?? ''}`);
    if (!authorized(request)) return void client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
    // The host's proxy resolves the name itself: every name is its loopback here.
    const [, port = '443'] = (request.url ?? '').split(':');
    const upstream = netConnect(Number(port), '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  cleanups.push(() => (server.closeAllConnections(), server.close()));
  return { url: `http://corp:s3cret@127.0.0.1:${(server.address() as AddressInfo).port}`, asked };
}

// The proxy resolves nothing itself behind the host's proxy: any look-up it made would fail the test.
const noResolver = (hostname: string): Promise<LookupAddress[]> => Promise.reject(new Error(`looked up ${hostname}`));

describe("origin-only proxy behind the host's own proxy", () => {
  it("tunnels an admitted https origin through the host's HTTPS_PROXY, with its credentials, and still checks the server name", async () => {
    const origin = await tlsOrigin();
    const corp = await upstreamProxy();
    const env = { HTTPS_PROXY: corp.url };
    const { proxy, port } = await started([`index.corp.test:${origin.port}`], { resolve: noResolver, upstream: (url) => hostProxyFor(url, env) });
    expect(await overTls((await tunnel(port, `index.corp.test:${origin.port}`)) as Socket, 'index.corp.test')).toBe('site');
    expect(await overTls((await tunnel(port, `index.corp.test:${origin.port}`)) as Socket, 'other.corp.test')).toMatch(/^error: .*unrecognized name/i);
    expect(corp.asked).toEqual([`CONNECT index.corp.test:${origin.port}`, `CONNECT index.corp.test:${origin.port}`]);
    expect(origin.served).toEqual(['index.corp.test']);
    expect(proxy.refused).toEqual([`https://other.corp.test:${origin.port} (through index.corp.test:${origin.port})`]);
    // A refused origin is never asked of the host's proxy.
    expect(await tunnel(port, 'pypi.org:443')).toBe('HTTP/1.1 403 Forbidden');
    expect(corp.asked).toHaveLength(2);
  });

  it("forwards a plain request for an admitted http origin through the host's HTTP_PROXY as an absolute URL", async () => {
    const requests: string[] = [];
    const index: HttpServer = createHttpServer((request, response) => {
      requests.push(`${request.headers.host ?? ''} ${request.url ?? ''}`);
      response.end('simple');
    });
    await new Promise<void>((listening) => index.listen(0, '127.0.0.1', listening));
    cleanups.push(() => (index.closeAllConnections(), index.close()));
    const indexPort = (index.address() as AddressInfo).port;
    const corp = await upstreamProxy();
    const { port } = await started([`index.corp.test:${indexPort}`], { resolve: noResolver, upstream: (url) => hostProxyFor(url, { HTTP_PROXY: corp.url }) });
    const answer = await new Promise<string>((resolve) => {
      const socket = netConnect(port, '127.0.0.1', () => socket.write(`GET http://index.corp.test:${indexPort}/simple/?q=1 HTTP/1.1\r\nhost: elsewhere\r\nconnection: close\r\n\r\n`));
      let text = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200[^]*simple$/);
    expect(corp.asked).toEqual([`GET http://index.corp.test:${indexPort}/simple/?q=1`]);
    expect(requests).toEqual([`index.corp.test:${indexPort} /simple/?q=1`]);
  });

  it("answers 502 when the host's proxy refuses the tunnel", async () => {
    const corp = await upstreamProxy();
    const env = { HTTPS_PROXY: corp.url.replace('s3cret', 'wrong') };
    const { port } = await started(['index.corp.test:443'], { resolve: noResolver, upstream: (url) => hostProxyFor(url, env) });
    expect(await tunnel(port, 'index.corp.test:443')).toBe('HTTP/1.1 502 Bad Gateway');
    expect(corp.asked).toEqual(['CONNECT index.corp.test:443']);
  });

  it('reads the host proxy settings as npm does: per scheme, NO_PROXY exempting by labels, only http: proxies', () => {
    const https = new URL('https://pypi.corp.example:443/');
    expect(hostProxyFor(https, {})).toBeUndefined();
    expect(hostProxyFor(https, { HTTP_PROXY: 'http://p:1' })).toBeUndefined();
    expect(hostProxyFor(https, { https_proxy: 'proxy.corp:3128' })?.href).toBe('http://proxy.corp:3128/');
    expect(hostProxyFor(https, { HTTPS_PROXY: 'http://p:1', NO_PROXY: 'localhost,.corp.example' })).toBeUndefined();
    expect(hostProxyFor(https, { HTTPS_PROXY: 'http://p:1', no_proxy: 'other.example' })?.host).toBe('p:1');
    expect(hostProxyFor(https, { HTTPS_PROXY: 'http://p:1', NO_PROXY: '*' })).toBeUndefined();
    expect(hostProxyFor(https, { HTTPS_PROXY: 'socks5://p:1' })).toBeUndefined();
    expect(hostProxyFor(new URL('http://[2001:db8::1]:8080/'), { HTTP_PROXY: 'http://[::2]:3128' })?.hostname).toBe('[::2]');
    // As npm and pip read them: a local index behind a host proxy is exempted by NO_PROXY, not by its address.
    expect(hostProxyFor(new URL('http://127.0.0.1:3141/'), { HTTP_PROXY: 'http://p:1' })?.host).toBe('p:1');
    expect(hostProxyFor(new URL('http://127.0.0.1:3141/'), { HTTP_PROXY: 'http://p:1', NO_PROXY: '127.0.0.1,localhost' })).toBeUndefined();
  });
});
