/** How long a bench's work holds the event loop, seen from a timer. */

/**
 * The longest gap between 1 ms timers while `work` runs, waiting `settleMs`
 * after it: a stall at the end of the work shows only at the timer's next turn.
 */
export async function longestTimerGap(work: () => Promise<unknown>, settleMs: number): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, settleMs));
  } finally {
    clearInterval(timer);
  }
  return longest;
}
