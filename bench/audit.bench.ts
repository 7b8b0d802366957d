/**
 * Redaction of audited arguments stays linear in a string's length on text
 * written to make a scan backtrack or rescan: secret names whose quoted or
 * header-line values never end, long runs of name characters, escapes. The
 * baseline is the same text at a quarter of the size, measured in the same
 * rounds: a linear scan takes about 4 times as long on 4 times the text, a
 * quadratic one about 16 times.
 */
import { redactArguments, secretNameSet } from '../src/audit/auditLines.js';
import { pairedResult, repeat, roundRatioSpread, timeMs, type BenchResult } from './harness.js';

const ROUNDS = 7;
const MIB = 1024 * 1024;

// Each piece opens a value that does not close on its line, or is a name that fails late.
const ADVERSARIAL_PIECES = ['password="', "api_key='", 'Cookie: ', 'Authorization: Bearer ', 'token=\\', 'a-a-a-a-', 'https://u:', 'bearer '];

/** `bytes` of adversarial text, the pieces repeated in turn. */
function adversarialText(bytes: number): string {
  const unit = ADVERSARIAL_PIECES.join('');
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
}

/** Runs the benchmark. */
export async function run(): Promise<BenchResult[]> {
  const secrets = secretNameSet();
  const small = { text: adversarialText(MIB) };
  const large = { text: adversarialText(4 * MIB) };
  const smallMs: number[] = [];
  const largeMs = await repeat(ROUNDS, async () => {
    smallMs.push(await timeMs(() => redactArguments(small, secrets)));
    return timeMs(() => redactArguments(large, secrets));
  });
  return [
    pairedResult(
      {
        name: 'audit redaction, 4 MiB vs 1 MiB of adversarial text',
        baselineName: 'the same text, 1 MiB',
        unit: 'ms',
        compare: 'ratio',
        target: 6,
        better: 'lower',
        note: `linear is 4×, quadratic 16×; ${ROUNDS} rounds; ${roundRatioSpread(largeMs, smallMs)}.`,
      },
      largeMs,
      smallMs,
    ),
  ];
}
