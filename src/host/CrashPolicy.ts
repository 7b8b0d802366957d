import { err, ok, type Result } from 'neverthrow';
import hostOptionData from '../../etc/host-options.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import type { HostErrorCode } from '../errors/registry.js';

/** The contract's wait ladder before retry attempt 1..5: 30, 60, 120, 240, 480 seconds (from `etc/host-options.json`). */
export const CRASH_BACKOFF_SCHEDULE_MS: readonly number[] = Object.freeze([...hostOptionData.defaults.backoffScheduleMs]);

/** The supervisor's view of one plugin's crash history, persisted in plugin-state.json. */
export interface CrashState {
  /** Failures since the last clear. */
  readonly retry_count: number;
  /** Whether the plugin is quarantined (in a backoff window or permanently). */
  readonly quarantined: boolean;
  /** Whether the quarantine lasts until an explicit unquarantine. */
  readonly permanent_quarantine: boolean;
  /** Epoch ms after which one more start may be tried; absent when permanent or clear. */
  readonly next_retry_at?: number;
  /** When the current quarantine began (epoch ms). */
  readonly quarantined_at?: number;
  /** The code of the failure that caused it. */
  readonly last_error_code?: string;
  /** Why: `crash`, `canary_failed`, `digest_mismatch`, … */
  readonly quarantine_reason?: string;
}

/** A plugin with no failures on record. */
export const CLEAR_CRASH_STATE: CrashState = { retry_count: 0, quarantined: false, permanent_quarantine: false };

/**
 * One more failure at `now`: the plugin waits the next step of the ladder,
 * and once the ladder is exhausted it stays quarantined until unquarantined.
 */
export function recordFailure(
  state: CrashState,
  failure: { readonly code: string; readonly reason: string; readonly now: number; readonly permanent?: boolean },
  schedule: readonly number[] = CRASH_BACKOFF_SCHEDULE_MS,
): CrashState {
  const retry_count = state.retry_count + 1;
  const wait = schedule[retry_count - 1];
  const permanent = failure.permanent === true || wait === undefined;
  const base = {
    retry_count,
    quarantined: true,
    permanent_quarantine: permanent,
    quarantined_at: state.quarantined ? (state.quarantined_at ?? failure.now) : failure.now,
    last_error_code: failure.code,
    quarantine_reason: failure.reason,
  };
  return permanent ? base : { ...base, next_retry_at: failure.now + wait };
}

/** Whether a start may be attempted at `now`; refuses with the remaining wait otherwise. */
export function admitStart(
  state: CrashState,
  now: number,
  pluginId: string,
  code: Extract<HostErrorCode, 'PLUGIN_QUARANTINED' | 'VARIANT_QUARANTINED'> = 'PLUGIN_QUARANTINED',
): Result<void, HostError> {
  if (!state.quarantined) return ok(undefined);
  if (!state.permanent_quarantine && state.next_retry_at !== undefined && now >= state.next_retry_at) return ok(undefined);
  const details = {
    plugin_id: pluginId,
    retry_count: state.retry_count,
    permanent: state.permanent_quarantine,
    reason: state.quarantine_reason ?? 'unknown',
    ...(state.last_error_code === undefined ? {} : { last_error_code: state.last_error_code }),
  };
  if (state.permanent_quarantine || state.next_retry_at === undefined) {
    return err(hostError(code, `plugin '${pluginId}' is quarantined until it is unquarantined`, { details, retryable: false }));
  }
  return err(
    hostError(code, `plugin '${pluginId}' is quarantined for another ${Math.ceil((state.next_retry_at - now) / 1000)} s`, {
      details,
      retryable: true,
      retry_after_ms: state.next_retry_at - now,
    }),
  );
}
