/**
 * The client side of the gateway throughput benchmark, in a process of its
 * own so that the clients' HTTP and SSE work is not counted against the
 * gateway: `clients` SDK Clients over Streamable HTTP to the gateway, each
 * one call at a time; as many raw clients (bench/support/rawMcpHttpClient.ts)
 * and as many lean ones (bench/support/leanMcpHttpClient.ts) the same way,
 * so that the gateway and not the client is what bounds them; one SDK Client
 * with `clients` calls in flight straight to the plugin over stdio; and as
 * many SDK Clients to the canned endpoint at `cannedUrl` (the most those
 * clients can drive); as many raw clients to the relay at `relayUrl`
 * (bench/support/httpPipeRelay.ts: the HTTP and pipe hops with no gateway
 * between). Prints
 * `{"gateway":[…],"lean":[…],"raw":[…],"relay":[…],"direct":[…],"canned":[…],"clientCpuUsPerCall":{"gateway":…,"lean":…,"raw":…,"relay":…}}`
 * (calls per second of each run, and this process's CPU per gateway call of
 * each kind of client) as the last line on stdout. Around each gateway or
 * relay run it prints `{"mark":"begin"|"end","side":…}` and waits for a line
 * on stdin, so that the gateway's process can read the CPU time of the
 * gateway (or the relay) and of its plugin for that run.
 *
 *   node --import tsx bench/support/gatewayClients.ts '{"url":…,"cannedUrl":…,"relayUrl":…,"token":…,"entry":…,"opId":…,"tool":…,"clients":32,"perClient":40,"runs":5,"warmupPerClient":10}'
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createInterface } from 'node:readline';
import { LeanMcpHttpClient } from './leanMcpHttpClient.js';
import { RawMcpHttpClient } from './rawMcpHttpClient.js';

interface Plan {
  readonly url: string;
  readonly cannedUrl: string;
  /** bench/support/httpPipeRelay.ts: as many raw clients call it, the HTTP and pipe hops without a gateway. */
  readonly relayUrl: string;
  readonly token: string;
  readonly entry: string;
  readonly opId: string;
  readonly tool: string;
  readonly clients: number;
  readonly perClient: number;
  readonly runs: number;
  readonly warmupPerClient: number;
}

const plan = JSON.parse(process.argv[2] ?? '{}') as Plan;
const ARGS = { name: 'bench' };

async function callsPerSecond(callers: readonly (() => Promise<unknown>)[], perClient: number): Promise<number> {
  const start = process.hrtime.bigint();
  await Promise.all(
    callers.map(async (call) => {
      for (let i = 0; i < perClient; i++) await call();
    }),
  );
  return (callers.length * perClient) / (Number(process.hrtime.bigint() - start) / 1e9);
}

const connectHttp = (url: string): Promise<Client[]> =>
  Promise.all(
    Array.from({ length: plan.clients }, async () => {
      const client = new Client({ name: 'bench-http', version: '0.0.0' }, { capabilities: {} });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${plan.token}` } } }));
      return client;
    }),
  );
const acks = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
/** Tells the gateway's process a run begins or ends and waits until it has read its CPU time. */
async function mark(mark: 'begin' | 'end', side: string): Promise<void> {
  process.stdout.write(`${JSON.stringify({ mark, side })}\n`);
  await acks.next();
}
const httpClients = await connectHttp(plan.url);
const leanClients = await Promise.all(
  Array.from({ length: plan.clients }, async () => {
    const client = new LeanMcpHttpClient(plan.url, plan.token);
    await client.initialize();
    return client;
  }),
);
const rawClients = await Promise.all(
  Array.from({ length: plan.clients }, async () => {
    const client = new RawMcpHttpClient(plan.url, plan.token);
    await client.open(plan.opId, ARGS);
    return client;
  }),
);
const relayClients = await Promise.all(
  Array.from({ length: plan.clients }, async () => {
    const client = new RawMcpHttpClient(plan.relayUrl, plan.token);
    await client.open(plan.opId, ARGS);
    return client;
  }),
);
const cannedClients = await connectHttp(plan.cannedUrl);
const direct = new Client({ name: 'bench-direct', version: '0.0.0' }, { capabilities: {} });
await direct.connect(new StdioClientTransport({ command: process.execPath, args: [plan.entry], stderr: 'pipe' }));

const viaGateway = httpClients.map((client) => () => client.callTool({ name: plan.opId, arguments: ARGS }));
const viaLean = leanClients.map((client) => () => client.callTool(plan.opId, ARGS));
const viaRaw = rawClients.map((client) => () => client.call());
const viaRelay = relayClients.map((client) => () => client.call());
const viaDirect = httpClients.map(() => () => direct.callTool({ name: plan.tool, arguments: ARGS }));
const viaCanned = cannedClients.map((client) => () => client.callTool({ name: plan.tool, arguments: ARGS }));
await callsPerSecond(viaGateway, plan.warmupPerClient);
await callsPerSecond(viaLean, plan.warmupPerClient);
await callsPerSecond(viaRaw, plan.warmupPerClient);
await callsPerSecond(viaRelay, plan.warmupPerClient);
await callsPerSecond(viaDirect, plan.warmupPerClient);
await callsPerSecond(viaCanned, plan.warmupPerClient);
const throughGateway = { gateway: viaGateway, lean: viaLean, raw: viaRaw, relay: viaRelay } as const;
const runs = { gateway: [] as number[], lean: [] as number[], raw: [] as number[], relay: [] as number[], direct: [] as number[], canned: [] as number[] };
const cpuUs = { gateway: 0, lean: 0, raw: 0, relay: 0 };
const sides = ['gateway', 'lean', 'raw', 'relay', 'direct', 'canned'] as const;
for (let run = 0; run < plan.runs; run++) {
  // Which side goes first rotates, so drift in machine load falls on all of them.
  for (const side of [...sides.slice(run % sides.length), ...sides.slice(0, run % sides.length)]) {
    if (side === 'direct') runs.direct.push(await callsPerSecond(viaDirect, plan.perClient));
    else if (side === 'canned') runs.canned.push(await callsPerSecond(viaCanned, plan.perClient));
    else {
      await mark('begin', side);
      const before = process.cpuUsage();
      runs[side].push(await callsPerSecond(throughGateway[side], plan.perClient));
      const used = process.cpuUsage(before);
      await mark('end', side);
      cpuUs[side] += used.user + used.system;
    }
  }
}
await Promise.all([...httpClients, ...leanClients, ...rawClients, ...relayClients, ...cannedClients, direct].map((c) => c.close()));
const measuredCalls = plan.runs * plan.clients * plan.perClient;
const clientCpuUsPerCall = { gateway: cpuUs.gateway / measuredCalls, lean: cpuUs.lean / measuredCalls, raw: cpuUs.raw / measuredCalls, relay: cpuUs.relay / measuredCalls };
process.stdout.write(`${JSON.stringify({ ...runs, clientCpuUsPerCall })}\n`);
process.stdin.destroy();
