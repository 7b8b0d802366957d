/**
 * The origin-only proxy npm and pip install behind (src/installer/originProxy.ts)
 * against what reaches it from the install: pip's requests and the code pip
 * runs (a build backend for an index wheel's direct reference). Review R12:
 * a client's Host header picked another virtual host of the admitted address
 * (F1); every refused URL was kept whole, so a loop of refused requests grew
 * the host's memory for as long as pip ran (F2); connections on a listener
 * handed to the host were neither counted nor timed out (F3); and the admitted
 * name was resolved again for each connection, so DNS its owner answers led
 * the second one to a host-only address (F4).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { originOnlyProxy, type OriginOnlyProxy } from '../../src/installer/originProxy.js';
import bounds from '../../etc/install-proxy.json' with { type: 'json' };

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function origin(): Promise<{ port: number; hosts: string[] }> {
  const hosts: string[] = [];
  const server: HttpServer = createHttpServer((request, response) => {
    hosts.push(request.headers.host ?? '');
    response.end('origin');
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  cleanups.push(() => server.close());
  return { port: (server.address() as AddressInfo).port, hosts };
}

async function started(origins: readonly string[]): Promise<{ proxy: OriginOnlyProxy; port: number }> {
  const proxy = originOnlyProxy(origins, 'only the index');
  const port = Number(new URL(await proxy.listen()).port);
  cleanups.push(() => proxy.close());
  return { proxy, port };
}

/** Sends `head` on a new connection to `port` and resolves to everything answered until the connection closed. */
const exchange = (port: number, head: string): Promise<string> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head));
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => undefined);
  });

describe('origin-only proxy bounds', () => {
  it("sends the admitted origin's own Host, never the client's", async () => {
    const index = await origin();
    const { port } = await started([`127.0.0.1:${index.port}`]);
    const answer = await exchange(port, `GET http://127.0.0.1:${index.port}/admin HTTP/1.1\r\nhost: jenkins.corp.internal\r\nconnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(index.hosts).toEqual([`127.0.0.1:${index.port}`]);
  });

  it('reaches an admitted origin named by an IPv6 literal', async () => {
    const server: HttpServer = createHttpServer((_request, response) => response.end('over v6'));
    await new Promise<void>((listening) => server.listen(0, '::1', listening));
    cleanups.push(() => server.close());
    const port = (server.address() as AddressInfo).port;
    const proxy = await started([`[::1]:${port}`]);
    const answer = await exchange(proxy.port, `GET http://[::1]:${port}/simple/ HTTP/1.1\r\nhost: [::1]:${port}\r\nconnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200[^]*over v6$/);
  });

  it('records only the first refused URLs, each cut short', async () => {
    const { proxy, port } = await started(['127.0.0.1:1']);
    const long = 'a'.repeat(4 * bounds.maxRefusedUrlChars);
    for (let i = 0; i < bounds.maxRefusedRecorded + 8; i++) {
      expect(await exchange(port, `GET http://evil.example/${i}/${long} HTTP/1.1\r\nhost: evil.example\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403/);
    }
    expect(proxy.refused).toHaveLength(bounds.maxRefusedRecorded);
    expect(proxy.refused[0]).toBe(`http://evil.example/0/${long}`.slice(0, bounds.maxRefusedUrlChars) + '…');
  });

  it('closes connections beyond maxConnections on a listener it serves', async () => {
    const proxy = originOnlyProxy(['127.0.0.1:1'], 'only the index');
    cleanups.push(() => proxy.close());
    const listener = createServer();
    await new Promise<void>((listening) => listener.listen(0, '127.0.0.1', listening));
    proxy.serve(listener);
    const port = (listener.address() as AddressInfo).port;
    const extra = 8;
    let closed = 0;
    const sockets: Socket[] = [];
    // Half-sent request heads: each holds its connection until the head deadline.
    for (let i = 0; i < bounds.maxConnections + extra; i++) {
      sockets.push(
        await new Promise<Socket>((connected) => {
          const socket = connect(port, '127.0.0.1', () => {
            socket.write('GET http://127.0.0.1:1/ HTTP/1.1\r\nx-slow: ');
            connected(socket);
          });
          socket.on('close', () => closed++).on('error', () => undefined);
        }),
      );
    }
    cleanups.push(() => sockets.forEach((socket) => socket.destroy()));
    await new Promise<void>((all) => {
      const check = (): void => (closed >= extra ? all() : void setTimeout(check, 20));
      check();
    });
    expect(closed).toBe(extra);
  });

  // Root: the fixture host gets a mount and network namespace of its own, with its own /etc/hosts and loopback
  // addresses; nothing of the machine's changes.
  it.runIf(process.getuid?.() === 0)("dials the address a dial of the admitted name first connected to, not the one its DNS answers next, and never a loopback answer", async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'origin-rebind-'));
    cleanups.push(() => rmSync(scratch, { recursive: true, force: true }));
    const fixture = join(import.meta.dirname, '..', '..', 'fixtures', 'installer', 'rebinding-host.ts');
    const { stdout } = await promisify(execFile)('unshare', ['--mount', '--net', '--', process.execPath, '--import', 'tsx', fixture, scratch], {
      cwd: join(import.meta.dirname, '..', '..'),
      timeout: 60_000,
      killSignal: 'SIGKILL',
    });
    const outcome = JSON.parse(stdout) as Record<string, unknown>;
    // The control: the resolver answered the other address after the change.
    expect(outcome['resolvedAfter']).toBe('192.0.2.2');
    expect(outcome['first']).toBe('index');
    expect(outcome['second']).toBe('index');
    // One answer of two addresses: after the index stopped taking connections, the host-only address was not tried.
    expect(outcome['answerOrder']).toEqual(['192.0.2.1', '192.0.2.2']);
    expect(outcome['beforeClose']).toBe('index');
    expect(outcome['afterClose']).not.toBe('host-only');
    // Before any dial connected, the answer's other address is tried (a host without IPv6 routes reaches a dual-stack index).
    expect(outcome['fallback']).toBe('index');
    // A name the system resolver answers with 127.0.0.1 from the first look-up: refused, the answer recorded; the
    // same server under the name localhost (the control) is reached.
    expect(outcome['loopbackByName']).toBe('HTTP/1.1 403 Forbidden');
    expect(outcome['hostOnlyAnswers']).toEqual(['index.rebind.test → 127.0.0.1 (loopback)']);
    expect(outcome['loopbackByLocalhost']).toBe('loopback service');
  });
});
