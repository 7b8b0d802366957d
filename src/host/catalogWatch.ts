/**
 * Following what other processes do to the profile. An installed plugin's
 * files never change in place here: an upgrade, a reinstall, a remove or a
 * quarantine is a new catalog generation published by one transaction, from
 * this process or another. So every host watches the generation, not the
 * files, and reads each new one (a poll, and a stat on each call: see
 * {@link HostCatalog.changedOnDisk}).
 *
 * A host opened with `hotReload` follows everything (seed 003: "hot reload
 * watches entry + manifest; on change: revalidate → re-register"): the
 * plugins a generation installs, removes or upgrades are followed, only ever
 * onto code an install verified and pinned. Every other host keeps the
 * contract's restart semantics for what is new (an install or an upgrade is
 * `installed_pending_restart` until the next open: seed 001), but what must
 * stop now stops in it too: a removed plugin's process, a quarantined one's
 * ("quarantined wins in every MCP and CLI surface"), and the old version's
 * process of an upgraded one, whose install root the upgrade deletes.
 */
import type { CatalogSnapshot, PluginStateRecord } from '../catalog/catalogTypes.js';
import type { HostEventMap, HostEvents } from '../events/HostEvents.js';
import type { Logger } from '../ports/ports.js';
import { quarantineOf, sameBinding, type HostCatalog } from './hostCatalog.js';
import type { PluginRuntimes } from './runtimes.js';

/** What one catalog generation changed, as the `catalog:changed` event reports it. */
type CatalogChange = HostEventMap['catalog:changed'];

/**
 * The plugins `after` installs, removes and upgrades (another install root
 * or executable digest) relative to `before`, and `quarantined`.
 */
function catalogChange(before: CatalogSnapshot, after: CatalogSnapshot, quarantined: readonly string[]): CatalogChange {
  const was = before.contents.plugins;
  const now = after.contents.plugins;
  const installed = Object.keys(now).filter((id) => !Object.hasOwn(was, id));
  const removed = Object.keys(was).filter((id) => !Object.hasOwn(now, id));
  const upgraded = Object.keys(now).filter((id) => Object.hasOwn(was, id) && !sameBinding(was[id]!.binding, now[id]!.binding));
  return {
    install_generation: after.install_generation,
    installed: installed.sort(),
    removed: removed.sort(),
    upgraded: upgraded.sort(),
    quarantined: [...quarantined].sort(),
  };
}

/**
 * Whether `after` quarantines a plugin `before` did not, or quarantines it
 * anew: another quarantine time, permanently now, held by a failed canary,
 * a later retry (see {@link quarantineOf}).
 */
function newlyQuarantined(before: PluginStateRecord | undefined, after: PluginStateRecord | undefined): boolean {
  const now = after === undefined ? undefined : quarantineOf(after);
  return now !== undefined && (before === undefined || quarantineOf(before) !== now);
}

/** The plugins `after` quarantines anew relative to `before` (still installed in both). */
function quarantinedBetween(before: CatalogSnapshot, after: CatalogSnapshot): string[] {
  const was = before.contents.states;
  return Object.keys(after.contents.states).filter((id) => Object.hasOwn(was, id) && newlyQuarantined(was[id], after.contents.states[id]));
}

/** What a {@link CatalogWatch} works with. */
export interface CatalogWatchParts {
  readonly catalog: HostCatalog;
  readonly runtimes: PluginRuntimes;
  readonly events: HostEvents;
  readonly logger: Logger;
  /**
   * `hot` (the host was opened with `hotReload`): installs, removes and
   * upgrades are followed. `restart`: only what must stop now is (removes,
   * quarantines, the old process of an upgrade); new code waits for the next open.
   */
  readonly mode: 'hot' | 'restart';
  /** How often the generation is checked (a stat of one file; the catalog is read only when it changed). */
  readonly pollMs: number;
  /** How long a removed or upgraded plugin's calls in flight may still run on its old process. */
  readonly drainTimeoutMs: number;
}

/**
 * Polls the profile's catalog and follows each new generation: the host's
 * snapshot moves to it (removed operations gone, and with `hot` new ones
 * callable), a running process of a removed, upgraded or newly quarantined
 * plugin is retired (its calls in flight drain, then it stops), and
 * `catalog:changed` says what changed, in both modes. A generation that only
 * rewrites state rows (a canary, a crash) changes no plugin and says
 * nothing, but a quarantine in it that another process recorded stops the
 * plugin here too and is told (`quarantined`); this host's own quarantines
 * are told by the `quarantine` event of their writer.
 */
export class CatalogWatch {
  readonly #parts: CatalogWatchParts;
  #timer: NodeJS.Timeout | undefined;
  #stopFollowing: (() => void) | undefined;
  #reading = false;

  constructor(parts: CatalogWatchParts) {
    this.#parts = parts;
  }

  /**
   * Starts polling, and follows every generation the host's catalog moves
   * to, whichever read moved it (this poll, `list()`, a call's lookup): each
   * change is reported once. The timer does not keep the process alive.
   */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#stopFollowing = this.#parts.catalog.onMoved((before, after) => this.#follow(before, after));
    this.#timer = setInterval(() => void this.#poll(), this.#parts.pollMs);
    this.#timer.unref();
  }

  /** Stops polling and following. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stopFollowing?.();
    this.#stopFollowing = undefined;
  }

  async #poll(): Promise<void> {
    if (this.#reading) return;
    this.#reading = true;
    try {
      const { catalog, logger } = this.#parts;
      if (!catalog.changedOnDisk(true)) return;
      const read = await catalog.refresh();
      if (read.isErr()) logger.warn({ code: read.error.code }, 'the catalog could not be read to follow other processes; trying again on the next poll');
    } finally {
      this.#reading = false;
    }
  }

  #follow(before: CatalogSnapshot, after: CatalogSnapshot): void {
    const { catalog } = this.#parts;
    // A quarantine this host wrote itself was already acted on by its writer (the supervisor stopped the failed process).
    const quarantined = quarantinedBetween(before, after).filter((id) => !catalog.quarantinedHere(id, after.contents.states[id]));
    for (const id of quarantined) this.#retireStopped(id, 'quarantined');
    const change = catalogChange(before, after, quarantined);
    if (change.installed.length + change.removed.length + change.upgraded.length + change.quarantined.length === 0) return;
    // An upgrade this host installed is retired by the install, with the drain its caller asked for (its own write
    // moves the snapshot before the install retires, so retiring here first would drain with the host's deadline).
    const upgradedElsewhere = change.upgraded.filter((id) => !catalog.installedHere(id, after.contents.plugins[id]?.binding));
    if (this.#parts.mode === 'restart') {
      for (const id of change.removed) this.#retireStopped(id, 'removed');
      for (const id of upgradedElsewhere) this.#retireStopped(id, 'upgraded');
    } else {
      for (const id of change.removed) this.#retireStale(id, 'removed');
      for (const id of upgradedElsewhere) this.#retireStale(id, 'upgraded');
    }
    // Told in both modes: without hotReload what is new waits for the next open, but what stopped here (and why) is news to the application.
    this.#parts.events.emit('catalog:changed', change);
  }

  /**
   * What must stop now stops here: a removed plugin's operations are gone
   * from the snapshot, an upgraded one is pending restart here (without hot
   * reload), and a quarantined one is refused (the snapshot carries the
   * quarantine), so no new call reaches it; its running process, if any,
   * drains and stops, as a quarantine stops a plugin in every host.
   */
  #retireStopped(pluginId: string, reason: 'removed' | 'upgraded' | 'quarantined'): void {
    const { runtimes, drainTimeoutMs, logger } = this.#parts;
    if (runtimes.running(pluginId) === undefined) return;
    void runtimes.retire(pluginId, reason, drainTimeoutMs).map(() => logger.info({ plugin_id: pluginId, reason }, `the plugin was ${reason} by another process; its process here was stopped`));
  }

  /**
   * Retires the plugin's running process, if any: its calls in flight drain
   * (up to the deadline), then it stops. A removed plugin's operations are
   * already gone from the snapshot; an upgraded one is released at once, so
   * a new call starts the new version beside the draining old one instead
   * of being refused while it drains. (An upgrade this host made itself is
   * not retired here: its install retires the old process with its caller's
   * drain, refusing new calls until it stops.)
   */
  #retireStale(pluginId: string, reason: 'removed' | 'upgraded'): void {
    const { runtimes, drainTimeoutMs, logger } = this.#parts;
    const retired = runtimes.retire(pluginId, reason, drainTimeoutMs);
    if (reason === 'upgraded') runtimes.release(pluginId);
    void retired.map(() => logger.debug({ plugin_id: pluginId, reason }, 'hot reload retired the old process'));
  }
}
