/**
 * Hot reload of installed plugins (seed 003: "hot reload watches entry +
 * manifest; on change: revalidate → re-register"). An installed plugin's
 * files never change in place here: an upgrade, a reinstall or a remove is a
 * new catalog generation published by one transaction, from this process or
 * another. So a host opened with `hotReload` watches the generation, not the
 * files: each new one is read, and the plugins it installs, removes or
 * upgrades are followed, only ever onto code an install verified and pinned.
 */
import type { CatalogSnapshot } from '../catalog/catalogTypes.js';
import type { HostEventMap, HostEvents } from '../events/HostEvents.js';
import type { Logger } from '../ports/ports.js';
import { sameBinding, type HostCatalog } from './hostCatalog.js';
import type { PluginRuntimes } from './runtimes.js';

/** What one catalog generation changed, as the `catalog:changed` event reports it. */
type CatalogChange = HostEventMap['catalog:changed'];

/** The plugins `after` installs, removes and upgrades (another install root or executable digest) relative to `before`. */
function catalogChange(before: CatalogSnapshot, after: CatalogSnapshot): CatalogChange {
  const was = before.contents.plugins;
  const now = after.contents.plugins;
  const installed = Object.keys(now).filter((id) => !Object.hasOwn(was, id));
  const removed = Object.keys(was).filter((id) => !Object.hasOwn(now, id));
  const upgraded = Object.keys(now).filter((id) => Object.hasOwn(was, id) && !sameBinding(was[id]!.binding, now[id]!.binding));
  return { install_generation: after.install_generation, installed: installed.sort(), removed: removed.sort(), upgraded: upgraded.sort() };
}

/** What a {@link CatalogWatch} works with. */
export interface CatalogWatchParts {
  readonly catalog: HostCatalog;
  readonly runtimes: PluginRuntimes;
  readonly events: HostEvents;
  readonly logger: Logger;
  /** How often the generation is read. */
  readonly pollMs: number;
  /** How long a removed or upgraded plugin's calls in flight may still run on its old process. */
  readonly drainTimeoutMs: number;
}

/**
 * Polls the profile's catalog and follows each new generation: the host's
 * snapshot moves to it (new operations callable, removed ones gone), a
 * running process of a removed or upgraded plugin is retired (its calls in
 * flight drain, then it stops; the next call starts the new code), and
 * `catalog:changed` says what changed. A generation that only rewrites
 * state rows (a canary, a crash) changes no plugin and says nothing.
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
      const read = await this.#parts.catalog.refresh();
      if (read.isErr()) this.#parts.logger.warn({ code: read.error.code }, 'hot reload could not read the catalog; trying again on the next poll');
    } finally {
      this.#reading = false;
    }
  }

  #follow(before: CatalogSnapshot, after: CatalogSnapshot): void {
    const change = catalogChange(before, after);
    if (change.installed.length + change.removed.length + change.upgraded.length === 0) return;
    for (const id of change.removed) this.#retireStale(id, 'removed');
    for (const id of change.upgraded) this.#retireStale(id, 'upgraded');
    this.#parts.events.emit('catalog:changed', change);
  }

  /**
   * Retires the plugin's running process, if any: its calls in flight drain
   * (up to the deadline), then it stops. A removed plugin's operations are
   * already gone from the snapshot; an upgraded one is released at once, so
   * a new call starts the new version beside the draining old one instead
   * of being refused while it drains. (When this host made the upgrade
   * itself, the process may already run the new code: it drains and the
   * next call starts it again.)
   */
  #retireStale(pluginId: string, reason: 'removed' | 'upgraded'): void {
    const { runtimes, drainTimeoutMs, logger } = this.#parts;
    const retired = runtimes.retire(pluginId, reason, drainTimeoutMs);
    if (reason === 'upgraded') runtimes.release(pluginId);
    void retired.map(() => logger.debug({ plugin_id: pluginId, reason }, 'hot reload retired the old process'));
  }
}
