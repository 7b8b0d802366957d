/**
 * The gateway and the host's observability, each figure beside a baseline
 * measured in the same run:
 *
 * - HTTP gateway throughput: 32 lean HTTP clients (keep-alive node:http, in
 *   a process of their own), each one call at a time, all at once, through
 *   `serveGateway`, against one SDK Client with 32 calls in flight straight
 *   to the plugin; and (design notes) the same with 32 SDK Clients over
 *   Streamable HTTP, and those against a canned endpoint that only answers,
 *   the most the SDK clients can drive;
 * - the per-call cost of the OpenTelemetry instrumentation when no provider
 *   is registered: `HostTelemetry.call` around work that is already done,
 *   against the same work unwrapped.
 *
 * The warm call through `mcp-plugin-host serve` over stdio has a file of its
 * own, bench/gatewayStdio.bench.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { okAsync } from 'neverthrow';
import { PluginHost, serveGateway } from '../src/index.js';
import { HostTelemetry } from '../src/observability/telemetry.js';
import { result, type BenchResult } from './harness.js';
import { withHelloProfile } from './support/helloProfile.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const CLIENTS_SCRIPT = join(REPO, 'bench/support/gatewayClients.ts');
const CANNED_SCRIPT = join(REPO, 'bench/support/cannedMcpEndpoint.ts');
const CLIENTS = 32;
const CALLS_PER_CLIENT = 40;
/** Calls per client before the measured runs, in bench/support/gatewayClients.ts. */
const WARMUP_CALLS_PER_CLIENT = 10;
const RUNS = 5;
const TOKEN = 'bench-token-0123456789abcdef';
const TELEMETRY_CALLS = 200_000;

/** The canned endpoint in a process of its own, and its URL; it stops when its stdin ends. */
async function cannedEndpoint(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CANNED_SCRIPT], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const { url } = JSON.parse(line.toString('utf8')) as { url: string };
  return { url, stop: () => child.stdin.end() };
}

/** What bench/support/gatewayClients.ts measured, and this process's CPU time during its runs of each kind of gateway client, in µs. */
interface ClientRuns {
  readonly gateway: number[];
  readonly lean: number[];
  readonly direct: number[];
  readonly canned: number[];
  readonly clientCpuUsPerCall: number;
  readonly leanClientCpuUsPerCall: number;
  readonly gatewayCpuUs: { gateway: number; lean: number };
}

/** Runs the clients' process; at each of its marks, reads this process's CPU time and lets it go on. */
async function runClients(plan: Readonly<Record<string, unknown>>): Promise<ClientRuns> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLIENTS_SCRIPT, JSON.stringify(plan)], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const gatewayCpuUs = { gateway: 0, lean: 0 };
  let begun = process.cpuUsage();
  let last = '';
  for await (const line of createInterface({ input: child.stdout })) {
    const message = JSON.parse(line) as { mark?: 'begin' | 'end'; side?: 'gateway' | 'lean' };
    if (message.mark === 'begin') begun = process.cpuUsage();
    else if (message.mark === 'end' && message.side !== undefined) {
      const used = process.cpuUsage(begun);
      gatewayCpuUs[message.side] += used.user + used.system;
    } else last = line;
    if (message.mark !== undefined) child.stdin.write('\n');
  }
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`bench/support/gatewayClients.ts exited with ${String(code)}`);
  return { ...(JSON.parse(last) as Omit<ClientRuns, 'gatewayCpuUs'>), gatewayCpuUs };
}

async function httpThroughput(profileDir: string, helloEntry: string): Promise<BenchResult[]> {
  const opened = await PluginHost.open({ profileDir, profileKind: 'dev', maxInFlight: CLIENTS });
  if (opened.isErr()) throw opened.error;
  const host = opened.value;
  const served = await serveGateway(host, { http: { token: TOKEN, port: 0 } });
  if (served.isErr()) throw served.error;
  const gateway = served.value;
  const canned = await cannedEndpoint();
  const plan = { url: gateway.url, cannedUrl: canned.url, token: TOKEN, entry: helloEntry, opId: 'plug.hello.hello', tool: 'hello', clients: CLIENTS, perClient: CALLS_PER_CLIENT, runs: RUNS, warmupPerClient: WARMUP_CALLS_PER_CLIENT };
  try {
    const measured = await runClients(plan);
    // What this process did during a gateway run was serving that run's calls; the canned endpoint has its own process.
    const measuredCalls = CLIENTS * CALLS_PER_CLIENT * RUNS;
    const cpuPerCallUs = measured.gatewayCpuUs.gateway / measuredCalls;
    const leanCpuPerCallUs = measured.gatewayCpuUs.lean / measuredCalls;
    const leanThroughput = result(
      {
        name: `Gateway HTTP throughput, ${CLIENTS} concurrent lean HTTP clients (sandboxed plugin)`,
        unit: 'calls/s',
        baselineName: `one SDK Client with ${CLIENTS} calls in flight straight to the plugin (unsandboxed)`,
        compare: 'ratio',
        target: 0.7,
        better: 'higher',
        note: `${RUNS} runs of ${CLIENTS} × ${CALLS_PER_CLIENT} calls each side to hello (no I/O, so the plugin's one thread bounds the baseline), rotating with the rows below; the clients are lean on purpose, so that the gateway and not the client is what is measured: ${CLIENTS} keep-alive node:http connections, one session each, JSON POSTs of tools/call accepting application/json and text/event-stream (bench/support/leanMcpHttpClient.ts), in a process of their own that spent ${measured.leanClientCpuUsPerCall.toFixed(0)} µs of CPU per call; the gateway and its host (maxInFlight ${CLIENTS}) in this one, which spent ${leanCpuPerCallUs.toFixed(0)} µs of CPU per call (HTTP, the tools/call fast path, host.call, the plugin's pipe). Three processes share 2 cores here: docs/performance.md 'Gateway over HTTP' says where the time goes`,
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
        note: `the runs of the row above with ${CLIENTS} SDK Clients over Streamable HTTP (bench/support/gatewayClients.ts) in place of the lean ones; the gateway's process spent ${cpuPerCallUs.toFixed(0)} µs of CPU per call (HTTP, the tools/call fast path, host.call); the clients' process spent ${measured.clientCpuUsPerCall.toFixed(0)} µs per call, which alone caps what these clients can drive (next row), so this row measures the SDK client more than the gateway`,
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
    return [leanThroughput, throughput, ceiling];
  } finally {
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
