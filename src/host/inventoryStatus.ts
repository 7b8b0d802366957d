/** The contract's closed set of inventory statuses. */
export type InventoryStatus = 'active' | 'installed_pending_restart' | 'needs_configuration' | 'quarantined';

/** The conditions a plugin can be in at once; its status is the strongest one. */
export interface StatusConditions {
  /** Quarantined (backoff window, permanent, or failed canary). */
  readonly quarantined: boolean;
  /** Declared credentials are missing. */
  readonly needsConfiguration: boolean;
  /** Installed after this host opened. */
  readonly pendingRestart: boolean;
}

/** Precedence: quarantined, then needs_configuration, then installed_pending_restart, then active. */
export function effectiveStatus(c: StatusConditions): InventoryStatus {
  if (c.quarantined) return 'quarantined';
  if (c.needsConfiguration) return 'needs_configuration';
  if (c.pendingRestart) return 'installed_pending_restart';
  return 'active';
}
