/**
 * The in-flight limiter when many waiting callers give up at once, as when a
 * gateway session holding thousands of queued calls at one plugin closes and
 * every one of them is cancelled (attack review S). Each abort takes its
 * caller out of the queue; if that cost grew with the queue, aborting 4n
 * waiters would cost 16 times aborting n (seconds of the host's thread at
 * 100,000 waiters, for every client). The row compares 4n against n in the
 * same round: 4 is linear.
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

/** Runs the limiter benchmark. */
export async function run(): Promise<BenchResult[]> {
  return [await abortScaling()];
}
