const RELATIVE_DATE = /^\+(\d{1,4})([dw])$/;
const DAY_MS = 86_400_000;

/**
 * Replaces relative date specifiers (`+7d`, `+2w`) anywhere in canary
 * arguments with the calendar date (UTC, `YYYY-MM-DD`) that far from `now`,
 * so canary fixtures never go stale.
 */
export function resolveRelativeDates(value: unknown, now: number): unknown {
  if (typeof value === 'string') {
    const m = RELATIVE_DATE.exec(value);
    if (!m) return value;
    const days = Number(m[1]) * (m[2] === 'w' ? 7 : 1);
    return new Date(now + days * DAY_MS).toISOString().slice(0, 10);
  }
  if (Array.isArray(value)) return value.map((v) => resolveRelativeDates(v, now));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRelativeDates(v, now)]));
  }
  return value;
}
