/**
 * A budget for reports a plugin can cause for free: refused egress
 * connections, bad lines on stdout. Each costs the plugin nothing, so a loop
 * of them would be a host event, a log record or an audit line each, without
 * end. Up to a burst they are reported one by one; past it they are counted,
 * and the count goes out in one summary as soon as the budget refills, or
 * when the owner flushes it (it closes), so that no count is lost.
 */
import type { Clock } from '../ports/ports.js';

/** The rate of one key's reports: a token bucket. */
export interface EventBudgetLimits {
  /** Reports (single ones and summaries) per second, per key, once the burst is spent. */
  readonly perSecond: number;
  /** Reports one key may make at once before the next are counted into a summary instead. */
  readonly burst: number;
}

/** Receives how many reports of a key were counted instead of made since its last summary. */
export type SummaryReport = (suppressed: number) => void;

/** One key's bucket. */
interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date. */
  at: number;
  /** Reports counted, not made, since the last summary. */
  suppressed: number;
  /** Who is told the count: the caller of the latest `admit` that counted one. */
  summary: SummaryReport | undefined;
  /** Cancels the summary waiting for a token; set while one waits. */
  cancel: (() => void) | undefined;
}

/**
 * Token buckets by key (a plugin and a reason, a warning's code). Keys are
 * never forgotten: the owner bounds them (plugins times reasons, the codes of
 * one connection), and a key seen again does not get a fresh burst.
 */
export class EventBudget<K> {
  readonly #limits: EventBudgetLimits;
  readonly #clock: Clock;
  readonly #buckets = new Map<K, Bucket>();

  constructor(limits: EventBudgetLimits, clock: Clock) {
    this.#limits = limits;
    this.#clock = clock;
  }

  /**
   * Whether a report for `key` is made now. When it is not, it is counted,
   * and `summary` receives the count once a token is free again (the
   * summary spends it), or at {@link EventBudget.flush}.
   */
  admit(key: K, summary: SummaryReport): boolean {
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) this.#buckets.set(key, (bucket = { tokens: this.#limits.burst, at: this.#clock.now(), suppressed: 0, summary: undefined, cancel: undefined }));
    this.#refill(bucket);
    // A waiting summary goes first: the count it carries is older than this report.
    if (bucket.tokens >= 1 && bucket.suppressed === 0) {
      bucket.tokens -= 1;
      return true;
    }
    bucket.suppressed += 1;
    bucket.summary = summary;
    this.#awaitSummary(bucket);
    return false;
  }

  /** Reports counted and not yet summarized, over every key. */
  get pending(): number {
    let total = 0;
    for (const bucket of this.#buckets.values()) total += bucket.suppressed;
    return total;
  }

  /**
   * Sends every waiting summary now, without waiting for a token, and stops
   * their timers: the owner is closing, and a count that waited for a later
   * token would be lost. The buckets keep their tokens.
   */
  flush(): void {
    for (const bucket of this.#buckets.values()) {
      bucket.cancel?.();
      bucket.cancel = undefined;
      if (bucket.suppressed > 0) this.#summarize(bucket);
    }
  }

  #refill(bucket: Bucket): void {
    const now = this.#clock.now();
    bucket.tokens = Math.min(this.#limits.burst, bucket.tokens + (Math.max(0, now - bucket.at) * this.#limits.perSecond) / 1000);
    bucket.at = now;
  }

  /** Sends `bucket`'s summary when its next token is free (at once if it is), unless one is already waiting. */
  #awaitSummary(bucket: Bucket): void {
    if (bucket.cancel !== undefined) return;
    const wait = Math.max(0, Math.ceil(((1 - bucket.tokens) * 1000) / this.#limits.perSecond));
    bucket.cancel = this.#clock.setTimer(() => {
      bucket.cancel = undefined;
      this.#refill(bucket);
      if (bucket.tokens < 1) return this.#awaitSummary(bucket);
      bucket.tokens -= 1;
      this.#summarize(bucket);
    }, wait);
  }

  #summarize(bucket: Bucket): void {
    const suppressed = bucket.suppressed;
    const summary = bucket.summary;
    bucket.suppressed = 0;
    bucket.summary = undefined;
    summary?.(suppressed);
  }
}
