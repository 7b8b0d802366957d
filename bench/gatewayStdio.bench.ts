/**
 * A warm call through `mcp-plugin-host serve` over stdio (the built CLI as a
 * subprocess, run as a user runs it; the plugin sandboxed behind it) against the SDK Client
 * calling the same bundled plugin directly, unsandboxed; and, measured in
 * the same rounds, a process that only copies bytes between the client and
 * the plugin (bench/support/pipeRelay.ts), and its C twin where a C compiler
 * is at hand (bench/support/pipeRelay.c): what the second hop costs before
 * the gateway does anything, and whether a runtime or the hop itself costs it. Then, free of the machine's scheduling, the
 * CPU one call costs in a single process: the SDK Client on a pair of
 * streams to `serveGateway`, against the two parts it is made of, a bare
 * `host.call` and the SDK Client calling the plugin directly.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { PluginHost, serveGateway } from '../src/index.js';
import { median, percentile, result, type BenchResult } from './harness.js';
import { buildCli } from './support/builtCli.js';
import { withHelloProfile } from './support/helloProfile.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const RELAY_SCRIPT = join(REPO, 'bench/support/pipeRelay.ts');
const NATIVE_RELAY_SOURCE = join(REPO, 'bench/support/pipeRelay.c');
const ROUNDS = 4;
// Every process of the chain (serve, the plugin, this client) keeps getting cheaper per call for its first ~2,000
// calls while V8 tiers its code up: serve's main thread spends about 200 µs of CPU on each of its first hundreds of
// calls and about 60 µs once warm; 200 calls measured the tiering, not a warm call.
const WARMUP = 3000;
const EARLY_CALLS = 500;
const WARM_CALLS = 600;
const ARGS = { name: 'bench' };
const CPU_ROUNDS = 5;
const CPU_CALLS = 2000;

const elapsedMs = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

/** CPU time the main thread of process `pid` has used, in ns (Linux). */
const threadCpuNs = (pid: number): number => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);

/** An SDK Client on a spawned stdio server, with the server's pid. */
async function stdioClient(name: string, args: readonly string[], command: string = process.execPath): Promise<{ client: Client; pid: number }> {
  const client = new Client({ name, version: '0.0.0' }, { capabilities: {} });
  const transport = new StdioClientTransport({ command, args: [...args], cwd: REPO, stderr: 'pipe' });
  await client.connect(transport);
  if (transport.pid === null) throw new Error(`${name}: no server process`);
  return { client, pid: transport.pid };
}

/** The native relay built into `dir`, or undefined where no C compiler runs (the row is then left out). */
function buildNativeRelay(dir: string): string | undefined {
  const binary = join(dir, 'pipeRelay');
  try {
    execFileSync('cc', ['-O2', '-o', binary, NATIVE_RELAY_SOURCE], { stdio: 'ignore' });
    return binary;
  } catch {
    return undefined;
  }
}

/** The sides of one round, in the order they are called. */
interface Side {
  readonly call: () => Promise<unknown>;
  readonly p50: number[];
}

/**
 * Each round starts a fresh `serve` process, a fresh bare plugin and a fresh
 * relay (the start order rotates), and each call of the round rotates which
 * side goes first; the figures are the medians over rounds of each round's p50.
 */
async function warmCalls(profileDir: string, helloEntry: string, cliEntry: string, nativeRelay: string | undefined): Promise<BenchResult[]> {
  const gatewayP50: number[] = [];
  const directP50: number[] = [];
  const relayP50: number[] = [];
  const nativeRelayP50: number[] = [];
  const serveCpuUsPerCall: number[] = [];
  const serveEarlyCpuUsPerCall: number[] = [];
  const starts = [
    () => stdioClient('bench-gateway', [cliEntry, 'serve', '--profile-dir', profileDir, '--dev']),
    () => stdioClient('bench-direct', [helloEntry]),
    () => stdioClient('bench-relay', ['--import', 'tsx', RELAY_SCRIPT, helloEntry]),
    ...(nativeRelay === undefined ? [] : [() => stdioClient('bench-native-relay', [process.execPath, helloEntry], nativeRelay)]),
  ];
  for (let round = 0; round < ROUNDS; round++) {
    const started: { client: Client; pid: number }[] = [];
    for (let k = 0; k < starts.length; k++) {
      const which = (k + round) % starts.length;
      started[which] = await starts[which]!();
    }
    const [gateway, ...bare] = started as [{ client: Client; pid: number }, ...{ client: Client; pid: number }[]];
    // The direct plugin, the relay and the native relay all serve the plugin's own tool name.
    const sides: Side[] = [
      { call: () => gateway.client.callTool({ name: 'plug.hello.hello', arguments: ARGS }), p50: [] },
      ...bare.map((side): Side => ({ call: () => side.client.callTool({ name: 'hello', arguments: ARGS }), p50: [] })),
    ];
    const serveCpuAtStart = threadCpuNs(gateway.pid);
    for (let i = 0; i < WARMUP; i++) {
      if (i === EARLY_CALLS) serveEarlyCpuUsPerCall.push((threadCpuNs(gateway.pid) - serveCpuAtStart) / EARLY_CALLS / 1000);
      for (const side of sides) await side.call();
    }
    const serveCpuBefore = threadCpuNs(gateway.pid);
    for (let i = 0; i < WARM_CALLS; i++) {
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(i + k) % sides.length]!;
        const start = process.hrtime.bigint();
        await side.call();
        side.p50.push(elapsedMs(start));
      }
    }
    serveCpuUsPerCall.push((threadCpuNs(gateway.pid) - serveCpuBefore) / WARM_CALLS / 1000);
    gatewayP50.push(percentile(sides[0]!.p50, 50));
    directP50.push(percentile(sides[1]!.p50, 50));
    relayP50.push(percentile(sides[2]!.p50, 50));
    if (sides[3] !== undefined) nativeRelayP50.push(percentile(sides[3].p50, 50));
    await Promise.all(started.map((s) => s.client.close()));
  }
  const relayRatio = median(relayP50) / median(directP50);
  const nativeRelayRatio = nativeRelayP50.length === 0 ? undefined : median(nativeRelayP50) / median(directP50);
  const rounds = `${ROUNDS} rounds, each a fresh serve process (the built CLI, node cli.js serve), a fresh bare hello process and a fresh relay${nativeRelay === undefined ? '' : ' of each kind'}, ${WARMUP} warm-up and ${WARM_CALLS} rotating calls each; p50 per round, median over rounds`;
  // Every row of the rounds compares a side's p50s with the direct call's against the same 1.3× line.
  const againstDirect = (name: string, note: string, p50: number[], role?: 'design'): BenchResult =>
    result({ name, unit: 'ms', baselineName: 'SDK Client calling the plugin directly (unsandboxed)', compare: 'ratio', target: 1.3, better: 'lower', ...(role === undefined ? {} : { role }), note }, p50, directP50);
  return [
    againstDirect(
      'Gateway warm call p50 through serve over stdio (sandboxed plugin behind it)',
      `${rounds}. tools/call takes the gateway's stdio fast path (src/gateway/stdioToolCalls.ts: one JSON.parse, no SDK server schemas); the serve process's main thread spent ${median(serveCpuUsPerCall).toFixed(0)} µs of CPU per measured call (median over rounds; wake-ups and pipe writes included), against ${median(serveEarlyCpuUsPerCall).toFixed(0)} µs per call over its first ${EARLY_CALLS} warm-up calls, while V8 still tiers its code up. Two stdio hops where the baseline has one: the next rows are the second hop alone, ${relayRatio.toFixed(2)}× before any work is done${nativeRelayRatio === undefined ? '' : ` (${nativeRelayRatio.toFixed(2)}× with a relay in C)`}${Math.min(relayRatio, nativeRelayRatio ?? relayRatio) > 1.3 ? ', so above the 1.3× target: no process in the middle meets it on this machine' : ''}; the rest is serve's own work per call (docs/performance.md "Gateway warm call")`,
      gatewayP50,
    ),
    againstDirect(
      'Second stdio hop alone: a byte relay between the SDK Client and the plugin, warm call p50',
      `the rounds of the row above, the relay (bench/support/pipeRelay.ts, unsandboxed) as its third side: a process that parses nothing and only copies bytes both ways. What any gateway process in the middle costs at least, so the floor under the row above`,
      relayP50,
      'design',
    ),
    ...(nativeRelay === undefined
      ? []
      : [
          againstDirect(
            'Second stdio hop alone, no runtime: a C byte relay between the SDK Client and the plugin, warm call p50',
            `the rounds of the rows above, with bench/support/pipeRelay.c (cc -O2: poll, read, write; no event loop, no JavaScript) as a side of its own: what the hop itself costs on this machine, whatever the process in the middle is written in`,
            nativeRelayP50,
            'design',
          ),
        ]),
  ];
}

/** CPU time of this process per call of `call`, in µs, over `n` calls in a row. */
async function cpuUsPerCall(n: number, call: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) await call();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

/**
 * One process: the SDK Client (on the SDK's stdio transport class, a plain
 * line transport on two streams) to `serveGateway` over a pair of
 * `PassThrough` streams, against `host.call` on a second host plus the SDK
 * Client straight to the plugin; the sides take turns, run by run.
 */
async function cpuInProcess(profileDir: string, helloEntry: string): Promise<BenchResult> {
  const open = async (): Promise<PluginHost> => (await PluginHost.open({ profileDir, profileKind: 'dev' }))._unsafeUnwrap();
  const [gatewayHost, host] = [await open(), await open()];
  const toGateway = new PassThrough();
  const fromGateway = new PassThrough();
  const gateway = (await serveGateway(gatewayHost, { stdio: { stdin: toGateway, stdout: fromGateway } }))._unsafeUnwrap();
  const viaGateway = new Client({ name: 'bench-gateway-in-process', version: '0.0.0' }, { capabilities: {} });
  await viaGateway.connect(new StdioServerTransport(fromGateway, toGateway));
  const direct = await stdioClient('bench-direct', [helloEntry]);
  const calls = {
    gateway: () => viaGateway.callTool({ name: 'plug.hello.hello', arguments: ARGS }),
    host: async () => (await host.call('plug.hello.hello', ARGS))._unsafeUnwrap(),
    direct: () => direct.client.callTool({ name: 'hello', arguments: ARGS }),
  };
  try {
    for (const call of Object.values(calls)) await cpuUsPerCall(WARMUP, call);
    const gatewayUs: number[] = [];
    const partsUs: number[] = [];
    for (let run = 0; run < CPU_ROUNDS; run++) {
      const order = run % 2 === 0 ? (['gateway', 'host', 'direct'] as const) : (['direct', 'host', 'gateway'] as const);
      const us: Partial<Record<keyof typeof calls, number>> = {};
      for (const side of order) us[side] = await cpuUsPerCall(CPU_CALLS, calls[side]);
      gatewayUs.push(us.gateway ?? 0);
      partsUs.push((us.host ?? 0) + (us.direct ?? 0));
    }
    return result(
      {
        name: 'CPU per warm call through serveGateway over stdio streams, in one process (SDK Client, gateway, host)',
        unit: 'µs',
        baselineName: 'host.call alone plus the SDK Client calling the plugin directly, in the same process',
        compare: 'difference',
        target: 25,
        better: 'lower',
        role: 'design',
        note: `${CPU_ROUNDS} runs of ${CPU_CALLS} calls each side, the order alternating; this process's CPU (the plugins' excluded). The difference is the gateway's stdio side alone: its transport, the fast path, the SERVER span, and the SDK Client's own parse on the gateway's answer where the baseline's client reads the plugin's; the pipe I/O of the second hop is not in it (the relay row above has that)`,
      },
      gatewayUs,
      partsUs,
    );
  } finally {
    await Promise.all([viaGateway.close(), direct.client.close()]);
    await gateway.close();
    await Promise.all([gatewayHost.close(), host.close()]);
  }
}

/** Runs the stdio gateway benchmarks. */
export function run(): Promise<BenchResult[]> {
  return withHelloProfile('bench-gateway-stdio-', async (profileDir, helloEntry) => {
    const cli = await buildCli();
    const relayDir = mkdtempSync(join(tmpdir(), 'bench-native-relay-'));
    try {
      return [...(await warmCalls(profileDir, helloEntry, cli.entry, buildNativeRelay(relayDir))), await cpuInProcess(profileDir, helloEntry)];
    } finally {
      rmSync(relayDir, { recursive: true, force: true });
      await cli.remove();
    }
  });
}
