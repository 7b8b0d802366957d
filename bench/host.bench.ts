/**
 * PluginHost end to end, each figure beside the official SDK driving the same
 * bundled plugin in the same run:
 *
 * - warm call p50: `host.call` (op lookup, quarantine and risk checks,
 *   events, the MCP session, a bubblewrap-sandboxed process) against a bare
 *   SDK `Client` + `StdioClientTransport` on an unsandboxed process;
 * - 32 concurrent calls against the same 32 one after another, through the
 *   host, on a tool that waits 5 ms as an upstream request would;
 * - cold first call (verify the pinned executable, sandbox, spawn,
 *   initialize, tools/list check, call) against the bare SDK's spawn,
 *   initialize and call;
 * - host heap per idle warm plugin: ten plugins started and left idle;
 * - what a session of its own costs a plugin's warm round trip (design note; the Landlock launcher avoids it).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { PluginHost } from '../src/index.js';
import { median, pairedResult, percentile, result, roundRatioSpread, type BenchResult } from './harness.js';
import { withHelloProfile } from './support/helloProfile.js';

const ROUNDS = 12;
const WARM_CALLS = 1000;
/**
 * Calls each side makes before a round of a warm row is measured. V8 tiers a
 * process's code up over its first thousand or two calls, and every round's
 * plugin processes are fresh: after a few hundred calls both servers were
 * still half compiled, adding the same slow server time to both sides. A
 * host is a long-lived process, so the warm rows measure warmed code.
 */
const WARMUP = 3000;
const CONCURRENCY_ROUNDS = 5;
const BATCH = 32;
const COLD_STARTS = 24;
const IDLE_PLUGINS = 10;
const HEAP_SAMPLES = 5;
const SESSION_ROUNDS = 8;
const SESSION_CALLS = 1000;

const elapsedMs = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

/** `keepIdle` keeps idle plugins running (idleTimeoutMs 0); otherwise the host's default idle timeout applies, as in use. */
async function openHost(profileDir: string, keepIdle = false): Promise<PluginHost> {
  const opened = await PluginHost.open({ profileDir, profileKind: 'dev', ...(keepIdle ? { idleTimeoutMs: 0 } : {}) });
  if (opened.isErr()) throw opened.error;
  return opened.value;
}

async function bareClient(entry: string): Promise<Client> {
  const client = new Client({ name: 'bench-baseline', version: '0.0.0' }, { capabilities: {} });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [entry], stderr: 'pipe' }));
  return client;
}

async function hostCall(host: PluginHost, op: string, args: unknown): Promise<void> {
  const r = await host.call(op, args);
  if (r.isErr()) throw r.error;
}

/**
 * Where the OS places two server processes on two busy cores moves a round
 * trip by more than the overhead measured, so every round starts a fresh pair
 * (in alternating order), and within a round which side goes first
 * alternates too; the figures are the medians over rounds of each round's
 * p50, the comparison the median of the per-round ratios (a round the OS
 * slowed for one side weighs no more than any other).
 */
async function warmCall(host: PluginHost, helloEntry: string): Promise<BenchResult> {
  const hostP50: number[] = [];
  const sdkP50: number[] = [];
  const viaHost = (): Promise<void> => hostCall(host, 'plug.hello.hello', { name: 'bench' });
  const timedHost = async (into: number[]): Promise<void> => {
    const t = process.hrtime.bigint();
    await viaHost();
    into.push(elapsedMs(t));
  };
  for (let round = 0; round < ROUNDS; round++) {
    // Stops the plugin, so the next call starts a fresh process.
    (await host.unquarantine('hello'))._unsafeUnwrap();
    let client: Client;
    if (round % 2 === 0) {
      await viaHost();
      client = await bareClient(helloEntry);
    } else {
      client = await bareClient(helloEntry);
      await viaHost();
    }
    const viaSdk = async (): Promise<void> => {
      await client.callTool({ name: 'hello', arguments: { name: 'bench' } });
    };
    const timedSdk = async (into: number[]): Promise<void> => {
      const t = process.hrtime.bigint();
      await viaSdk();
      into.push(elapsedMs(t));
    };
    for (let i = 0; i < WARMUP; i++) {
      await viaHost();
      await viaSdk();
    }
    const h: number[] = [];
    const s: number[] = [];
    for (let i = 0; i < WARM_CALLS; i++) {
      // The second call of a pair meets the first server's wind-down, so the order alternates.
      if (i % 2 === 0) {
        await timedHost(h);
        await timedSdk(s);
      } else {
        await timedSdk(s);
        await timedHost(h);
      }
    }
    hostP50.push(percentile(h, 50));
    sdkP50.push(percentile(s, 50));
    await client.close();
  }
  return pairedResult(
    {
      name: 'PluginHost warm call p50 (sandboxed)',
      unit: 'ms',
      baselineName: 'bare SDK Client + StdioClientTransport',
      compare: 'ratio',
      // Issue 18's target; issue 14 asked for 1.1.
      target: 1.05,
      better: 'lower',
      note: `${ROUNDS} rounds, each a fresh pair of hello processes (the same bundled bytes), ${WARMUP} warm-up calls each side (both servers' code tiered up, as in a long-lived host) and ${WARM_CALLS} alternating calls; host with its default idle timeout; p50 per round; the figures are the medians over rounds, the comparison the median of the per-round ratios (${roundRatioSpread(hostP50, sdkP50)}); our requests carry a progressToken (so that progress can extend a call's timeout), which the plugin parses and the bare SDK's requests lack (docs/performance.md "One warm call")`,
    },
    hostP50,
    sdkP50,
  );
}

async function concurrency(host: PluginHost): Promise<BenchResult> {
  const args = { message: 'x', delayMs: 5 };
  const concurrent: number[] = [];
  const sequential: number[] = [];
  await hostCall(host, 'plug.mcp-faulty.echo', args);
  for (let round = 0; round < CONCURRENCY_ROUNDS; round++) {
    let t = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) await hostCall(host, 'plug.mcp-faulty.echo', args);
    sequential.push(BATCH / (elapsedMs(t) / 1000));
    t = process.hrtime.bigint();
    await Promise.all(Array.from({ length: BATCH }, () => hostCall(host, 'plug.mcp-faulty.echo', args)));
    concurrent.push(BATCH / (elapsedMs(t) / 1000));
  }
  return result(
    {
      name: '32 concurrent calls through PluginHost (5 ms tool)',
      unit: 'calls/s',
      baselineName: 'the same 32 calls one after another',
      compare: 'ratio',
      target: 3,
      better: 'higher',
    },
    concurrent,
    sequential,
  );
}

async function coldCall(host: PluginHost, helloEntry: string): Promise<BenchResult> {
  const hostMs: number[] = [];
  const sdkMs: number[] = [];
  const ours = async (): Promise<void> => {
    (await host.unquarantine('hello'))._unsafeUnwrap();
    const t = process.hrtime.bigint();
    await hostCall(host, 'plug.hello.hello', { name: 'cold' });
    hostMs.push(elapsedMs(t));
  };
  const bare = async (): Promise<void> => {
    const t = process.hrtime.bigint();
    const client = await bareClient(helloEntry);
    await client.callTool({ name: 'hello', arguments: { name: 'cold' } });
    sdkMs.push(elapsedMs(t));
    await client.close();
  };
  for (let i = 0; i < COLD_STARTS; i++) {
    for (const side of i % 2 === 0 ? [ours, bare] : [bare, ours]) await side();
  }
  const pairs = hostMs.map((ms, i) => ms - sdkMs[i]!);
  const measured = result(
    {
      name: 'cold first call: verify + sandbox + spawn + initialize + tools/list + call',
      unit: 'ms',
      baselineName: 'bare SDK spawn + initialize + call',
      compare: 'difference',
      target: 10,
      better: 'lower',
      note: `${COLD_STARTS} pairs of cold starts, one of each side next to each other, alternating which side goes first; the comparison is the median of the per-pair differences (quartiles ${percentile(pairs, 25).toFixed(1)} to ${percentile(pairs, 75).toFixed(1)} ms; the difference of the two medians: ${(median(hostMs) - median(sdkMs)).toFixed(1)} ms), as load that changes from pair to pair moves both sides of a pair alike; the host's first start before the row recorded the verified tool list, so these starts send the call right after initialize and check tools/list beside it (docs/security-model.md); target issue 18's ≤ +10 ms (issue 14 asked for 25); where the time goes: docs/performance.md "One cold call"`,
    },
    hostMs,
    sdkMs,
  );
  return { ...measured, pairedDifference: median(pairs) };
}

async function idleHeap(profileDir: string, helloPkg: string): Promise<BenchResult> {
  const host = await openHost(profileDir, true);
  const manifest = JSON.parse(await readFile(join(helloPkg, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  for (let i = 0; i < IDLE_PLUGINS; i++) {
    await writeFile(join(helloPkg, 'manifest.json'), JSON.stringify({ ...manifest, plugin_id: `idle-${i}`, namespace_owner: `io.example.idle-${i}` }));
    (await host.install(helloPkg))._unsafeUnwrap();
  }
  await host.close();
  const gc = (globalThis as { gc?: () => void }).gc;
  const heap = (): number => {
    gc?.();
    return process.memoryUsage().heapUsed / 2 ** 20;
  };
  const before: number[] = [];
  const after: number[] = [];
  for (let sample = 0; sample < HEAP_SAMPLES; sample++) {
    const reopened = await openHost(profileDir, true);
    await hostCall(reopened, 'plug.hello.hello', { name: 'prime' });
    before.push(heap() / IDLE_PLUGINS);
    for (let i = 0; i < IDLE_PLUGINS; i++) await hostCall(reopened, `plug.idle-${i}.hello`, { name: 'idle' });
    await new Promise((r) => setTimeout(r, 200));
    after.push(heap() / IDLE_PLUGINS);
    await reopened.close();
  }
  return result(
    {
      name: 'host heap per idle warm plugin',
      unit: 'MiB',
      baselineName: 'heap before the plugins started, per plugin',
      compare: 'difference',
      target: 2,
      better: 'lower',
      note: `${HEAP_SAMPLES} samples, each a freshly opened host with ${IDLE_PLUGINS} plugins started and left idle; ${gc ? 'measured after gc()' : 'no gc() exposed, so the figure includes garbage'}`,
    },
    after,
    before,
  );
}

/** A `hello` process spoken to in raw JSON-RPC lines, one request at a time: no SDK, no host. */
class RawPeer {
  readonly #child: ChildProcessWithoutNullStreams;
  #answered: (() => void) | undefined;
  #nextId = 1;

  constructor(entry: string, ownSession: boolean) {
    this.#child = spawn(process.execPath, [entry], { stdio: 'pipe', detached: ownSession });
    this.#child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.includes(0x0a)) this.#answered?.();
    });
  }

  request(method: string, params: Record<string, unknown>): Promise<void> {
    return new Promise((resolve) => {
      this.#answered = resolve;
      this.#child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: this.#nextId++, method, params })}\n`);
    });
  }

  async open(): Promise<void> {
    await this.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
    this.#child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  }

  close(): void {
    this.#child.kill();
  }
}

/**
 * Under bubblewrap and unsandboxed the host starts a plugin in a session of
 * its own (Node's `detached`, and bubblewrap's `--new-session` again), which
 * the bare SDK's child does not get; the Landlock launcher keeps the plugin
 * in the host's session (its own process group, no terminal). With the kernel's autogroup scheduling a new session is a new
 * task group, and a round trip across task groups costs more: the same
 * plugin, in raw lines, in its own session against in the host's.
 */
async function ownSession(helloEntry: string): Promise<BenchResult> {
  const ownP50: number[] = [];
  const sharedP50: number[] = [];
  const call = (peer: RawPeer): Promise<void> => peer.request('tools/call', { name: 'hello', arguments: { name: 'bench' }, _meta: { progressToken: 1 } });
  for (let round = 0; round < SESSION_ROUNDS; round++) {
    // Which process starts first alternates by round.
    const ownFirst = round % 2 === 0 ? new RawPeer(helloEntry, true) : undefined;
    const shared = new RawPeer(helloEntry, false);
    const peers = { own: ownFirst ?? new RawPeer(helloEntry, true), shared };
    await peers.own.open();
    await peers.shared.open();
    for (let i = 0; i < WARMUP; i++) {
      await call(peers.own);
      await call(peers.shared);
    }
    const o: number[] = [];
    const s: number[] = [];
    const timed = async (peer: RawPeer, into: number[]): Promise<void> => {
      const t = process.hrtime.bigint();
      await call(peer);
      into.push(elapsedMs(t));
    };
    for (let i = 0; i < SESSION_CALLS; i++) {
      if (i % 2 === 0) {
        await timed(peers.own, o);
        await timed(peers.shared, s);
      } else {
        await timed(peers.shared, s);
        await timed(peers.own, o);
      }
    }
    ownP50.push(percentile(o, 50));
    sharedP50.push(percentile(s, 50));
    peers.own.close();
    peers.shared.close();
  }
  return result(
    {
      name: 'Warm round trip p50 to a plugin in its own session (as bubblewrap and the unsandboxed mode start it)',
      unit: 'ms',
      baselineName: "the same plugin in the host's session (as the bare SDK and the Landlock launcher start it)",
      compare: 'ratio',
      target: 1.05,
      better: 'lower',
      role: 'design',
      note: `${SESSION_ROUNDS} rounds, each a fresh pair of unsandboxed hello processes, ${WARMUP} warm-up and ${SESSION_CALLS} alternating tools/call round trips in raw JSON-RPC lines (no SDK, no host); p50 per round, median over rounds. The only difference is setsid (Node's detached): under the kernel's autogroup scheduling it puts the plugin in a task group of its own; the sandbox's own ingredients cost nothing measurable on a warm round trip (docs/performance.md "One warm call")`,
    },
    ownP50,
    sharedP50,
  );
}

/** Runs the PluginHost benchmarks. */
export async function run(): Promise<BenchResult[]> {
  return withHelloProfile(
    'bench-host-',
    async (profileDir, helloEntry, helloPkg) => {
      const host = await openHost(profileDir);
      const out = [await warmCall(host, helloEntry), await concurrency(host), await coldCall(host, helloEntry)];
      await host.close();
      out.push(await idleHeap(profileDir, helloPkg));
      out.push(await ownSession(helloEntry));
      return out;
    },
    [{ fixture: 'mcp-faulty', bundle: ['bin/mcp-faulty.mjs'] }],
  );
}
