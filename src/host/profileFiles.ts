/**
 * Output profile files: a profile author's definitions (TOML or JSON, the
 * shape of a GUM manifest's `output_profiles` table) with fixture-backed
 * tests, checked and run without a host. What `profile validate` and
 * `profile test` are built on.
 */
import { readFile } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { ErrorObject } from 'ajv';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { parse as parseToml } from 'smol-toml';
import profileFileSchema from '../../etc/schemas/output-profile-file.schema.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { gumAjv, type CompiledSchema } from '../manifest/schemas.js';
import {
  applyOutputProfile,
  checkProfileDefinitions,
  definedProfiles,
  effectiveProfile,
  estimateTokens,
  type OutputProfile,
  type ProfileOutcome,
  type ProfileProblem,
} from '../manifest/outputProfiles.js';

/** One fixture-backed test of a profile file (`[[tests]]`). */
export interface ProfileTest {
  /** Its name in reports. */
  readonly name: string;
  /** The profile it applies (defined in the file or built in). */
  readonly profile: string;
  /** A JSON sample result, relative to the file. */
  readonly fixture: string;
  /** The variant's `null_elision_safe_fields` the test assumes. */
  readonly null_elision_safe_fields?: readonly string[];
  /** A JSON file the shaped result must equal, relative to the file. */
  readonly expect_output?: string;
  /** Whether the sample must lose information. */
  readonly expect_lossy?: boolean;
  /** The length of the shaped record array. */
  readonly expect_result_count?: number;
  /** Items omitted by collapse_arrays and limit. */
  readonly expect_omitted_count?: number;
  /** The most estimated tokens the shaped result may take: the UTF-8 bytes of its JSON / 4, rounded up. */
  readonly expect_max_tokens?: number;
  /** Keys every shaped record (or the shaped body) must carry. */
  readonly expect_fields?: readonly string[];
}

/** A profile file as read: its definitions and tests, and every problem found. */
export interface ProfileFile {
  /** The file, as given. */
  readonly path: string;
  /** The definitions of its `output_profiles` table. */
  readonly definitions: Readonly<Record<string, OutputProfile>>;
  /** Its `tests`. */
  readonly tests: readonly ProfileTest[];
  /** Syntax, structure and semantic problems; empty when the file is valid. */
  readonly problems: readonly ProfileProblem[];
}

/** The outcome of one {@link ProfileTest}. */
export interface ProfileTestResult {
  /** The test's name. */
  readonly name: string;
  /** Whether every expectation held. */
  readonly passed: boolean;
  /** The expectations that did not hold, in words. */
  readonly failures: readonly string[];
  /** What the profile did to the fixture, when it could be applied. */
  readonly outcome?: ProfileOutcome;
}

let compiledFileSchema: CompiledSchema | undefined;

const GUM_MANIFEST_SCHEMA_ID = new URL('gum-manifest-v1.schema.json', profileFileSchema.$id).href;

function fileSchema(): CompiledSchema {
  compiledFileSchema ??= gumAjv().compile<unknown>(profileFileSchema);
  return compiledFileSchema;
}

function structureProblem(error: ErrorObject): ProfileProblem {
  const extra = error.keyword === 'additionalProperties' ? `/${String((error.params as { additionalProperty?: string }).additionalProperty)}` : '';
  const message = error.keyword === 'additionalProperties' ? 'unknown field' : (error.message ?? 'does not match the profile file schema');
  return { pointer: `${error.instancePath}${extra}`, code: 'PROFILE_INVALID', message };
}

let compiledDefinitionsSchema: CompiledSchema | undefined;

/**
 * The problems of a table of profile definitions that does not come from a
 * file or a manifest (a host's own): its structure, as a manifest's
 * `output_profiles` table, then its semantics. `at` is the table's pointer.
 */
export function checkProfileTable(table: unknown, at: string): ProfileProblem[] {
  compiledDefinitionsSchema ??= gumAjv().compile<unknown>({ $ref: `${GUM_MANIFEST_SCHEMA_ID}#/$defs/outputProfiles` });
  const check = compiledDefinitionsSchema;
  if (!check(table)) return (check.errors ?? []).map(structureProblem).map((p) => ({ ...p, pointer: `${at}${p.pointer}` }));
  return checkProfileDefinitions(table as Record<string, OutputProfile>, at);
}

/** Parses profile file text (TOML unless the name ends in `.json`) and checks it whole. */
export function parseProfileFile(path: string, text: string): ProfileFile {
  let doc: unknown;
  try {
    doc = extname(path).toLowerCase() === '.json' ? JSON.parse(text) : parseToml(text);
  } catch (cause) {
    return { path, definitions: {}, tests: [], problems: [{ pointer: '', code: 'PROFILE_INVALID', message: `not valid ${extname(path) === '.json' ? 'JSON' : 'TOML'}: ${(cause as Error).message.split('\n')[0] ?? ''}` }] };
  }
  const check = fileSchema();
  if (!check(doc)) {
    const structure = (check.errors ?? []).map(structureProblem);
    return { path, definitions: {}, tests: [], problems: [...structure, ...checkProfileDefinitions(definedProfiles(doc), '/output_profiles')] };
  }
  const body = doc as { output_profiles: Record<string, OutputProfile>; tests?: ProfileTest[] };
  const definitions = body.output_profiles;
  const tests = body.tests ?? [];
  const problems = [...checkProfileDefinitions(definitions, '/output_profiles')];
  tests.forEach((test, index) => {
    if (effectiveProfile(test.profile, definitions) === undefined) {
      problems.push({ pointer: `/tests/${index}/profile`, code: 'PROFILE_INVALID', message: `test ${JSON.stringify(test.name)} names profile ${JSON.stringify(test.profile)}, which is neither defined here nor built in` });
    }
  });
  return { path, definitions, tests, problems };
}

/** Reads and checks a profile file; HOST_IO_ERROR when it cannot be read. */
export function readProfileFile(path: string): ResultAsync<ProfileFile, HostError> {
  return ResultAsync.fromPromise(readFile(path, 'utf8'), (cause) => ioError('Reading the profile file', path, cause)).map((text) => parseProfileFile(path, text));
}

/**
 * Applies profile `name` of `file` (or a built-in) to a sample result, with
 * `safeFields` as the variant's `null_elision_safe_fields`.
 */
export function shapeSample(file: ProfileFile, name: string, sample: unknown, safeFields: readonly string[] = []): Result<{ readonly body: unknown; readonly outcome: ProfileOutcome }, HostError> {
  const profile = effectiveProfile(name, file.definitions);
  if (profile === undefined) return err(hostError('PROFILE_NOT_FOUND', `profile '${name}' is neither defined in ${file.path} nor built in`, { details: { profile: name } }));
  return ok(applyOutputProfile(profile, sample, safeFields));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The records `expect_fields` is checked on: the shaped record array's objects, else the body itself. */
function recordsOf(body: unknown): readonly unknown[] {
  if (Array.isArray(body)) return body;
  if (isObject(body)) {
    const arrays = Object.values(body).filter(Array.isArray);
    if (arrays.length === 1) return arrays[0] ?? [];
  }
  return [body];
}

async function readJson(base: string, relative: string): Promise<unknown> {
  return JSON.parse(await readFile(resolve(base, relative), 'utf8')) as unknown;
}

/** Runs one test: its fixture through its profile, then each expectation. */
async function runTest(file: ProfileFile, test: ProfileTest): Promise<ProfileTestResult> {
  const base = dirname(resolve(file.path));
  let sample: unknown;
  try {
    sample = await readJson(base, test.fixture);
  } catch (cause) {
    return { name: test.name, passed: false, failures: [`fixture ${test.fixture} cannot be read as JSON: ${(cause as Error).message}`] };
  }
  const shaped = shapeSample(file, test.profile, sample, test.null_elision_safe_fields ?? []);
  if (shaped.isErr()) return { name: test.name, passed: false, failures: [shaped.error.message] };
  const { body, outcome } = shaped.value;
  const failures: string[] = [];
  const expect = (label: string, wanted: unknown, got: unknown): void => {
    if (wanted !== undefined && !isDeepStrictEqual(wanted, got)) failures.push(`${label}: expected ${JSON.stringify(wanted)}, got ${JSON.stringify(got)}`);
  };
  expect('lossy', test.expect_lossy, outcome.lossy);
  expect('result count', test.expect_result_count, outcome.result_count);
  expect('omitted count', test.expect_omitted_count, outcome.omitted_count);
  const tokens = estimateTokens(JSON.stringify(body) ?? '');
  if (test.expect_max_tokens !== undefined && tokens > test.expect_max_tokens) failures.push(`tokens: expected at most ${test.expect_max_tokens}, got about ${tokens}`);
  for (const field of test.expect_fields ?? []) {
    const missing = recordsOf(body).filter((record) => !isObject(record) || !Object.hasOwn(record, field)).length;
    if (missing > 0) failures.push(`field ${JSON.stringify(field)} is missing from ${missing} shaped record(s)`);
  }
  if (test.expect_output !== undefined) {
    try {
      expect(`output (${test.expect_output})`, await readJson(base, test.expect_output), body);
    } catch (cause) {
      failures.push(`expected output ${test.expect_output} cannot be read as JSON: ${(cause as Error).message}`);
    }
  }
  return { name: test.name, passed: failures.length === 0, failures, outcome };
}

/** Runs every test of a valid profile file, in order; the tests of one profile only when `only` names it. */
export function runProfileTests(file: ProfileFile, only?: string): ResultAsync<readonly ProfileTestResult[], HostError> {
  const tests = file.tests.filter((t) => only === undefined || t.profile === only);
  return ResultAsync.fromSafePromise((async () => {
    const results: ProfileTestResult[] = [];
    for (const test of tests) results.push(await runTest(file, test));
    return results;
  })());
}
