/**
 * Redaction of audited arguments stays linear in a string's length on text
 * written to make a scan backtrack or rescan: secret names whose quoted or
 * header-line values never end, long runs of name characters, escapes. The
 * baseline is the same text at a quarter of the size, measured in the same
 * rounds: a linear scan takes about 4 times as long on 4 times the text, a
 * quadratic one about 16 times.
 */
import { randomBytes } from 'node:crypto';
import { redactArguments, secretNameSet } from '../src/audit/auditLines.js';
import { SecretRedactor } from '../src/secrets/knownSecrets.js';
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

// Log-like text with hex runs, base64 alphabet and name=value pairs: where the known-value alternation starts most partial matches.
const ORDINARY_LINE = 'request 0123456789abcdef user=ann path=/v1/items?page=2 took 12 ms token=abc Zm9vYmFy\n';
const KNOWN_SECRETS = 16;

/** The host's redaction with 16 known secret values (each in its ~14 forms) against the name-based redaction alone, on the same 1 MiB. */
async function knownValueRow(): Promise<BenchResult> {
  const secrets = secretNameSet();
  const known = new SecretRedactor(Array.from({ length: KNOWN_SECRETS }, () => randomBytes(16).toString('hex')));
  const args = { text: ORDINARY_LINE.repeat(Math.ceil(MIB / ORDINARY_LINE.length)).slice(0, MIB) };
  const byNameMs: number[] = [];
  const withKnownMs = await repeat(ROUNDS, async () => {
    byNameMs.push(await timeMs(() => redactArguments(args, secrets)));
    return timeMs(() => redactArguments(args, secrets, known));
  });
  return pairedResult(
    {
      name: `audit redaction with ${KNOWN_SECRETS} known secret values (all encodings), 1 MiB`,
      baselineName: 'the same text, names only',
      unit: 'ms',
      compare: 'ratio',
      target: 3,
      better: 'lower',
      note: `one pass, forms found by a rolling hash of their first characters; ${ROUNDS} rounds; ${roundRatioSpread(withKnownMs, byNameMs)}.`,
    },
    withKnownMs,
    byNameMs,
  );
}

const MANY_KNOWN_SECRETS = 200;

/** The host-wide redactor knowing 200 values (1,200 forms, past where one alternation left V8's fast path) against 16, on the same 1 MiB. */
async function manyKnownValuesRow(): Promise<BenchResult> {
  const knownValues = (count: number): SecretRedactor => new SecretRedactor(Array.from({ length: count }, () => randomBytes(16).toString('hex')));
  const few = knownValues(KNOWN_SECRETS);
  const many = knownValues(MANY_KNOWN_SECRETS);
  const text = ORDINARY_LINE.repeat(Math.ceil(MIB / ORDINARY_LINE.length)).slice(0, MIB);
  const fewMs: number[] = [];
  const manyMs = await repeat(ROUNDS, async () => {
    fewMs.push(await timeMs(() => few.redact(text)));
    return timeMs(() => many.redact(text));
  });
  return pairedResult(
    {
      name: `known-value redaction with ${MANY_KNOWN_SECRETS} values, 1 MiB`,
      baselineName: `the same text, ${KNOWN_SECRETS} values`,
      unit: 'ms',
      compare: 'ratio',
      target: 2,
      better: 'lower',
      note: `forms indexed by a rolling hash of their first characters; ${ROUNDS} rounds; ${roundRatioSpread(manyMs, fewMs)}.`,
    },
    manyMs,
    fewMs,
  );
}

const VENDOR_PREFIX = 'sk-live-';

/**
 * 200 values sharing a vendor prefix against 16 such values, on 1 MiB that
 * repeats the prefix (a plugin printing it over and over): the forms with
 * the same first characters must not be tried one by one at each place.
 */
async function sharedPrefixRow(): Promise<BenchResult> {
  const knownValues = (count: number): SecretRedactor => new SecretRedactor(Array.from({ length: count }, () => VENDOR_PREFIX + randomBytes(16).toString('hex')));
  const few = knownValues(KNOWN_SECRETS);
  const many = knownValues(MANY_KNOWN_SECRETS);
  const text = VENDOR_PREFIX.repeat(MIB / VENDOR_PREFIX.length);
  const fewMs: number[] = [];
  const manyMs = await repeat(ROUNDS, async () => {
    fewMs.push(await timeMs(() => few.redact(text)));
    return timeMs(() => many.redact(text));
  });
  return pairedResult(
    {
      name: `known-value redaction with ${MANY_KNOWN_SECRETS} values sharing a prefix, 1 MiB repeating it`,
      baselineName: `the same text, ${KNOWN_SECRETS} such values`,
      unit: 'ms',
      compare: 'ratio',
      target: 2,
      better: 'lower',
      note: `one set lookup per form length where the prefix begins; trying each form in turn was 6.5x on this row (2.25 s for the 200 values); ${ROUNDS} rounds; ${roundRatioSpread(manyMs, fewMs)}.`,
    },
    manyMs,
    fewMs,
  );
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
    await knownValueRow(),
    await manyKnownValuesRow(),
    await sharedPrefixRow(),
  ];
}
