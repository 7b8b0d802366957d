import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:net';

/** A listener that counts connections and closes them. */
export interface CountingServer {
  readonly connections: () => number;
  readonly close: () => Promise<void>;
}

function counting(server: Server): CountingServer {
  let count = 0;
  server.on('connection', (socket) => {
    count++;
    socket.end();
  });
  return { connections: () => count, close: () => new Promise((r) => server.close(() => r())) };
}

/** A TCP server on the host's loopback. */
export async function tcpServer(): Promise<CountingServer & { port: number }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  return { ...counting(server), port: typeof address === 'object' && address ? address.port : 0 };
}

/** A Unix socket server at `path`. */
export async function unixServer(path: string): Promise<CountingServer> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(path, r));
  return counting(server);
}

/** A UDP socket on the host's loopback; `onMessage` decides the reply. */
async function udp(onMessage: (msg: Buffer) => Buffer | undefined): Promise<{ port: number; received: () => number; close: () => void }> {
  const socket: Socket = createSocket('udp4');
  let received = 0;
  socket.on('message', (msg, rinfo) => {
    received++;
    const reply = onMessage(msg);
    if (reply) socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return { port: socket.address().port, received: () => received, close: () => socket.close() };
}

/** A UDP echo server. */
export const udpEchoServer = () => udp((msg) => msg);

/** A DNS server answering every A query with `address`. */
export function dnsServer(address: string) {
  return udp((query) => {
    if (query.length < 12) return undefined;
    let end = 12;
    while (end < query.length && query[end] !== 0) end += query[end]! + 1;
    const question = query.subarray(12, end + 5);
    const header = Buffer.from([query[0]!, query[1]!, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
    const answer = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...address.split('.').map(Number)]);
    return Buffer.concat([header, question, answer]);
  });
}
