/**
 * The plugin-state.json row seen through the supervisor's eyes: crash
 * history in, crash history out, and the one persisted status that follows
 * from the conditions a plugin is in.
 */
import type { PluginStateRecord } from '../catalog/catalogTypes.js';
import { effectiveStatus, type InventoryStatus } from '../inventory/status.js';
import { CLEAR_CRASH_STATE, type CrashState } from '../supervisor/CrashPolicy.js';

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
  return { ...next, status: statusOf(next, row.activated_at === null) };
}
