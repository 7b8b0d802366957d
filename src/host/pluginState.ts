/**
 * The plugin-state.json row seen through the supervisor's eyes: crash
 * history in, crash history out, and the one persisted status that follows
 * from the conditions a plugin is in.
 */
import type { PluginStateRecord } from '../catalog/catalogTypes.js';
import { effectiveStatus, type InventoryStatus } from './inventoryStatus.js';
import { CLEAR_CRASH_STATE, type CrashState } from './CrashPolicy.js';

const toMs = (iso: string | null): number | undefined => (iso === null ? undefined : Date.parse(iso));
const toIso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** The crash history recorded in a state row. */
export function crashStateOf(row: PluginStateRecord): CrashState {
  const quarantined = row.quarantined_at !== null;
  if (!quarantined && row.retry_count === 0) return CLEAR_CRASH_STATE;
  const nextRetry = toMs(row.next_retry_at);
  const since = toMs(row.quarantined_at);
  return {
    retry_count: row.retry_count,
    quarantined,
    permanent_quarantine: row.permanent_quarantine === true,
    ...(nextRetry === undefined ? {} : { next_retry_at: nextRetry }),
    ...(since === undefined ? {} : { quarantined_at: since }),
    ...(row.last_error_code === null ? {} : { last_error_code: row.last_error_code }),
    ...(row.quarantine_reason === null ? {} : { quarantine_reason: row.quarantine_reason }),
  };
}

/** The persisted status a row should carry, given whether this host considers the plugin pending restart. */
export function statusOf(row: PluginStateRecord, pendingRestart: boolean): InventoryStatus {
  return effectiveStatus({
    quarantined: row.quarantined_at !== null,
    needsConfiguration: row.needs_configuration === true,
    pendingRestart,
  });
}

/** The reason recorded when someone quarantines a plugin by hand (`PluginHost.quarantine`, the CLI's `quarantine`). */
export const OPERATOR_QUARANTINE_REASON = 'operator';

/** The reason recorded when a failed canary quarantines a plugin. */
export const CANARY_FAILED_REASON = 'canary_failed';

/**
 * The crash history after a failed canary: quarantined with no automatic
 * retry (only a passing canary or an unquarantine lifts it), the backoff
 * ladder left where it was. A permanent quarantine stays permanent.
 */
export function canaryHold(row: PluginStateRecord, code: string, now: number): CrashState {
  const current = crashStateOf(row);
  if (current.permanent_quarantine) return { ...current, last_error_code: code };
  return {
    retry_count: current.retry_count,
    quarantined: true,
    permanent_quarantine: false,
    quarantined_at: current.quarantined_at ?? now,
    last_error_code: code,
    quarantine_reason: CANARY_FAILED_REASON,
  };
}

/** Whether a row carries failures a successful start should clear (a backoff window, not a hold or a permanent quarantine). */
export function inBackoff(row: PluginStateRecord): boolean {
  if (row.permanent_quarantine === true) return false;
  if (row.quarantined_at !== null) return row.next_retry_at !== null;
  return row.retry_count > 0;
}

/** A row with its status recomputed from its other fields. */
export function withStatus(row: PluginStateRecord): PluginStateRecord {
  return { ...row, status: statusOf(row, row.activated_at === null) };
}

/** A row with a new crash history, its status recomputed. */
export function withCrashState(row: PluginStateRecord, crash: CrashState): PluginStateRecord {
  const next: PluginStateRecord = {
    ...row,
    retry_count: crash.retry_count,
    next_retry_at: toIso(crash.next_retry_at),
    quarantined_at: crash.quarantined ? toIso(crash.quarantined_at) : null,
    quarantine_reason: crash.quarantined ? (crash.quarantine_reason ?? null) : null,
    last_error_code: crash.last_error_code ?? null,
    permanent_quarantine: crash.permanent_quarantine,
  };
  return withStatus(next);
}
