/**
 * Shared benchmark vocabulary. Every benchmark reports its figure beside a
 * baseline measured in the same run, so a slow or busy machine moves both.
 */
import os from 'node:os';

/** Whether a bigger or a smaller ratio is better. */
export type Better = 'higher' | 'lower';

/** A bound on the figure itself, checked beside the comparison (an issue target stated in units, not as a ratio). */
export interface AbsoluteTarget {
  readonly target: number;
  readonly better: Better;
  /** Which figure must meet it: the median (default) or the worst run of the spread. */
  readonly on?: 'median' | 'worst';
}

/** One benchmark's outcome, as written to BENCHMARKS.md. */
export interface BenchResult {
  /** Which issue's benchmark this is, e.g. "validation throughput". */
  readonly name: string;
  /** The figure measured (median of the runs). */
  readonly value: number;
  /** The baseline measured in the same run (median of the runs). */
  readonly baseline: number;
  /** What the baseline is. */
  readonly baselineName: string;
  /** Unit of value and baseline, e.g. "ops/s", "ms". */
  readonly unit: string;
  /**
   * How the target is checked: value/baseline (`ratio`), value-baseline
   * (`difference`), or the value itself (`absolute`, when the target names the
   * figure; the baseline is then shown for context only).
   */
  readonly compare: 'ratio' | 'difference' | 'absolute';
  /** The target the comparison must meet, e.g. 1.1 (ratio) or 12 (ms difference). */
  readonly target: number;
  /** Whether the figure must be at least (`higher`) or at most (`lower`) the target. */
  readonly better: Better;
  /** Spread of the runs of value: [min, max]. */
  readonly spread: readonly [number, number];
  /** A bound on the figure itself that must hold as well as the comparison's target. */
  readonly absolute?: AbsoluteTarget;
  /**
   * `design`: a measurement kept for the record whose baseline cannot win or
   * lose by construction (it does work the measured side skips by design);
   * reported as a design note, outside the count of targets. Default `target`.
   */
  readonly role?: 'target' | 'design';
  /** Free-form note (sample count, what is measured). */
  readonly note?: string;
  /**
   * For a `ratio` row measured in rounds that each time both sides: the
   * median over rounds of each round's value/baseline, which is then the
   * comparison. Rounds that differ in overall speed (load, where the OS put
   * the processes) move it less than the ratio of the two medians.
   */
  readonly pairedRatio?: number;
  /**
   * For a `difference` row whose runs come in pairs, one of each side next
   * to each other: the median of the per-pair differences, which is then the
   * comparison. Load that changes between pairs moves both sides of a pair
   * alike, so it moves this less than the difference of the two medians.
   */
  readonly pairedDifference?: number;
}

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The p-th percentile (0..100) of a non-empty list. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx]!;
}

/** Runs `fn` `runs` times and returns each run's result. */
export async function repeat(runs: number, fn: () => Promise<number> | number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) out.push(await fn());
  return out;
}

/** Operations per second of `fn` run `n` times in a loop. */
export async function opsPerSecond(n: number, fn: (i: number) => unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  const ns = Number(process.hrtime.bigint() - t0);
  return n / (ns / 1e9);
}

/** Milliseconds `fn` takes. */
export async function timeMs(fn: () => unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** Builds a result from repeated paired runs of value and baseline. */
export function result(
  fields: Omit<BenchResult, 'value' | 'baseline' | 'spread'>,
  values: readonly number[],
  baselines: readonly number[],
): BenchResult {
  return {
    ...fields,
    value: median(values),
    baseline: median(baselines),
    spread: [Math.min(...values), Math.max(...values)],
  };
}

/**
 * {@link result} for a `ratio` row measured in rounds that each time both
 * sides (`values[i]` beside `baselines[i]`): its comparison is the median of
 * the per-round ratios ({@link BenchResult.pairedRatio}).
 */
export function pairedResult(
  fields: Omit<BenchResult, 'value' | 'baseline' | 'spread' | 'pairedRatio'>,
  values: readonly number[],
  baselines: readonly number[],
): BenchResult {
  return { ...result(fields, values, baselines), pairedRatio: median(roundRatios(values, baselines)) };
}

/** Each round's value/baseline. */
export function roundRatios(values: readonly number[], baselines: readonly number[]): number[] {
  return values.map((value, round) => value / baselines[round]!);
}

/** How the per-round ratios spread, for a row's note: their quartiles and range, and the ratio of the two medians beside them. */
export function roundRatioSpread(values: readonly number[], baselines: readonly number[]): string {
  const ratios = roundRatios(values, baselines);
  const text = (ratio: number): string => `${ratio.toFixed(3)}×`;
  return `per-round ratios: quartiles ${text(percentile(ratios, 25))}–${text(percentile(ratios, 75))}, range ${text(Math.min(...ratios))}–${text(Math.max(...ratios))}; ratio of the two medians ${text(median(values) / median(baselines))}`;
}

/** The comparison figure: ratio or difference of value against baseline, or the value itself. */
export function comparison(r: BenchResult): number {
  if (r.compare === 'absolute') return r.value;
  return r.compare === 'ratio' ? (r.pairedRatio ?? r.value / r.baseline) : (r.pairedDifference ?? r.value - r.baseline);
}

const within = (figure: number, target: number, better: Better): boolean => (better === 'higher' ? figure >= target : figure <= target);

/** The figure an absolute target is checked on. */
export function absoluteFigure(r: BenchResult, absolute: AbsoluteTarget): number {
  if (absolute.on !== 'worst') return r.value;
  return absolute.better === 'higher' ? r.spread[0] : r.spread[1];
}

/** Whether a result meets its target and, when it has one, its absolute target. */
export function meetsTarget(r: BenchResult): boolean {
  const absoluteMet = r.absolute === undefined || within(absoluteFigure(r, r.absolute), r.absolute.target, r.absolute.better);
  return within(comparison(r), r.target, r.better) && absoluteMet;
}

/** Whether a result counts towards the targets (design notes do not). */
export const isCounted = (r: BenchResult): boolean => r.role !== 'design';

/** One line describing this machine. */
export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${os.cpus().length} × ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.platform()} ${os.release()}, Node ${process.version}`;
}
