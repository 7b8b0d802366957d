import { describe, expect, it } from 'vitest';
import { admitStart, CLEAR_CRASH_STATE, CRASH_BACKOFF_SCHEDULE_MS, recordFailure } from '../../src/host/CrashPolicy.js';
import { effectiveStatus } from '../../src/host/inventoryStatus.js';

/** GUM spec §8.6, written out here so a change to the code's constant cannot move the expectation with it. */
const CONTRACT_WAITS_MS = [30_000, 60_000, 120_000, 240_000, 480_000];
const CONTRACT_RETRIES_BEFORE_PERMANENT = 5;

describe('crash quarantine schedule (GUM spec §8.6)', () => {
  it('waits 30, 60, 120, 240, 480 s after failures 1..5 and quarantines permanently at the 6th', () => {
    let state = CLEAR_CRASH_STATE;
    let now = 1_000_000;
    const waits: number[] = [];
    for (let i = 0; i < CONTRACT_RETRIES_BEFORE_PERMANENT; i++) {
      state = recordFailure(state, { code: 'PLUGIN_CRASHED', reason: 'crash', now });
      expect(state.permanent_quarantine).toBe(false);
      waits.push(state.next_retry_at! - now);
      const refused = admitStart(state, state.next_retry_at! - 1, 'p');
      expect(refused.isErr() && refused.error.code).toBe('PLUGIN_QUARANTINED');
      expect(refused.isErr() && refused.error.retry_after_ms).toBe(1);
      expect(admitStart(state, state.next_retry_at!, 'p').isOk()).toBe(true);
      now = state.next_retry_at!;
    }
    expect(waits).toEqual(CONTRACT_WAITS_MS);
    expect(CRASH_BACKOFF_SCHEDULE_MS).toEqual(CONTRACT_WAITS_MS);
    state = recordFailure(state, { code: 'PLUGIN_CRASHED', reason: 'crash', now });
    expect(state.permanent_quarantine).toBe(true);
    expect(state.next_retry_at).toBeUndefined();
    const refused = admitStart(state, now + 10 ** 12, 'p', 'VARIANT_QUARANTINED');
    expect(refused.isErr() && refused.error.code).toBe('VARIANT_QUARANTINED');
    expect(refused.isErr() && refused.error.retryable).toBe(false);
  });

  it('keeps the first quarantined_at across steps and records the last error', () => {
    const a = recordFailure(CLEAR_CRASH_STATE, { code: 'PLUGIN_CRASHED', reason: 'crash', now: 10 });
    const b = recordFailure(a, { code: 'PLUGIN_TIMEOUT', reason: 'crash', now: 50_000 });
    expect(b.quarantined_at).toBe(10);
    expect(b.last_error_code).toBe('PLUGIN_TIMEOUT');
    expect(b.retry_count).toBe(2);
  });

  it('quarantines permanently at once when asked (digest mismatch)', () => {
    const s = recordFailure(CLEAR_CRASH_STATE, { code: 'PLUGIN_EXECUTABLE_UNTRUSTED', reason: 'digest_mismatch', now: 1, permanent: true });
    expect(s.permanent_quarantine).toBe(true);
    expect(admitStart(s, 10 ** 9, 'p').isErr()).toBe(true);
  });

  it('admits a plugin that is not quarantined', () => {
    expect(admitStart(CLEAR_CRASH_STATE, 0, 'p').isOk()).toBe(true);
  });
});

describe('inventory status precedence', () => {
  it('orders quarantined > needs_configuration > installed_pending_restart > active', () => {
    expect(effectiveStatus({ quarantined: true, needsConfiguration: true, pendingRestart: true })).toBe('quarantined');
    expect(effectiveStatus({ quarantined: false, needsConfiguration: true, pendingRestart: true })).toBe('needs_configuration');
    expect(effectiveStatus({ quarantined: false, needsConfiguration: false, pendingRestart: true })).toBe('installed_pending_restart');
    expect(effectiveStatus({ quarantined: false, needsConfiguration: false, pendingRestart: false })).toBe('active');
  });
});
