/**
 * The one harness every fuzz target runs through. It owns the case budget
 * (`FUZZ_RUNS`), counts the cases each target really executed, bounds the
 * time of every case, and checks after every case that no built-in
 * prototype gained or lost a key. Targets only say what to generate and
 * what must hold.
 */
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { Err, Ok } from 'neverthrow';
import { expect, it } from 'vitest';
import { HostError } from '../../src/errors/HostError.js';
import { isHostErrorCode, type HostErrorCode } from '../../src/errors/registry.js';

/** Runs of a weight-1 target when `FUZZ_RUNS` is unset (the CI budget). */
export const DEFAULT_FUZZ_RUNS = 3_000;

/** The total the default run must reach; the budget test fails below it. */
export const CI_MINIMUM_CASES = 100_000;

/** A case slower than this (twice in a row) counts as a hang. */
export const CASE_LIMIT_MS = Number(process.env.FUZZ_CASE_LIMIT_MS ?? 1_000);

function positiveIntegerFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** Runs of a weight-1 target in this run. */
export const FUZZ_RUNS = positiveIntegerFromEnv('FUZZ_RUNS', DEFAULT_FUZZ_RUNS);

/** A fixed seed replays a failing run (fast-check prints the seed and path of every failure). */
const FUZZ_SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

/** What one target planned and ran. */
export interface TargetTally {
  readonly name: string;
  readonly weight: number;
  readonly planned: number;
  executed: number;
  slowestMs: number;
  elapsedMs: number;
}

const tallies = new Map<string, TargetTally>();

/** Every target registered in this file so far, in registration order. */
export function targetTallies(): readonly TargetTally[] {
  return [...tallies.values()];
}

/** Runs a weight gets: cheap targets weigh more than one, costly ones less. */
export function runsFor(weight: number): number {
  return Math.max(1, Math.round(FUZZ_RUNS * weight));
}

/* ---------------------------------------------------------------- prototypes */

type Snapshot = ReadonlyMap<string | symbol, unknown>;

const WATCHED: ReadonlyArray<readonly [string, object]> = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
  ['Function.prototype', Function.prototype],
  ['String.prototype', String.prototype],
  ['Number.prototype', Number.prototype],
  ['Boolean.prototype', Boolean.prototype],
];

function snapshotOf(target: object): Snapshot {
  const out = new Map<string | symbol, unknown>();
  for (const key of Reflect.ownKeys(target)) {
    const descriptor = Object.getOwnPropertyDescriptor(target, key)!;
    out.set(key, 'value' in descriptor ? descriptor.value : descriptor.get);
  }
  return out;
}

const pristine: ReadonlyArray<readonly [string, object, Snapshot]> = WATCHED.map(([name, target]) => [name, target, snapshotOf(target)]);

/**
 * Throws when a watched prototype gained, lost or replaced a key, or when a
 * fresh object inherits an enumerable key. Cheap enough for every case.
 */
export function assertPristinePrototypes(): void {
  for (const [name, target, before] of pristine) {
    const keys = Reflect.ownKeys(target);
    if (keys.length !== before.size) {
      const added = keys.filter((k) => !before.has(k)).map(String);
      throw new Error(`${name} changed: ${keys.length} keys instead of ${before.size} (new: ${added.join(', ')})`);
    }
    for (const key of keys) {
      if (!before.has(key)) throw new Error(`${name} gained ${String(key)}`);
      const descriptor = Object.getOwnPropertyDescriptor(target, key)!;
      const now = 'value' in descriptor ? descriptor.value : descriptor.get;
      if (now !== before.get(key)) throw new Error(`${name}.${String(key)} was replaced`);
    }
  }
  for (const key in {}) throw new Error(`a fresh object inherits the enumerable key ${key}`);
  if (Object.getPrototypeOf({}) !== Object.prototype) throw new Error('the prototype of {} changed');
}

/* ------------------------------------------------------------- error checks */

// C0 and C1 controls and DEL, except tab and newline, which multi-line messages use.
const TERMINAL_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/**
 * Asserts that `value` is a {@link HostError} with a registered code (one of
 * `allowed` when given), a message that cannot drive a terminal, and a
 * `toJSON()` form that serializes (what `--json` prints).
 */
export function expectHostError(value: unknown, allowed?: readonly HostErrorCode[]): asserts value is HostError {
  expect(value).toBeInstanceOf(HostError);
  const error = value as HostError;
  expect(isHostErrorCode(error.code), `unregistered code ${String(error.code)}`).toBe(true);
  if (allowed !== undefined) expect(allowed, error.message).toContain(error.code);
  expect(typeof error.message).toBe('string');
  expect(TERMINAL_UNSAFE.test(error.message), `control character in message ${JSON.stringify(error.message)}`).toBe(false);
  expect(typeof JSON.stringify(error.toJSON())).toBe('string');
}

/** A neverthrow `Result`: `Ok` or `Err`. */
export type AnyResult<T> = Ok<T, unknown> | Err<T, unknown>;

/**
 * Asserts that `value` is a neverthrow Result whose error, if any, is a
 * registered {@link HostError} (one of `allowed` when given).
 */
export function expectResult<T>(value: AnyResult<T>, allowed?: readonly HostErrorCode[]): void {
  expect(value instanceof Ok || value instanceof Err, 'not a neverthrow Result').toBe(true);
  if (value.isErr()) expectHostError(value.error, allowed);
}

/* ------------------------------------------------------------------ targets */

/** How a target is registered. */
export interface TargetOptions {
  /** Share of `FUZZ_RUNS` this target runs (default 1). */
  readonly weight?: number;
}

type Arbitraries<Ts extends unknown[]> = { [K in keyof Ts]: fc.Arbitrary<Ts[K]> };

function timed(run: () => void): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

/**
 * Wraps a case body: runs it, fails if it took longer than `limitMs` twice
 * in a row (the repeat absorbs a stall of the machine or first-use
 * compilation; a super-linear input is slow every time), reports its
 * duration, then checks the prototypes.
 */
export function guardedCase<Ts extends unknown[]>(
  body: (...args: Ts) => void,
  onDuration: (ms: number) => void = () => {},
  limitMs: number = CASE_LIMIT_MS,
): (...args: Ts) => void {
  return (...args) => {
    let ms = timed(() => body(...args));
    if (ms > limitMs) ms = timed(() => body(...args));
    if (ms > limitMs) throw new Error(`case took ${ms.toFixed(0)} ms, over the ${limitMs} ms bound (a hang)`);
    onDuration(ms);
    assertPristinePrototypes();
  };
}

/**
 * Registers one fuzz target as a vitest test running `runsFor(weight)`
 * cases, each through {@link guardedCase}. The body calls the code under
 * test and asserts its properties.
 */
export function fuzzTarget<Ts extends [unknown, ...unknown[]]>(
  name: string,
  arbitraries: Arbitraries<Ts>,
  body: (...args: Ts) => void,
  options: TargetOptions = {},
): void {
  if (tallies.has(name)) throw new Error(`fuzz target ${name} is registered twice`);
  const weight = options.weight ?? 1;
  const tally: TargetTally = { name, weight, planned: runsFor(weight), executed: 0, slowestMs: 0, elapsedMs: 0 };
  tallies.set(name, tally);
  const predicate = guardedCase(body, (ms) => {
    tally.slowestMs = Math.max(tally.slowestMs, ms);
  });
  // Generous: a long campaign runs far more cases than CI, on a shared machine.
  const timeout = 60_000 + tally.planned * 20;
  it(
    name,
    () => {
      const started = performance.now();
      const details = fc.check(fc.property(...(arbitraries as unknown as [fc.Arbitrary<unknown>]), predicate as (...a: unknown[]) => void), {
        numRuns: tally.planned,
        ...(FUZZ_SEED === undefined ? {} : { seed: FUZZ_SEED }),
      });
      tally.elapsedMs = performance.now() - started;
      tally.executed = details.numRuns;
      if (details.failed) {
        const cause = details.errorInstance;
        const why = cause instanceof Error ? `${cause.message}\n${cause.stack ?? ''}` : String(cause);
        throw new Error(`${fc.defaultReportMessage(details) ?? `fuzz target ${name} failed`}\n\nFailure: ${why}`, { cause });
      }
      expect(tally.executed).toBe(tally.planned);
    },
    timeout,
  );
}

/** A table of what ran, for the end of the log and for docs/fuzzing.md. */
export function formatTallies(list: readonly TargetTally[]): string {
  const rows = list.map(
    (t) =>
      `${t.name.padEnd(48)} ${String(t.weight).padStart(5)} ${String(t.executed).padStart(9)} ${t.elapsedMs.toFixed(0).padStart(8)} ms ${(
        (t.elapsedMs * 1000) /
        Math.max(1, t.executed)
      )
        .toFixed(0)
        .padStart(6)} µs/case  slowest ${t.slowestMs.toFixed(1)} ms`,
  );
  const total = list.reduce((sum, t) => sum + t.executed, 0);
  const elapsed = list.reduce((sum, t) => sum + t.elapsedMs, 0);
  return [`${'target'.padEnd(48)} weight     cases     time`, ...rows, `${'total'.padEnd(48)}       ${String(total).padStart(9)} ${elapsed.toFixed(0).padStart(8)} ms`].join(
    '\n',
  );
}
