/**
 * What checking a plugin's large answer against its output schema costs the
 * host's thread (src/manifest/answerValidation.ts): the longest event-loop
 * stall while an answer over offThreadValidationBytes is validated on a
 * worker (the host's thread only copies it to the worker), beside the same
 * validation on the host's thread as it ran before, in the same round. The
 * schema is the costliest shape within every bound (a `$ref` DAG of about
 * 8190 expanded subschemas under `items`), the answer 100,000 `{}` elements
 * (300 KB). A second row: the size check every answer now passes before it
 * is validated, on an answer just under the threshold, beside that answer's
 * validation on the host's thread.
 */
import pluginAnswerLimits from '../etc/plugin-answers.json' with { type: 'json' };
import { answerLargerThan, validateOffThread } from '../src/manifest/answerValidation.js';
import { measureSchema } from '../src/manifest/schemaLimits.js';
import { outputSchemaValidators } from '../src/shapes/mcp/outputSchemaValidators.js';
import { dagUnderItems } from '../test/support/expensiveSchemas.js';
import { pairedResult, roundRatioSpread, timeMs, type BenchResult } from './harness.js';
import { longestTimerGap } from './support/timerGap.js';

const ROUNDS = 5;
const ELEMENTS = 100_000;
/** Size checks timed together: one takes microseconds. */
const SIZE_CHECKS = 1000;

/** The longest gap between 1 ms timers while `work` runs (a stall at its end shows within 5 ms). */
const stallDuring = (work: () => Promise<unknown>): Promise<number> => longestTimerGap(work, 5);

export async function run(): Promise<BenchResult[]> {
  const schema = dagUnderItems(11);
  const measured = measureSchema(schema);
  if (!measured.ok) throw new Error(`the benchmark schema must be within the bounds: ${measured.problem}`);
  const validator = outputSchemaValidators.getValidator<unknown>(schema as never);
  const large = { a: Array.from({ length: ELEMENTS }, () => ({})) };
  // Just under the threshold: what the host's thread still validates.
  const small = { a: Array.from({ length: Math.floor(pluginAnswerLimits.offThreadValidationBytes / 3) - 10 }, () => ({})) };
  if (answerLargerThan(small, pluginAnswerLimits.offThreadValidationBytes)) throw new Error('the small answer must be under the threshold');
  const stalls: number[] = [];
  const inThread: number[] = [];
  const checks: number[] = [];
  const smallValidations: number[] = [];
  for (let round = -1; round < ROUNDS; round++) {
    const stall = await stallDuring(async () => {
      const verdict = await validateOffThread({ dialect: 'output', schemaText: measured.text, value: large, owner: 'bench' });
      if (verdict.kind !== 'valid') throw new Error(`the large answer must pass on the worker: ${verdict.kind}`);
    });
    const before = await timeMs(() => {
      if (!validator(large).valid) throw new Error('the large answer must pass on the thread');
    });
    const check = await timeMs(() => {
      for (let i = 0; i < SIZE_CHECKS; i++) answerLargerThan(small, pluginAnswerLimits.offThreadValidationBytes);
    });
    const smallValidation = await timeMs(() => {
      for (let i = 0; i < SIZE_CHECKS; i++) validator(small);
    });
    // Round -1 warms the worker (its start and its compile) and the thread's validator.
    if (round < 0) continue;
    stalls.push(stall);
    inThread.push(before);
    checks.push(check / SIZE_CHECKS);
    smallValidations.push(smallValidation / SIZE_CHECKS);
  }
  return [
    pairedResult(
      {
        name: "host stall while a 300 KB answer is checked on a validation worker against the costliest output schema within the bounds",
        baselineName: "the same validation on the host's thread (before)",
        unit: 'ms',
        compare: 'ratio',
        target: 0.1,
        better: 'lower',
        note: `${ROUNDS} rounds; a $ref DAG of ${measured.ok ? 'about 8190' : '?'} expanded subschemas under items, ${ELEMENTS} {} elements; the stall is the longest gap of a 1 ms timer; per-round ratios ${roundRatioSpread(stalls, inThread)}`,
      },
      stalls,
      inThread,
    ),
    pairedResult(
      {
        name: 'size check before validating an answer just under offThreadValidationBytes',
        baselineName: "that answer's validation on the host's thread",
        unit: 'ms',
        compare: 'ratio',
        target: 0.05,
        better: 'lower',
        note: `${ROUNDS} rounds of ${SIZE_CHECKS} each; the same schema; per-round ratios ${roundRatioSpread(checks, smallValidations)}`,
      },
      checks,
      smallValidations,
    ),
  ];
}
