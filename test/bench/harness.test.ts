// The "met" column of BENCHMARKS.md: a target in units is checked on the figure it names, an absolute bound
// must hold beside a comparison, and design notes stay out of the count.
import { describe, expect, it } from 'vitest';
import { comparison, isCounted, meetsTarget, pairedResult, result, roundRatioSpread, type BenchResult } from '../../bench/harness.js';

const row = (fields: Partial<BenchResult>): BenchResult => ({
  name: 'row',
  value: 1,
  baseline: 1,
  baselineName: 'baseline',
  unit: 'ms',
  compare: 'ratio',
  target: 1,
  better: 'lower',
  spread: [1, 1],
  ...fields,
});

describe('benchmark targets', () => {
  it('checks an absolute target on the figure itself, not on its difference from the baseline', () => {
    // The fresh-open listing of the report: 11.98 ms against a 4.54 ms parse baseline, target ≤ 10 ms.
    const listing = row({ value: 11.981, baseline: 4.544, compare: 'absolute', target: 10 });
    expect(comparison(listing)).toBe(11.981);
    expect(meetsTarget(listing)).toBe(false);
    expect(meetsTarget({ ...listing, value: 9.5 })).toBe(true);
  });

  it('requires an absolute bound as well as the comparison, on the worst run when asked', () => {
    const throughput = row({ value: 1873, baseline: 1949, unit: 'MB/s', target: 0.9, better: 'higher', spread: [700, 1900] });
    expect(meetsTarget(throughput)).toBe(true);
    expect(meetsTarget({ ...throughput, absolute: { target: 800, better: 'higher' } })).toBe(true);
    expect(meetsTarget({ ...throughput, absolute: { target: 800, better: 'higher', on: 'worst' } })).toBe(false);
    expect(meetsTarget({ ...throughput, absolute: { target: 2000, better: 'higher' } })).toBe(false);
  });

  it('compares a row measured in paired rounds by the median of its per-round ratios', () => {
    // Two rounds at different speeds: the ratio of the medians (1.25) is not what either round saw.
    const paired = row({ value: 50, baseline: 40, target: 1.1, pairedRatio: 1.05 });
    expect(comparison(paired)).toBe(1.05);
    expect(meetsTarget(paired)).toBe(true);
  });

  it('compares a row measured in adjacent pairs by the median of its per-pair differences', () => {
    // Pairs taken as the load rose: each pair differs by 8-9 ms, the two medians by 14.
    const paired = row({ value: 96, baseline: 82, compare: 'difference', target: 10, pairedDifference: 8.6 });
    expect(comparison(paired)).toBe(8.6);
    expect(meetsTarget(paired)).toBe(true);
  });

  it('builds a paired row from its rounds: the median of the per-round ratios, not the ratio of the medians', () => {
    // Five rounds: the first was slow for the host alone, the last two for both sides. The ratio of the medians
    // (0.060 / 0.050 = 1.2) takes the first round's host figure against another round's baseline.
    const host = [0.06, 0.05, 0.051, 0.09, 0.13];
    const bare = [0.05, 0.049, 0.049, 0.085, 0.125];
    const fields = { name: 'warm', baselineName: 'bare', unit: 'ms', compare: 'ratio', target: 1.05, better: 'lower' } as const;
    const paired = pairedResult(fields, host, bare);
    expect([paired.value, paired.baseline]).toEqual([0.06, 0.05]);
    expect(paired.pairedRatio).toBeCloseTo(0.051 / 0.049, 10);
    expect(meetsTarget(paired)).toBe(true);
    expect(meetsTarget(result(fields, host, bare))).toBe(false);
    expect(roundRatioSpread(host, bare)).toBe('per-round ratios: quartiles 1.040×–1.059×, range 1.020×–1.200×; ratio of the two medians 1.200×');
  });

  it('keeps design notes out of the target count', () => {
    expect(isCounted(row({}))).toBe(true);
    expect(isCounted(row({ role: 'design' }))).toBe(false);
  });
});
