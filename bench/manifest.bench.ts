/**
 * Validation throughput of the compiled ManifestValidator on a valid GUM v1
 * manifest, beside raw compiled Ajv on the same schema in the same run.
 * The validator does more than Ajv (gates, cross-record rules, credential,
 * schema-ref and strip-nulls checks, normalization; from text also the
 * size, UTF-8, depth and key checks), so the ratio says what that costs;
 * the absolute target is ≥ 20,000 manifests/s.
 */
import { readFileSync } from 'node:fs';
import { ManifestValidator } from '../src/manifest/ManifestValidator.js';
import { bundledValidator } from '../src/manifest/schemas.js';
import { opsPerSecond, result, type BenchResult } from './harness.js';

const ABSOLUTE_TARGET = 20_000;
const RUNS = 7;
const N = 20_000;

export async function run(): Promise<BenchResult[]> {
  const text = readFileSync(new URL('../fixtures/manifests/gum-json/valid/fli.json', import.meta.url), 'utf8');
  const doc: unknown = JSON.parse(text);
  const validator = new ManifestValidator({ preset: 'gum' });
  const ajv = bundledValidator('gum-json');

  const objectValidator = (): unknown => validator.validateValue(doc, 'gum-json');
  const rawAjv = (): unknown => ajv(doc);
  const textValidator = (): unknown => validator.validateText(text, { form: 'gum-json' });
  const parseThenAjv = (): unknown => ajv(JSON.parse(text));
  for (const fn of [objectValidator, rawAjv, textValidator, parseThenAjv]) {
    if (fn() === false) throw new Error('the benchmark manifest must be valid');
    await opsPerSecond(2_000, fn);
  }

  const object: number[] = [];
  const objectBase: number[] = [];
  const fromText: number[] = [];
  const fromTextBase: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    object.push(await opsPerSecond(N, objectValidator));
    objectBase.push(await opsPerSecond(N, rawAjv));
    fromText.push(await opsPerSecond(N, textValidator));
    fromTextBase.push(await opsPerSecond(N, parseThenAjv));
  }
  const note = (values: number[]): string => {
    const worst = Math.min(...values);
    return `absolute target ≥ ${ABSOLUTE_TARGET} manifests/s: slowest run ${worst.toFixed(0)}/s (${worst >= ABSOLUTE_TARGET ? 'met' : 'NOT met'}); ${RUNS} runs × ${N} validations`;
  };
  return [
    result(
      {
        name: 'manifest validation throughput, parsed GUM v1 object',
        baselineName: 'raw compiled Ajv on the same schema',
        unit: 'manifests/s',
        compare: 'ratio',
        target: 0.1,
        better: 'higher',
        note: note(object),
      },
      object,
      objectBase,
    ),
    result(
      {
        name: 'manifest validation throughput, GUM v1 text',
        baselineName: 'JSON.parse + raw compiled Ajv',
        unit: 'manifests/s',
        compare: 'ratio',
        target: 0.1,
        better: 'higher',
        note: note(fromText),
      },
      fromText,
      fromTextBase,
    ),
  ];
}
