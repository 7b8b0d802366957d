/**
 * The gateway and the host's observability, each figure beside a baseline
 * measured in the same run:
 *
 * - HTTP gateway throughput: 32 raw HTTP clients (one keep-alive node:net
 *   connection and session each, in a process of their own), each one call
 *   at a time, all at once, through `serveGateway` of the package as built,
 *   against one SDK Client with 32 calls in flight straight to the plugin;
 *   and (design notes) the same with 32 lean node:http clients, with 32 SDK
 *   Clients over Streamable HTTP, and those against a canned endpoint that
 *   only answers, the most the SDK clients can drive; and the raw clients
 *   against a bare HTTP-to-pipe relay in front of the plugin, the most any
 *   gateway could deliver with the same two hops;
 * - the per-call cost of the OpenTelemetry instrumentation when no provider
 *   is registered: `HostTelemetry.call` around work that is already done,
 *   against the same work unwrapped.
 *
 * The warm call through `mcp-plugin-host serve` over stdio has a file of its
 * own, bench/gatewayStdio.bench.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { okAsync } from 'neverthrow';
import { HostTelemetry } from '../src/observability/telemetry.js';
import { pairedResult, result, type BenchResult } from './harness.js';
import { buildCli } from './support/builtCli.js';
import { withHelloProfile } from './support/helloProfile.js';
import { cpuUsOf, descendants } from './support/processCpu.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const CLIENTS_SCRIPT = join(REPO, 'bench/support/gatewayClients.ts');
const CANNED_SCRIPT = join(REPO, 'bench/support/cannedMcpEndpoint.ts');
const RELAY_SCRIPT = join(REPO, 'bench/support/httpPipeRelay.ts');
const CLIENTS = 32;
const CALLS_PER_CLIENT = 150;
/** Calls per client of each kind before the measured runs, in bench/support/gatewayClients.ts: the gateway's code is tiered up by V8 first. */
const WARMUP_CALLS_PER_CLIENT = 100;
const RUNS = 5;
const TOKEN = 'bench-token-0123456789abcdef';
const TELEMETRY_CALLS = 200_000;

/** A bench endpoint (the canned one, or the relay with its arguments) in a process of its own, its URL and pid; it stops when its stdin ends. */
async function endpoint(script: string, args: readonly string[] = []): Promise<{ url: string; pid: number; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const { url } = JSON.parse(line.toString('utf8')) as { url: string };
  return { url, pid: child.pid ?? 0, stop: () => child.stdin.end() };
}

/** The kinds of client that call through the gateway, and the raw clients calling the relay (measured the same way). */
type GatewaySide = 'gateway' | 'lean' | 'raw' | 'relay';
type PerSide = Record<GatewaySide, number>;

/** What bench/support/gatewayClients.ts measured, with the CPU time of this process (of the relay's, for the relay) and of the plugin's during its runs of each kind of gateway client, in µs. */
interface ClientRuns extends Record<GatewaySide | 'direct' | 'canned', number[]> {
  readonly clientCpuUsPerCall: PerSide;
  readonly gatewayCpuUs: PerSide;
  readonly pluginCpuUs: PerSide;
}

/**
 * Runs the clients' process; at each of its marks, reads the CPU time of
 * this process and of the gateway's plugin (every process under this one but
 * the clients', the canned endpoint's and the relay's), or for a relay run of
 * the relay's process and of its plugin, and lets it go on.
 */
async function runClients(plan: Readonly<Record<string, unknown>>, cannedPid: number, relayPid: number): Promise<ClientRuns> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLIENTS_SCRIPT, JSON.stringify(plan)], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const gatewayCpuUs: PerSide = { gateway: 0, lean: 0, raw: 0, relay: 0 };
  const pluginCpuUs: PerSide = { gateway: 0, lean: 0, raw: 0, relay: 0 };
  const plugin = (side: GatewaySide): number => cpuUsOf(side === 'relay' ? descendants(relayPid, []) : descendants(process.pid, [child.pid ?? 0, cannedPid, relayPid]));
  const server = (side: GatewaySide): number => {
    if (side === 'relay') return cpuUsOf([relayPid]);
    const used = process.cpuUsage();
    return used.user + used.system;
  };
  let begun = 0;
  let pluginBegun = 0;
  let last = '';
  for await (const line of createInterface({ input: child.stdout })) {
    const message = JSON.parse(line) as { mark?: 'begin' | 'end'; side?: GatewaySide };
    if (message.mark === 'begin' && message.side !== undefined) {
      pluginBegun = plugin(message.side);
      begun = server(message.side);
    } else if (message.mark === 'end' && message.side !== undefined) {
      gatewayCpuUs[message.side] += server(message.side) - begun;
      pluginCpuUs[message.side] += plugin(message.side) - pluginBegun;
    } else last = line;
    if (message.mark !== undefined) child.stdin.write('\n');
  }
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`bench/support/gatewayClients.ts exited with ${String(code)}`);
  return { ...(JSON.parse(last) as Omit<ClientRuns, 'gatewayCpuUs' | 'pluginCpuUs'>), gatewayCpuUs, pluginCpuUs };
}


async function httpThroughput(profileDir: string, helloEntry: string): Promise<BenchResult[]> {
  // The gateway as the package ships it (tsup's build), not the sources as tsx runs them.
  const built = await buildCli();
  try {
    const library = (await import(pathToFileURL(join(dirname(built.entry), 'index.js')).href)) as typeof import('../src/index.js');
    return await httpThroughputOf(library, profileDir, helloEntry);
  } finally {
    await built.remove();
  }
}

async function httpThroughputOf({ PluginHost, serveGateway }: typeof import('../src/index.js'), profileDir: string, helloEntry: string): Promise<BenchResult[]> {
  const opened = await PluginHost.open({ profileDir, profileKind: 'dev', maxInFlight: CLIENTS });
  if (opened.isErr()) throw opened.error;
  const host = opened.value;
  const served = await serveGateway(host, { http: { token: TOKEN, port: 0 } });
  if (served.isErr()) throw served.error;
  const gateway = served.value;
  const canned = await endpoint(CANNED_SCRIPT);
  const relay = await endpoint(RELAY_SCRIPT, [helloEntry, 'hello']);
  const plan = { url: gateway.url, cannedUrl: canned.url, relayUrl: relay.url, token: TOKEN, entry: helloEntry, opId: 'plug.hello.hello', tool: 'hello', clients: CLIENTS, perClient: CALLS_PER_CLIENT, runs: RUNS, warmupPerClient: WARMUP_CALLS_PER_CLIENT };
  try {
    const measured = await runClients(plan, canned.pid, relay.pid);
    // What this process did during a gateway run was serving that run's calls; the canned endpoint has its own process.
    const measuredCalls = CLIENTS * CALLS_PER_CLIENT * RUNS;
    const perCall = (side: GatewaySide): string =>
      `clients ${measured.clientCpuUsPerCall[side].toFixed(0)} µs, ${side === 'relay' ? 'relay' : 'gateway'} ${(measured.gatewayCpuUs[side] / measuredCalls).toFixed(0)} µs, plugin ${(measured.pluginCpuUs[side] / measuredCalls).toFixed(0)} µs`;
    const rawThroughput = pairedResult(
      {
        name: `Gateway HTTP throughput, ${CLIENTS} concurrent raw HTTP clients (sandboxed plugin)`,
        unit: 'calls/s',
        baselineName: `one SDK Client with ${CLIENTS} calls in flight straight to the plugin (unsandboxed)`,
        compare: 'ratio',
        target: 0.7,
        better: 'higher',
        note: `${RUNS} runs of ${CLIENTS} × ${CALLS_PER_CLIENT} calls each side to hello (no I/O, so the plugin's one thread bounds the baseline), rotating with the rows below after ${CLIENTS} × ${WARMUP_CALLS_PER_CLIENT} warm-up calls per kind of client; the ratio is the median of the runs' own ratios. The gateway is the package as built (tsup), with its host (maxInFlight ${CLIENTS}) in the bench's process. The clients cost as little as a real one can, so that the gateway and not the client is measured: ${CLIENTS} keep-alive node:net connections, one session each, every POST carrying the bearer token, Mcp-Session-Id, MCP-Protocol-Version, Accept and Content-Type, the request bytes built once per connection but for the JSON-RPC id; each answer's status, Content-Length and JSON body are checked (200, its own id, a result, not a tool error), anything else fails the run (bench/support/rawMcpHttpClient.ts). CPU per call (all threads): ${perCall('raw')}; three processes share 2 cores, docs/performance.md 'Gateway over HTTP' says where the time goes`,
      },
      measured.raw,
      measured.direct,
    );
    const leanThroughput = result(
      {
        name: `Gateway HTTP throughput, ${CLIENTS} concurrent lean HTTP clients (sandboxed plugin)`,
        unit: 'calls/s',
        baselineName: `one SDK Client with ${CLIENTS} calls in flight straight to the plugin (unsandboxed)`,
        compare: 'ratio',
        target: 0.7,
        better: 'higher',
        role: 'design',
        note: `the runs of the row above with ${CLIENTS} lean node:http clients in place of the raw ones: keep-alive node:http, one session each, a JSON POST of tools/call built per call, answers read as JSON or SSE (bench/support/leanMcpHttpClient.ts); CPU per call: ${perCall('lean')}. Node's HTTP client machinery costs the clients more than the gateway spends`,
      },
      measured.lean,
      measured.direct,
    );
    const throughput = result(
      {
        name: `Gateway HTTP throughput, ${CLIENTS} concurrent clients (sandboxed plugin)`,
        unit: 'calls/s',
        baselineName: `one SDK Client with ${CLIENTS} calls in flight straight to the plugin (unsandboxed)`,
        compare: 'ratio',
        target: 0.7,
        better: 'higher',
        role: 'design',
        note: `the runs of the rows above with ${CLIENTS} SDK Clients over Streamable HTTP (bench/support/gatewayClients.ts); CPU per call: ${perCall('gateway')}; the SDK clients' own cost caps what they can drive (next row), so this row measures the SDK client more than the gateway`,
      },
      measured.gateway,
      measured.direct,
    );
    const ceiling = result(
      {
        name: `Gateway HTTP throughput, ${CLIENTS} concurrent clients, against the clients' own ceiling`,
        unit: 'calls/s',
        baselineName: `the same ${CLIENTS} SDK Clients over Streamable HTTP calling a canned endpoint that only answers (bench/support/cannedMcpEndpoint.ts, a process of its own)`,
        compare: 'ratio',
        target: 0.7,
        better: 'higher',
        role: 'design',
        note: `the runs of the rows above, with the canned side as another; the share of the SDK HTTP clients' own throughput the gateway delivers, plugin sandboxed behind it. The direct baseline above cannot be reached over HTTP with these clients: the canned side is their ceiling`,
      },
      measured.gateway,
      measured.canned,
    );
    const relayThroughput = result(
      {
        name: `HTTP relay throughput, ${CLIENTS} concurrent raw HTTP clients, no gateway (unsandboxed plugin)`,
        unit: 'calls/s',
        baselineName: `one SDK Client with ${CLIENTS} calls in flight straight to the plugin (unsandboxed)`,
        compare: 'ratio',
        target: 0.7,
        better: 'higher',
        role: 'design',
        note: `the runs of the rows above with the same raw clients calling bench/support/httpPipeRelay.ts, a node:http server in a process of its own that relays each tools/call line to the plugin's stdin (the lines of one turn in one write) and answers with the plugin's line, its ids swapped: no checks, no host, so the most any gateway could deliver with an HTTP hop and a pipe hop on this machine. CPU per call: ${perCall('relay')}`,
      },
      measured.relay,
      measured.direct,
    );
    return [rawThroughput, leanThroughput, throughput, ceiling, relayThroughput];
  } finally {
    relay.stop();
    canned.stop();
    await gateway.close();
    await host.close();
  }
}

/** Nanoseconds per call of `work` run `n` times. */
async function nsPerCall(n: number, work: () => PromiseLike<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await work();
  return Number(process.hrtime.bigint() - start) / n;
}

async function telemetryWithoutProvider(): Promise<BenchResult> {
  const telemetry = new HostTelemetry();
  const facts = { opId: 'plug.hello.hello', toolName: 'hello', pluginId: 'hello', pluginVersion: '1.0.0', shape: 'mcp-plugin', callerId: undefined };
  const done = { shape: 'mcp-plugin' };
  const wrapped = (): PromiseLike<unknown> => telemetry.call(facts, () => okAsync(done)) as PromiseLike<unknown>;
  const bare = (): PromiseLike<unknown> => okAsync<typeof done, never>(done) as PromiseLike<unknown>;
  await nsPerCall(TELEMETRY_CALLS / 10, wrapped);
  await nsPerCall(TELEMETRY_CALLS / 10, bare);
  const values: number[] = [];
  const baselines: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    values.push((await nsPerCall(TELEMETRY_CALLS, wrapped)) / 1000);
    baselines.push((await nsPerCall(TELEMETRY_CALLS, bare)) / 1000);
  }
  return result(
    {
      name: 'OpenTelemetry per call without a provider',
      unit: 'µs',
      baselineName: 'the same settled call unwrapped',
      compare: 'difference',
      target: 3,
      better: 'lower',
      note: `${RUNS} runs of ${TELEMETRY_CALLS} calls each side; the difference is what every host.call pays for its span and duration metric when the application registers no provider (a warm call is about 100 µs or more)`,
    },
    values,
    baselines,
  );
}

/** Runs the gateway and observability benchmarks. */
export function run(): Promise<BenchResult[]> {
  return withHelloProfile('bench-gateway-', async (profileDir, helloEntry) => [...(await httpThroughput(profileDir, helloEntry)), await telemetryWithoutProvider()]);
}
