/**
 * The proxy npm runs behind (src/installer/npmProxy.ts): requests to the
 * registry's origin, and to an origin the registry redirects its tarballs
 * to, are passed on; any other is refused there, recorded, and never made.
 */
import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRegistryOnlyProxy, type RegistryOnlyProxy } from '../../src/installer/npmProxy.js';

const seen: string[] = [];
const servers: Server[] = [];
const listening = async (name: string): Promise<number> => {
  const server = createServer((req, res) => {
    seen.push(`${name}${req.url ?? ''}`);
    res.end(`from ${name}`);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

let registry: number;
let cdn: number;
let other: number;
let proxy: RegistryOnlyProxy;
beforeAll(async () => {
  [registry, cdn, other] = [await listening('registry'), await listening('cdn'), await listening('other')];
  proxy = await startRegistryOnlyProxy(`http://127.0.0.1:${registry}/`, [`127.0.0.1:${cdn}`]);
});
afterAll(async () => {
  await proxy.close();
  for (const server of servers) server.close();
});

/** An absolute-form GET through the proxy, as npm sends one for an http URL: status and body. */
function viaProxy(url: string): Promise<[number, string]> {
  const { port } = new URL(proxy.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: url, headers: { host: new URL(url).host } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve([res.statusCode ?? 0, body]));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The status line a CONNECT through the proxy gets. */
function connectVia(target: string): Promise<string> {
  const { port } = new URL(proxy.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port) }, () => socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`));
    let head = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      head += chunk;
      if (head.includes('\r\n')) {
        socket.destroy();
        resolve(head.split('\r\n')[0]!);
      }
    });
    socket.on('error', reject);
  });
}

describe('the registry-only proxy npm runs behind', () => {
  it('passes the registry and a redirect origin on, and refuses and records any other request without making it', async () => {
    expect(await viaProxy(`http://127.0.0.1:${registry}/pkg`)).toEqual([200, 'from registry']);
    expect(await viaProxy(`http://127.0.0.1:${cdn}/pkg/-/pkg-1.0.0.tgz`)).toEqual([200, 'from cdn']);
    expect((await viaProxy(`http://127.0.0.1:${other}/evil.tgz`))[0]).toBe(403);
    expect(await connectVia(`127.0.0.1:${other}`)).toMatch(/^HTTP\/1\.1 403/);
    expect(await connectVia(`127.0.0.1:${registry}`)).toMatch(/^HTTP\/1\.1 200/);
    expect(seen).toEqual(['registry/pkg', 'cdn/pkg/-/pkg-1.0.0.tgz']);
    expect(proxy.refused).toEqual([`http://127.0.0.1:${other}/evil.tgz`, `https://127.0.0.1:${other}`]);
  });
});
