/** Polling for a condition that a real process or file system reaches in its own time. */

const POLL_MS = 25;

/** Polls `check` until it holds or `ms` pass; resolves with its last answer, for the caller to assert or act on. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return check();
}

/** Polls `check` until it holds; rejects if it still does not after `ms`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  if (!(await eventually(check, ms))) throw new Error('condition not reached in time');
}
