import { describe, expect, it } from 'vitest';
import { CallDeadlines, type CallDeadline } from '../../src/framing/CallDeadlines.js';
import type { Clock } from '../../src/ports/ports.js';

/** A clock whose time moves only when the test says so, counting the timers set on it. */
class ManualClock implements Clock {
  time = 0;
  armed = 0;
  private timers: { at: number; fn: () => void }[] = [];
  now(): number {
    return this.time;
  }
  setTimer(fn: () => void, ms: number): () => void {
    this.armed++;
    const timer = { at: this.time + ms, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }
  get pending(): number {
    return this.timers.length;
  }
  advance(ms: number): void {
    this.time += ms;
    const due = this.timers.filter((t) => t.at <= this.time);
    this.timers = this.timers.filter((t) => t.at > this.time);
    for (const timer of due) timer.fn();
  }
}

function deadline(at: number, expired: string[], name: string): CallDeadline {
  return { at, expire: () => expired.push(name) };
}

describe('CallDeadlines', () => {
  it('runs every deadline on one timer, expiring each when its time comes and not before', () => {
    const clock = new ManualClock();
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
    const clock = new ManualClock();
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
    const clock = new ManualClock();
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
    const clock = new ManualClock();
    const deadlines = new CallDeadlines(clock);
    const expired: string[] = [];
    deadlines.watch(deadline(2 ** 32, expired, 'far'));
    clock.advance(2 ** 31);
    expect(expired).toEqual([]);
    clock.advance(2 ** 31);
    expect(expired).toEqual(['far']);
  });
});
