/**
 * The gateway and the host's observability, each figure beside a baseline
 * measured in the same run:
 *
 * - HTTP gateway throughput: 32 SDK Clients over Streamable HTTP (in a
 *   process of their own), each one call at a time, all at once, through
 *   `serveGateway`, against one SDK Client with 32 calls in flight straight
 *   to the plugin, and (a design note) against the same 32 clients calling a
 *   canned endpoint that only answers, the most those clients can drive;
 * - the per-call cost of the OpenTelemetry instrumentation when no provider
 *   is registered: `HostTelemetry.call` around work that is already done,
 *   against the same work unwrapped.
 *
 * The warm call through `mcp-plugin-host serve` over stdio has a file of its
 * own, bench/gatewayStdio.bench.ts.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { okAsync } from 'neverthrow';
import { PluginHost, serveGateway } from '../src/index.js';
import { HostTelemetry } from '../src/observability/telemetry.js';
import { result, type BenchResult } from './harness.js';
import { withHelloProfile } from './support/helloProfile.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const CLIENTS_SCRIPT = join(REPO, 'bench/support/gatewayClients.ts');
const CANNED_SCRIPT = join(REPO, 'bench/support/cannedMcpEndpoint.ts');
const execFileAsync = promisify(execFile);
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
    const cpuBefore = process.cpuUsage();
    const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', CLIENTS_SCRIPT, JSON.stringify(plan)], { cwd: REPO, maxBuffer: 1 << 20 });
    const cpu = process.cpuUsage(cpuBefore);
    const measured = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { gateway: number[]; direct: number[]; canned: number[]; clientCpuUsPerCall: number };
    // Everything this process did while the clients ran was serving the gateway's calls (warm-up included); the canned endpoint has its own process.
    const gatewayCalls = CLIENTS * (CALLS_PER_CLIENT * RUNS + WARMUP_CALLS_PER_CLIENT);
    const cpuPerCallUs = (cpu.user + cpu.system) / gatewayCalls;
    const throughput = result(
      {
        name: `Gateway HTTP throughput, ${CLIENTS} concurrent clients (sandboxed plugin)`,
        unit: 'calls/s',
        baselineName: `one SDK Client with ${CLIENTS} calls in flight straight to the plugin (unsandboxed)`,
        compare: 'ratio',
        target: 0.7,
        better: 'higher',
        note: `${RUNS} runs of ${CLIENTS} × ${CALLS_PER_CLIENT} calls each side to hello (no I/O, so the plugin's one thread bounds the baseline), rotating which side goes first; the clients run in a process of their own (bench/support/gatewayClients.ts), the gateway and its host (maxInFlight ${CLIENTS}) in this one, which spent ${cpuPerCallUs.toFixed(0)} µs of CPU per gateway call (HTTP, the gateway's Streamable HTTP transport, the SDK Server, host.call); the clients' process spent ${measured.clientCpuUsPerCall.toFixed(0)} µs per gateway call, which alone caps what these clients can drive (next row)`,
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
        note: `the runs of the row above, with the canned side as a third; the share of the SDK HTTP clients' own throughput the gateway delivers, plugin sandboxed behind it. The direct baseline above cannot be reached over HTTP with these clients: the canned side is their ceiling`,
      },
      measured.gateway,
      measured.canned,
    );
    return [throughput, ceiling];
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
