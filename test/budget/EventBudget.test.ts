/**
 * The token bucket shared by refused egress events and ndjson-rpc warnings: a burst one by one, then the rest counted
 * into one summary per key when a token is free again, or at flush. Time is a fake moved by hand, so counts are exact.
 */
import { describe, expect, it } from 'vitest';
import { EventBudget } from '../../src/budget/EventBudget.js';
import { FakeClock } from '../support/clocks.js';


describe('EventBudget', () => {
  it('admits the burst, counts the rest per key, and sends one summary per key when a token is free', () => {
    const clock = new FakeClock();
    const budget = new EventBudget<string>({ perSecond: 2, burst: 3 }, clock);
    const summaries: [string, number][] = [];
    const admitted = (key: string, n: number): number => Array.from({ length: n }, () => budget.admit(key, (count) => summaries.push([key, count]))).filter(Boolean).length;
    expect(admitted('a', 10)).toBe(3);
    expect(admitted('b', 4)).toBe(3);
    expect(budget.pending).toBe(8);
    expect(summaries).toEqual([]);
    clock.advance(500);
    expect(summaries).toEqual([
      ['a', 7],
      ['b', 1],
    ]);
    expect(budget.pending).toBe(0);
    // The summary spent the token: the next report waits for another.
    expect(admitted('a', 1)).toBe(0);
    clock.advance(500);
    expect(summaries.at(-1)).toEqual(['a', 1]);
  });

  it('flush sends every waiting count at once, to the latest caller, and cancels its timer', () => {
    const clock = new FakeClock();
    const budget = new EventBudget<string>({ perSecond: 1, burst: 1 }, clock);
    const seen: string[] = [];
    budget.admit('k', () => seen.push('first'));
    budget.admit('k', (n) => seen.push(`second ${n}`));
    budget.admit('k', (n) => seen.push(`third ${n}`));
    expect(clock.pending).toBe(1);
    budget.flush();
    expect(seen).toEqual(['third 2']);
    expect(clock.pending).toBe(0);
    clock.advance(10_000);
    budget.flush();
    expect(seen).toEqual(['third 2']);
  });
});
