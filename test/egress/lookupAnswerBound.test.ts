/**
 * The proxy tries only the first `maxAddressesPerName` addresses of a look-up
 * (`etc/egress/proxy.json`). The answer is the name's owner's to choose: a
 * listed name of the plugin author's own zone answering 4,000 private
 * addresses (a 64 KiB DNS answer) had each checked on the host's one thread,
 * reading the host's interfaces anew for each, so 32 requests held the event
 * loop every plugin and the gateway share for 23 s (review R11 F10). Real
 * loopback sockets; a resolver hook stands in for the DNS answer.
 */
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };
import { EgressProxy, type EgressEvent } from '../../src/egress/EgressProxy.js';
import { egressPolicy } from '../../src/egress/destinations.js';

const closers: (() => void)[] = [];
afterAll(() => closers.forEach((close) => close()));

async function listening(server: ReturnType<typeof createServer> | ReturnType<typeof createHttpServer>): Promise<number> {
  closers.push(() => server.close());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('egress proxy look-up answers', () => {
  it('tries no address past maxAddressesPerName, however many the answer holds', async () => {
    const served: string[] = [];
    const originPort = await listening(createHttpServer((req, res) => res.end(`origin ${String(served.push(req.url ?? ''))}`)));
    const bound = proxySettings.maxAddressesPerName;
    // Private addresses up to the bound, then a public one routed to the origin: reaching it means the bound was passed.
    const answer = [...Array.from({ length: bound }, (_, i) => `10.0.${i >> 8}.${i & 255}`), '203.0.113.20'];
    const events: EgressEvent[] = [];
    const proxy = new EgressProxy({
      resolver: { resolve: () => Promise.resolve(answer), route: (address, port) => (address === '203.0.113.20' ? { host: '127.0.0.1', port: originPort } : { host: address, port }) },
      onEvent: (event) => events.push(event),
    });
    const port = await listening(createServer(proxy.attach('own-zone', egressPolicy(['*.own.test'], '/egress')._unsafeUnwrap())));
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.on('close', () => resolve(text));
      socket.write('GET http://a.own.test/ HTTP/1.1\r\nHost: a.own.test\r\nConnection: close\r\n\r\n');
    });
    expect(served).toEqual([]);
    expect(reply).toMatch(/^HTTP\/1\.1 403/);
    expect(events).toEqual([expect.objectContaining({ allowed: false, reason: 'refused_address', refused_kind: 'private', address: '10.0.0.0' })]);
  });

  it("keeps at most maxEventHostChars of the destination a plugin wrote in its event (review R11 F9)", async () => {
    const events: EgressEvent[] = [];
    const proxy = new EgressProxy({ resolver: { resolve: () => Promise.reject(new Error('not asked')) }, onEvent: (event) => events.push(event) });
    const port = await listening(createServer(proxy.attach('long-names', egressPolicy(['api.example.com'], '/egress')._unsafeUnwrap())));
    // A 12 KB name, refused as not listed: without the bound, each such connection was a 12 KB audit line.
    const name = `${'a'.repeat(60)}.`.repeat(200) + 'x';
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.on('close', () => resolve(text));
      socket.write(`CONNECT ${name}:443 HTTP/1.1\r\n\r\n`);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 403/);
    const bound = proxySettings.maxEventHostChars;
    expect(events).toEqual([expect.objectContaining({ allowed: false, reason: 'invalid_destination', host: `${name.slice(0, bound)}…` })]);
  });
});
