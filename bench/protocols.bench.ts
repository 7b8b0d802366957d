/**
 * Protocol overhead of the ndjson-rpc and handshake sessions, each beside a
 * baseline that talks to the same plugin process without the session.
 *
 * - ndjson-rpc: one request/response round trip through NdjsonRpcSession
 *   against writing a line to the same echo plugin and awaiting a line back.
 *   Calls alternate between the two, so machine load hits both alike.
 * - handshake: one full one-shot invocation (launch, handshake, execute,
 *   teardown) against launching the same plugin and waiting for it to exit on
 *   EOF. Both use the same unsandboxed launcher, so the difference is the
 *   protocol's own cost ("besides the sandbox").
 */
import { fileURLToPath } from 'node:url';
import { HandshakeSession } from '../src/shapes/handshake/HandshakeSession.js';
import { NdjsonRpcSession } from '../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import { nodeArgv, plainLauncher, spawnPlain } from '../test/support/plainLauncher.js';
import { median, percentile, result, type BenchResult } from './harness.js';

const ECHO = fileURLToPath(new URL('../fixtures/plugins/ndjson-echo/echo.mjs', import.meta.url));
const HANDSHAKE = fileURLToPath(new URL('../fixtures/plugins/handshake-reference/plugin.mjs', import.meta.url));

const NDJSON_ROUNDS = 80;
const ROUND_TRIPS = 400;
const WARMUP = 200;
const LAUNCHES = 40;

const elapsedMs = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;
const ratioText = (ratio: number): string => `${ratio.toFixed(3)}×`;

/** A bare line round trip over a plugin's stdio: no ids, no validation, no Result. */
async function rawEcho(): Promise<{ roundTrip: (line: string) => Promise<void>; stop: () => Promise<unknown> }> {
  const proc = (await spawnPlain(nodeArgv(ECHO)))._unsafeUnwrap();
  let waiting: (() => void) | undefined;
  proc.stdout.on('data', (chunk: Buffer) => {
    if (chunk.includes(0x0a)) waiting?.();
  });
  return {
    roundTrip: (line) =>
      new Promise<void>((resolve) => {
        waiting = resolve;
        proc.stdin.write(line);
      }),
    stop: () => proc.stop(),
  };
}

/**
 * Where the OS places the two echo processes moves a 40 µs round trip by
 * more than the overhead measured: two raw echoes to two fresh plugins in
 * one round differ by up to 1.7×, while one pair's p50 barely moves within
 * a round. So every round starts a fresh pair (which of the two is spawned
 * first alternates), and the figure is the median over many rounds of each
 * round's p50.
 */
async function ndjsonRoundTrip(): Promise<BenchResult> {
  const params = { text: 'hello', n: 42 };
  const rawLine = `${JSON.stringify({ method: 'echo', params, id: 0 })}\n`;
  const sessionP50: number[] = [];
  const pipeP50: number[] = [];
  for (let round = 0; round < NDJSON_ROUNDS; round++) {
    const session = NdjsonRpcSession.create({ launch: plainLauncher(nodeArgv(ECHO)) })._unsafeUnwrap();
    // The session's plugin starts on its first call.
    if (round % 2 === 1) (await session.callTool('echo', params))._unsafeUnwrap();
    const raw = await rawEcho();
    for (let i = 0; i < WARMUP; i++) {
      (await session.callTool('echo', params))._unsafeUnwrap();
      await raw.roundTrip(rawLine);
    }
    const viaSession: number[] = [];
    const viaPipe: number[] = [];
    const sessionSide = async (): Promise<void> => {
      const start = process.hrtime.bigint();
      (await session.callTool('echo', params))._unsafeUnwrap();
      viaSession.push(elapsedMs(start));
    };
    const pipeSide = async (): Promise<void> => {
      const start = process.hrtime.bigint();
      await raw.roundTrip(rawLine);
      viaPipe.push(elapsedMs(start));
    };
    for (let i = 0; i < ROUND_TRIPS; i++) {
      // Which side goes first alternates: the second round trip of a pair meets the first plugin's wind-down.
      for (const side of i % 2 === 0 ? [sessionSide, pipeSide] : [pipeSide, sessionSide]) await side();
    }
    sessionP50.push(percentile(viaSession, 50));
    pipeP50.push(percentile(viaPipe, 50));
    await session.close();
    await raw.stop();
  }
  const roundRatios = sessionP50.map((p50, round) => p50 / pipeP50[round]!);
  const measured = result(
    {
      name: 'ndjson-rpc round trip p50',
      baselineName: 'raw pipe echo to the same plugin',
      unit: 'ms',
      compare: 'ratio',
      target: 1.1,
      better: 'lower',
      note: `${NDJSON_ROUNDS} rounds, each a fresh pair of Node echo plugins (which one is spawned first alternates) and ${ROUND_TRIPS} alternating round trips (which side goes first alternates too); p50 per round; the figures are the medians over rounds, the comparison the median of the per-round ratios session/pipe (quartiles ${ratioText(percentile(roundRatios, 25))}–${ratioText(percentile(roundRatios, 75))}, range ${ratioText(Math.min(...roundRatios))}–${ratioText(Math.max(...roundRatios))}; the ratio of the two medians: ${ratioText(median(sessionP50) / median(pipeP50))}); serialized session; target ≤ 1.10× (issue 18; issue 13 asked ≤ 1.5×). A warm call of a serialized session starts synchronously, sets no timer of its own (one per session, CallDeadlines) and allocates one call object, its promise and its request besides the JSON (issue 18; docs/performance.md).`,
    },
    sessionP50,
    pipeP50,
  );
  return { ...measured, pairedRatio: median(roundRatios) };
}

async function handshakeInvocation(): Promise<BenchResult> {
  const launch = plainLauncher(nodeArgv(HANDSHAKE));
  const session = HandshakeSession.create({ launch })._unsafeUnwrap();
  const invocations: number[] = [];
  const bareSpawns: number[] = [];
  const bareSpawn = async (): Promise<void> => {
    const proc = (await launch())._unsafeUnwrap();
    proc.stdin.end();
    await proc.exited;
  };
  await bareSpawn();
  (await session.callTool('echo', { warm: true }))._unsafeUnwrap();
  for (let i = 0; i < LAUNCHES; i++) {
    let start = process.hrtime.bigint();
    (await session.callTool('echo', { i }))._unsafeUnwrap();
    invocations.push(elapsedMs(start));
    start = process.hrtime.bigint();
    await bareSpawn();
    bareSpawns.push(elapsedMs(start));
  }
  await session.close();
  return result(
    {
      name: 'handshake one-shot invocation',
      baselineName: 'bare spawn and exit of the same plugin',
      unit: 'ms',
      compare: 'difference',
      target: 3,
      better: 'lower',
      note: `median of ${LAUNCHES} alternating runs each, Node reference plugin, plain spawn (no sandbox)`,
    },
    invocations,
    bareSpawns,
  );
}

/** Runs both protocol benchmarks. */
export async function run(): Promise<BenchResult[]> {
  return [await ndjsonRoundTrip(), await handshakeInvocation()];
}
