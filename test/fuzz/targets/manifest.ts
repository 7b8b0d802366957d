/**
 * Manifest forms: GUM JSON v1, GUM TOML, Open Discovery `mcp-plugin.json`,
 * handshake manifests, schema refs. Mostly-valid documents mutated in
 * structure and text, raw bytes, and TOML built from structured values.
 */
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import fc from 'fast-check';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { describe, expect } from 'vitest';
import { describeErrorCode } from '../../../src/errors/registry.js';
import { ManifestValidator, type ManifestReport, type ValidateCallOptions } from '../../../src/manifest/ManifestValidator.js';
import { validateHandshakeManifest } from '../../../src/manifest/handshake.js';
import type { ManifestForm } from '../../../src/manifest/model.js';
import { checkSchemaRefGrammar, schemaRefProblem, schemaRefsOf, SERVED_REF_GRAMMAR } from '../../../src/manifest/schemaRefs.js';
import { CHECK_STAGES } from '../../../src/manifest/violations.js';
import {
  applyMutations,
  applyTextMutations,
  depthOf,
  hasPrototypeKey,
  keysOf,
  mutation,
  ordinaryPrototypesOnly,
  textMutation,
  type Mutation,
  type TextMutation,
} from '../arbitraries/json.js';
import { pathLike } from '../arbitraries/strings.js';
import { expectResult, fuzzTarget } from '../harness.js';

const fixtures = join(import.meta.dirname, '../../../fixtures/manifests');
const readJson = (path: string): unknown => JSON.parse(readFileSync(join(fixtures, path), 'utf8'));
const readText = (path: string): string => readFileSync(join(fixtures, path), 'utf8');

const GUM_JSON_BASES = ['gum-json/valid/fli.json', 'gum-json/valid/fli-full.json', 'gum-json/valid/hello.json'].map(readJson);
const OPEN_DISCOVERY_BASES = ['open-discovery/valid/net-utils.json', 'open-discovery/valid/minimal.json'].map(readJson);
const TOML_TEXTS = ['gum-toml/valid/fli.toml', 'gum-toml/valid/two-tools-no-creds.toml'].map(readText);
const TOML_BASES: unknown[] = TOML_TEXTS.map((text) => parseToml(text));
const HANDSHAKE_BASES = ['handshake/valid/echo.json', 'handshake/valid/no-capabilities.json'].map(readJson);

const VALIDATORS = [new ManifestValidator(), new ManifestValidator({ preset: 'gum' }), new ManifestValidator({ firstParty: true })];
const MAX_BYTES = 1024 * 1024;
const MAX_DEPTH = 64;

const JSON_FRAGMENTS = ['{', '}', '[', ']', '"', ',', ':', '\\', '\\u0000', '"__proto__":{},', '"constructor":1,', 'null', '1e999', '-', '\uFEFF'];
const TOML_FRAGMENTS = [
  '[', ']', '[[tools]]', '[plugin]', '"', "'", '"""', "'''", '=', '.', '\n', '#', '{', '}', ',', '\\',
  '__proto__ = 1\n', 'constructor.prototype.x = 1\n', '[__proto__]\n', 'manifest_schema_version = 2\n',
  '1979-05-27T07:32:00Z', 'inf', 'nan', '0x', '99999999999999999999', 'a.b.c = ',
];

const stageRank = (stage: string): number => (CHECK_STAGES as readonly string[]).indexOf(stage);

/** What every report must satisfy, whatever the input. */
function checkReport(report: ManifestReport): void {
  let previous = 0;
  for (const v of report.violations) {
    const rank = stageRank(v.stage);
    expect(rank, `unknown stage ${v.stage}`).toBeGreaterThanOrEqual(0);
    expect(rank, 'violations out of check order').toBeGreaterThanOrEqual(previous);
    previous = rank;
    expect(describeErrorCode(v.code).stage, `${v.code} is not an install-stage code`).toBe('install');
    expect(v.pointer === '' || v.pointer.startsWith('/'), `bad pointer ${v.pointer}`).toBe(true);
  }
  expect(report.manifest !== undefined, 'a manifest is present exactly when there are no violations').toBe(report.violations.length === 0);
  if (report.manifest !== undefined) expect(ordinaryPrototypesOnly(report.manifest)).toBe(true);
}

/** inspectText and validateText agree and both hold the shared properties. */
function checkText(validator: ManifestValidator, input: string | Uint8Array, call: ValidateCallOptions): boolean {
  const inspected = validator.inspectText(input, call);
  expectResult(inspected);
  const report = inspected._unsafeUnwrap();
  checkReport(report);
  const validated = validator.validateText(input, call);
  expectResult(validated);
  if (validated.isErr()) expect(describeErrorCode(validated.error.code).stage).toBe('install');
  expect(validated.isOk(), 'validateText and inspectText disagree').toBe(report.violations.length === 0);
  if (validated.isErr()) expect(validated.error.code).toBe(report.violations[0]!.code);
  return validated.isOk();
}

const mutations = (keys: readonly string[]): fc.Arbitrary<Mutation[]> => fc.array(mutation(keys), { maxLength: 4 });
const textMutations = (fragments: readonly string[]): fc.Arbitrary<TextMutation[]> =>
  fc.oneof({ weight: 4, arbitrary: fc.constant<TextMutation[]>([]) }, { weight: 1, arbitrary: fc.array(textMutation(fragments), { minLength: 1, maxLength: 3 }) });
const validatorIndex = fc.nat({ max: VALIDATORS.length - 1 });

function jsonFormTarget(form: 'gum-json' | 'open-discovery', bases: readonly unknown[], fileName: string, weight: number): void {
  const keys = keysOf(...bases);
  fuzzTarget(
    `manifest ${form}: mutated documents, as values and as text`,
    [fc.constantFrom(...bases), mutations(keys), textMutations(JSON_FRAGMENTS), validatorIndex, fc.constantFrom('form', 'fileName', 'detect')],
    (base, muts, textMuts, which, how) => {
      const validator = VALIDATORS[which]!;
      const doc = applyMutations(base, muts);

      const byValue = validator.validateValue(doc, form);
      expectResult(byValue);
      if (byValue.isErr()) expect(describeErrorCode(byValue.error.code).stage).toBe('install');
      else expect(ordinaryPrototypesOnly(byValue.value)).toBe(true);
      checkReport(validator.inspectValue(doc, form)._unsafeUnwrap());

      const text = applyTextMutations(JSON.stringify(doc) ?? '', textMuts);
      const call: ValidateCallOptions = how === 'form' ? { form } : how === 'fileName' ? { fileName } : {};
      const textOk = checkText(validator, text, call);
      checkText(validator, Buffer.from(text, 'utf8'), call);

      if (textMuts.length > 0 || how !== 'form') return;
      let roundTrip: unknown;
      try {
        roundTrip = JSON.parse(text);
      } catch {
        expect(textOk).toBe(false);
        return;
      }
      if (hasPrototypeKey(roundTrip) || depthOf(roundTrip) > MAX_DEPTH || Buffer.byteLength(text) > MAX_BYTES) {
        expect(textOk, 'a prototype key, excess depth or excess size was accepted').toBe(false);
        return;
      }
      // With nothing the text parser refuses, text and value validation are the same function.
      const again = validator.validateValue(roundTrip, form);
      expect(again.isOk(), 'validateText and validateValue disagree').toBe(textOk);
    },
    { weight },
  );
}

/** TOML text from a mutated structured value, or the valid text mutated, or a soup of TOML syntax. */
const tomlText: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.tuple(fc.nat({ max: TOML_BASES.length - 1 }), mutations(keysOf(...TOML_BASES)), textMutations(TOML_FRAGMENTS)).map(([i, muts, textMuts]) => {
      const doc = applyMutations(TOML_BASES[i], muts);
      let text: string;
      try {
        text = stringifyToml(doc as Record<string, unknown>);
      } catch {
        text = TOML_TEXTS[i]!;
      }
      return applyTextMutations(text, textMuts);
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat({ max: TOML_TEXTS.length - 1 }), fc.array(textMutation(TOML_FRAGMENTS), { minLength: 1, maxLength: 6 }))
      .map(([i, textMuts]) => applyTextMutations(TOML_TEXTS[i]!, textMuts)),
  },
  { weight: 1, arbitrary: fc.array(fc.oneof(fc.constantFrom(...TOML_FRAGMENTS), fc.string({ maxLength: 6 })), { maxLength: 60 }).map((p) => p.join('')) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 400 }) },
);

function hasDate(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node instanceof Date) return true;
    if (typeof node === 'object' && node !== null) stack.push(...Object.values(node));
  }
  return false;
}

/** Bytes: random, invalid UTF-8, BOM-prefixed, over the limit. */
const rawBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 512 }) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...GUM_JSON_BASES, ...OPEN_DISCOVERY_BASES), fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 4 }))
      .map(([doc, at, bytes]) => {
        const text = Buffer.from(JSON.stringify(doc));
        const cut = at % (text.length + 1);
        return Buffer.concat([text.subarray(0, cut), bytes, text.subarray(cut)]);
      }),
  },
  { weight: 1, arbitrary: fc.constantFrom(...TOML_TEXTS).map((t) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(t)])) },
  { weight: 1, arbitrary: fc.constant(new Uint8Array(MAX_BYTES + 1).fill(0x20)) },
);

/** Registers the manifest targets. */
export function manifestTargets(): void {
  describe('manifests', () => {
    jsonFormTarget('gum-json', GUM_JSON_BASES, 'manifest.json', 1.5);
    jsonFormTarget('open-discovery', OPEN_DISCOVERY_BASES, 'mcp-plugin.json', 1);

    fuzzTarget(
      'manifest gum-toml: TOML built from mutated values, mutated text, soup',
      [tomlText, validatorIndex, fc.constantFrom('form', 'fileName', 'detect')],
      (text, which, how) => {
        const validator = VALIDATORS[which]!;
        const call: ValidateCallOptions = how === 'form' ? { form: 'gum-toml' } : how === 'fileName' ? { fileName: 'plugin.toml' } : {};
        const accepted = checkText(validator, text, call);
        if (how !== 'form') return;
        let parsed: unknown;
        try {
          parsed = parseToml(text, { maxDepth: 1000 });
        } catch {
          expect(accepted, 'text smol-toml refuses was accepted').toBe(false);
          return;
        }
        if (hasPrototypeKey(parsed) || depthOf(parsed) > MAX_DEPTH) {
          expect(accepted, 'a prototype key or excess depth was accepted').toBe(false);
          return;
        }
        if (!hasDate(parsed) && Buffer.byteLength(text) <= MAX_BYTES) {
          expect(validator.validateValue(parsed, 'gum-toml').isOk(), 'TOML text and value validation disagree').toBe(accepted);
        }
      },
      { weight: 1.5 },
    );

    fuzzTarget(
      'manifest: raw bytes in every form',
      [rawBytes, validatorIndex, fc.constantFrom<ManifestForm | undefined>('gum-json', 'gum-toml', 'open-discovery', undefined)],
      (bytes, which, form) => {
        checkText(VALIDATORS[which]!, bytes, form === undefined ? {} : { form });
      },
      { weight: 0.5 },
    );

    fuzzTarget(
      'manifest: any JavaScript value as a parsed document',
      [
        fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true, withDate: true, withTypedArray: true, withSparseArray: true, withBoxedValues: true }),
        fc.constantFrom<ManifestForm>('gum-json', 'gum-toml', 'open-discovery'),
      ],
      (value, form) => {
        const result = VALIDATORS[0]!.validateValue(value, form);
        expectResult(result);
        checkReport(VALIDATORS[0]!.inspectValue(value, form)._unsafeUnwrap());
      },
      { weight: 0.5 },
    );

    const handshakeKeys = keysOf(...HANDSHAKE_BASES);
    fuzzTarget(
      'handshake manifest: mutated documents',
      [fc.constantFrom(...HANDSHAKE_BASES), mutations(handshakeKeys)],
      (base, muts) => {
        const doc = applyMutations(base, muts);
        const result = validateHandshakeManifest(doc);
        expectResult(result, ['PLUGIN_HANDSHAKE_FAILED']);
        if (result.isErr()) {
          expect((result.error.details.violations as unknown[]).length).toBeGreaterThan(0);
          return;
        }
        const m = result.value;
        const d = doc as Record<string, unknown>;
        for (const field of ['plugin_id', 'plugin_version', 'protocol_version'] as const) {
          expect(typeof m[field]).toBe('string');
          expect(m[field]).toBe(d[field]);
        }
        expect(m.exposed_tools).toEqual(d.exposed_tools);
        if (m.capabilities !== undefined) {
          expect(m.capabilities).toEqual(d.capabilities);
          expect(new Set(m.capabilities).size).toBe(m.capabilities.length);
          for (const c of m.capabilities) expect(c.length > 0 && c.trim() === c).toBe(true);
        }
      },
      { weight: 1.5 },
    );

    const refLike = fc.oneof(pathLike, fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,130}$/), fc.string({ unit: 'binary', maxLength: 20 }));
    fuzzTarget(
      'schema ref: schemaRefProblem on path-like refs',
      [refLike],
      (ref) => {
        const problem = schemaRefProblem(ref);
        if (problem !== undefined) {
          expect(typeof problem).toBe('string');
          return;
        }
        expect(SERVED_REF_GRAMMAR.test(ref)).toBe(true);
        expect(`${ref}.response`.length).toBeLessThanOrEqual(128);
        for (const file of [`${ref}.json`, `${ref}.request`, `${ref}.response`]) {
          expect(posix.dirname(posix.resolve('/plugin/schemas', file)), `${file} leaves schemas/`).toBe('/plugin/schemas');
        }
      },
      { weight: 3 },
    );

    fuzzTarget(
      'schema ref: checkSchemaRefGrammar on manifests with hostile refs',
      [fc.constantFrom(...GUM_JSON_BASES), fc.array(fc.tuple(fc.nat(), refLike), { minLength: 1, maxLength: 4 }), mutations(['schema_ref'])],
      (base, refs, muts) => {
        const doc = applyMutations(base, muts) as Record<string, unknown>;
        const tools = typeof doc === 'object' && doc !== null && Array.isArray(doc.advertised_tools) ? doc.advertised_tools : [];
        for (const [i, ref] of refs) {
          const tool: unknown = tools[i % Math.max(1, tools.length)];
          if (typeof tool === 'object' && tool !== null && !Array.isArray(tool)) (tool as Record<string, unknown>).schema_ref = ref;
        }
        const violations = checkSchemaRefGrammar(doc, 'gum-json');
        const bad = schemaRefsOf(doc, 'gum-json').filter(({ ref }) => schemaRefProblem(ref) !== undefined);
        expect(violations.map((v) => v.pointer)).toEqual(bad.map((b) => b.pointer));
        for (const v of violations) expect(v.code).toBe('PLUGIN_SCHEMA_REF_INVALID');
        const validated = VALIDATORS[0]!.validateValue(doc, 'gum-json');
        expectResult(validated);
        if (bad.length > 0) expect(validated.isErr(), 'a manifest with an unsafe schema_ref was accepted').toBe(true);
      },
      { weight: 1 },
    );
  });
}
