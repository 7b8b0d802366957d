import { describe, expect, it } from 'vitest';
import { CallDeadlines, type CallDeadline } from '../../src/framing/CallDeadlines.js';
import { FakeClock } from '../support/clocks.js';

function deadline(at: number, expired: string[], name: string): CallDeadline {
  return { at, expire: () => expired.push(name) };
}

describe('CallDeadlines', () => {
  it('runs every deadline on one timer, expiring each when its time comes and not before', () => {
    const clock = new FakeClock(0);
    const deadlines = new CallDeadlines(clock);
    const expired: string[] = [];
    deadlines.watch(deadline(100, expired, 'a'));
    deadlines.watch(deadline(300, expired, 'c'));
    deadlines.watch(deadline(200, expired, 'b'));
    expect(clock.armed).toBe(1);
    clock.advance(99);
    expect(expired).toEqual([]);
    clock.advance(1);
    expect(expired).toEqual(['a']);
    clock.advance(100);
    expect(expired).toEqual(['a', 'b']);
    clock.advance(100);
    expect(expired).toEqual(['a', 'b', 'c']);
    expect(clock.pending).toBe(0);
  });

  it('arms again only for an earlier deadline; an ended call leaves the timer alone', () => {
    const clock = new FakeClock(0);
    const deadlines = new CallDeadlines(clock);
    const expired: string[] = [];
    for (let i = 0; i < 50; i++) {
      const d = deadline(clock.now() + 1000, expired, `call ${i}`);
      deadlines.watch(d);
      clock.advance(1);
      deadlines.unwatch(d);
    }
    expect(clock.armed).toBe(1);
    deadlines.watch(deadline(clock.now() + 10, expired, 'early'));
    expect(clock.armed).toBe(2);
    clock.advance(2000);
    expect(expired).toEqual(['early']);
    expect(deadlines.size).toBe(0);
  });

  it('follows a deadline moved later, as progress moves it', () => {
    const clock = new FakeClock(0);
    const deadlines = new CallDeadlines(clock);
    const expired: string[] = [];
    const moving = deadline(100, expired, 'moving');
    deadlines.watch(moving);
    clock.advance(90);
    moving.at = 190;
    clock.advance(10);
    expect(expired).toEqual([]);
    clock.advance(90);
    expect(expired).toEqual(['moving']);
  });

  it('keeps a deadline further away than a Node timer can wait (2^31 ms) from firing early', () => {
    const clock = new FakeClock(0);
    const deadlines = new CallDeadlines(clock);
    const expired: string[] = [];
    deadlines.watch(deadline(2 ** 32, expired, 'far'));
    clock.advance(2 ** 31);
    expect(expired).toEqual([]);
    clock.advance(2 ** 31);
    expect(expired).toEqual(['far']);
  });
});
