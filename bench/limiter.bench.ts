/**
 * The in-flight limiter under many waiting calls. First when they give up at
 * once, as when a gateway session holding thousands of queued calls at one
 * plugin closes and every one of them is cancelled (attack review S). Each
 * abort takes its caller out of the queue; if that cost grew with the queue,
 * aborting 4n waiters would cost 16 times aborting n (seconds of the host's
 * thread at 100,000 waiters, for every client). The row compares 4n against
 * n in the same round: 4 is linear. Then when they are admitted: each freed
 * slot goes to the next caller in turn, which must cost the same with 1,000
 * callers as with one (a gateway serves many clients at one plugin), and the
 * same per call for a backlog of 4n as of n.
 */
import { InFlightLimiter } from '../src/shapes/InFlightLimiter.js';
import { pairedResult, type BenchResult } from './harness.js';

const WAITERS = 10_000;
const ROUNDS = 15;

/** Time to abort `waiters` callers queued on a full limiter, each with its own signal, oldest first. */
async function abortAll(waiters: number): Promise<number> {
  const limiter = new InFlightLimiter(1);
  limiter.tryAcquire();
  const controllers = Array.from({ length: waiters }, () => new AbortController());
  const waiting = controllers.map((c) => limiter.acquire(c.signal));
  const start = process.hrtime.bigint();
  for (const controller of controllers) controller.abort();
  await Promise.all(waiting);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Aborting 4n waiters against n, paired per round. */
async function abortScaling(): Promise<BenchResult> {
  const many: number[] = [];
  const few: number[] = [];
  await abortAll(WAITERS);
  for (let round = 0; round < ROUNDS; round++) {
    few.push(await abortAll(WAITERS));
    many.push(await abortAll(4 * WAITERS));
  }
  return pairedResult(
    {
      name: 'In-flight limiter: aborting 4n queued callers vs n',
      baselineName: `aborting n = ${WAITERS}`,
      unit: 'ms',
      compare: 'ratio',
      target: 6,
      better: 'lower',
      note: `${ROUNDS} rounds, each aborting ${WAITERS} then ${4 * WAITERS} callers queued on a full limiter, oldest first; linear is 4, a queue scanned on every abort 16`,
    },
    many,
    few,
  );
}

const ADMITTED = 100_000;
const CALLERS = 1_000;

/**
 * Time to queue `calls` calls from `callers` callers (in turn) on a full
 * limiter of one slot, then admit every one: each call gives its slot back as
 * soon as it has it, so the slot goes round the callers' turns to the end.
 */
async function admitAll(calls: number, callers: number): Promise<number> {
  const limiter = new InFlightLimiter(1);
  const held = limiter.tryAcquire()!;
  const names = Array.from({ length: callers }, (_, i) => `caller-${i}`);
  const start = process.hrtime.bigint();
  const admitted = Array.from({ length: calls }, (_, i) => limiter.acquire(undefined, names[i % callers]).then((release) => release?.()));
  held();
  await Promise.all(admitted);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** The cost of admitting calls with 1,000 callers taking turns against one caller, paired per round. */
async function callerScaling(): Promise<BenchResult> {
  const many: number[] = [];
  const one: number[] = [];
  await admitAll(ADMITTED, CALLERS);
  for (let round = 0; round < ROUNDS; round++) {
    one.push(await admitAll(ADMITTED, 1));
    many.push(await admitAll(ADMITTED, CALLERS));
  }
  return pairedResult(
    {
      name: `In-flight limiter: admitting calls of ${CALLERS.toLocaleString('en-US')} callers in turn vs one caller`,
      baselineName: 'one caller',
      unit: 'ms',
      compare: 'ratio',
      target: 2,
      better: 'lower',
      note: `${ROUNDS} rounds, each queuing ${ADMITTED.toLocaleString('en-US')} calls on a full limiter of one slot and admitting all of them (each gives its slot back at once), first from one caller, then spread over ${CALLERS.toLocaleString('en-US')} callers served round robin; a turn that costs the same however many callers wait keeps the ratio near 1, a scan of the callers at each turn would make it hundreds`,
    },
    many,
    one,
  );
}

/** One caller's backlog of 4n calls admitted against n, paired per round. */
async function backlogScaling(): Promise<BenchResult> {
  const many: number[] = [];
  const few: number[] = [];
  await admitAll(ADMITTED, 1);
  for (let round = 0; round < ROUNDS; round++) {
    few.push(await admitAll(ADMITTED / 4, 1));
    many.push(await admitAll(ADMITTED, 1));
  }
  return pairedResult(
    {
      name: "In-flight limiter: admitting one caller's backlog of 4n calls vs n",
      baselineName: `admitting n = ${(ADMITTED / 4).toLocaleString('en-US')}`,
      unit: 'ms',
      compare: 'ratio',
      target: 6,
      better: 'lower',
      note: `${ROUNDS} rounds, each queuing ${(ADMITTED / 4).toLocaleString('en-US')} then ${ADMITTED.toLocaleString('en-US')} calls of one caller on a full limiter of one slot and admitting all of them; linear is 4. A caller's queue kept as a Set served from its front was quadratic: each read of its first entry skipped every entry deleted before it (200,000 calls took 7 s)`,
    },
    many,
    few,
  );
}

/** Runs the limiter benchmark. */
export async function run(): Promise<BenchResult[]> {
  return [await abortScaling(), await callerScaling(), await backlogScaling()];
}
