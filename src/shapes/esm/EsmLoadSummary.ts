import type { HostError } from '../../errors/HostError.js';

/** One plugin that loaded (the seed's `loaded[]` entry, plus its root and warnings). */
export interface EsmLoadedEntry {
  /** Plugin id. */
  readonly name: string;
  /** Plugin version. */
  readonly version: string;
  /** Plugin root. */
  readonly root: string;
  /** Tools registered. */
  readonly tools: number;
  /** Resources and resource templates registered. */
  readonly resources: number;
  /** Prompts registered. */
  readonly prompts: number;
  /** Warnings of this plugin: capability mismatches, skipped invalid tools. */
  readonly warnings: readonly string[];
}

/** Why a plugin was not attempted. */
export type EsmSkipReason = 'loader-disabled' | 'already-loaded' | 'duplicate';

/** One plugin that was not attempted. */
export interface EsmSkippedEntry {
  /** Plugin id, or the root's folder name when the manifest was not read. */
  readonly name: string;
  /** Plugin root. */
  readonly root: string;
  /** Why. */
  readonly reason: EsmSkipReason;
  /** One line for people. */
  readonly message: string;
}

/** One plugin that failed; nothing of it was registered. */
export interface EsmFailedEntry {
  /** Plugin id, or the root's folder name when the manifest could not be read. */
  readonly name: string;
  /** Plugin root. */
  readonly root: string;
  /** Why (serializes to `{ code, message, hint, details }`). */
  readonly error: HostError;
}

/** Time spent per phase, summed over plugins, and the whole call, in ms. */
export interface EsmLoadTimings {
  /** Wall time of the whole load. */
  readonly totalMs: number;
  /** Manifest and tool validation. */
  readonly validationMs: number;
  /** Entry import plus `createPlugin`. */
  readonly importMs: number;
  /** Capability reconciliation. */
  readonly reconcileMs: number;
  /** Registration on the real server. */
  readonly registerMs: number;
}

/** Totals over the loaded plugins. */
export interface EsmLoadStats {
  /** Tools registered. */
  readonly toolsRegistered: number;
  /** Resources registered. */
  readonly resourcesRegistered: number;
  /** Prompts registered. */
  readonly promptsRegistered: number;
  /** Tools skipped as invalid. */
  readonly invalidTools: number;
  /** Warnings emitted. */
  readonly warnings: number;
}

/** The structured summary of one load, as the Open Discovery seed shapes it. */
export interface EsmLoadSummary {
  /** Plugins now registered, in load order. */
  readonly loaded: readonly EsmLoadedEntry[];
  /** Plugins not attempted. */
  readonly skipped: readonly EsmSkippedEntry[];
  /** Plugins that failed. */
  readonly failed: readonly EsmFailedEntry[];
  /** Timings. */
  readonly timings: EsmLoadTimings;
  /** Totals. */
  readonly stats: EsmLoadStats;
}
