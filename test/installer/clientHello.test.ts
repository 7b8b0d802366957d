/**
 * The ClientHello reader the install proxy checks a tunnel's TLS server name
 * with (src/installer/clientHello.ts): on what node:tls really sends, and on
 * hand-built hellos for what a client could send instead (an encrypted
 * ClientHello, two names, a name that is not a DNS name).
 */
import { createServer, type AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { readClientHello } from '../../src/installer/clientHello.js';

/** The first bytes node:tls sends as `servername` ('' for none), caught by a plain TCP listener. */
async function realHello(servername: string): Promise<Buffer> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  try {
    const caught = new Promise<Buffer>((resolve) => server.once('connection', (socket) => socket.once('data', (chunk: Buffer) => (resolve(chunk), socket.destroy()))));
    const client = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, servername, rejectUnauthorized: false });
    client.on('error', () => undefined);
    const hello = await caught;
    client.destroy();
    return hello;
  } finally {
    server.close();
  }
}

const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 0xff]);
const extension = (type: number, data: Buffer): Buffer => Buffer.concat([u16(type), u16(data.length), data]);
const serverNames = (...names: string[]): Buffer => {
  const list = Buffer.concat(names.map((name) => Buffer.concat([Buffer.from([0]), u16(name.length), Buffer.from(name, 'latin1')])));
  return extension(0, Buffer.concat([u16(list.length), list]));
};
/** A ClientHello record holding `extensions`. */
function hello(...extensions: Buffer[]): Buffer {
  const all = Buffer.concat(extensions);
  const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32), Buffer.from([0]), u16(2), Buffer.from([0x13, 0x01]), Buffer.from([1, 0]), u16(all.length), all]);
  const handshake = Buffer.concat([Buffer.from([1, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff]), body]);
  return Buffer.concat([Buffer.from([0x16, 3, 1]), u16(handshake.length), handshake]);
}

describe('readClientHello', () => {
  it("reads the server name node:tls sends, and none when it sends none", async () => {
    expect(readClientHello(await realHello('Index.Example.org'))).toEqual({ kind: 'hello', serverName: 'index.example.org' });
    expect(readClientHello(await realHello(''))).toEqual({ kind: 'hello', serverName: undefined });
  });

  it('asks for the rest of the first record, byte by byte, and never past it', async () => {
    const bytes = await realHello('index.example.org');
    expect(readClientHello(bytes.subarray(0, 3))).toEqual({ kind: 'incomplete', need: 5 });
    expect(readClientHello(bytes.subarray(0, bytes.length - 1))).toEqual({ kind: 'incomplete', need: bytes.length });
    // What follows the record is the origin's to read.
    expect(readClientHello(Buffer.concat([bytes, Buffer.from('trailing')]))).toEqual({ kind: 'hello', serverName: 'index.example.org' });
  });

  it('refuses an encrypted ClientHello, two names, two server_name extensions, and a name that is not a DNS name', () => {
    expect(readClientHello(hello(serverNames('index.example.org')))).toEqual({ kind: 'hello', serverName: 'index.example.org' });
    expect(readClientHello(hello(serverNames('index.example.org'), extension(0xfe0d, Buffer.alloc(8))))).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/encrypted/) });
    expect(readClientHello(hello(serverNames('index.example.org', 'other.example.org')))).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/not one host name/) });
    expect(readClientHello(hello(serverNames('index.example.org'), serverNames('other.example.org')))).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/two server_name/) });
    expect(readClientHello(hello(serverNames('index.example.org\0.other')))).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/not a DNS name/) });
  });

  it('refuses what is not one well-formed ClientHello record', () => {
    const good = hello(serverNames('index.example.org'));
    expect(readClientHello(Buffer.from('GET / HTTP/1.1\r\n'))).toMatchObject({ kind: 'refused', reason: 'not a TLS handshake' });
    expect(readClientHello(Buffer.from([0x16, 3, 1, 0x40, 0x01]))).toMatchObject({ kind: 'refused', reason: 'a TLS record of 16385 bytes' });
    // An extension list longer than the hello says: refused, not read past.
    const lying = Buffer.from(good);
    lying.writeUInt16BE(lying.readUInt16BE(5 + 4 + 2 + 32 + 1 + 2 + 2 + 2) + 1, 5 + 4 + 2 + 32 + 1 + 2 + 2 + 2);
    expect(readClientHello(lying)).toMatchObject({ kind: 'refused' });
    // A handshake message other than ClientHello first.
    const serverHello = Buffer.from(good);
    serverHello[5] = 2;
    expect(readClientHello(serverHello)).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/not a ClientHello/) });
  });
});
