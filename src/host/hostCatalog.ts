/**
 * The host's view of its profile's catalog: the latest snapshot, indexed
 * once per snapshot for the call path, and the one way this host rewrites a
 * plugin's state row.
 */
import { err, ok, okAsync, type ResultAsync } from 'neverthrow';
import type { ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import { closeSync, fstatSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileName } from '../catalog/catalogFiles.js';
import { openLiveFileSync } from '../catalog/generationFiles.js';
import { listPlugins, lookupPlugin, updatePluginState, type InstalledPlugin } from '../catalog/catalogContents.js';
import type { CatalogStore } from '../catalog/CatalogStore.js';
import type { CatalogContents, CatalogSnapshot, PluginStateRecord } from '../catalog/catalogTypes.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { Clock } from '../ports/ports.js';
import { operationIndex, type NamedOperation } from './operations.js';
import { withStatus } from './pluginState.js';

/** Told when a host's snapshot moves from `before` to `after`, whichever process published `after`. */
export type CatalogMoveListener = (before: CatalogSnapshot, after: CatalogSnapshot) => void;

/** The catalog file a host holds, and what its link count and change time were when it took it. */
interface WatchedFile {
  readonly fd: number;
  readonly nlink: number;
  readonly ctimeMs: number;
}

function watchedFile(fd: number): WatchedFile {
  const taken = fstatSync(fd);
  return { fd, nlink: taken.nlink, ctimeMs: taken.ctimeMs };
}

/** The catalog as one host sees it; every concern of the host reads plugins through it. */
export class HostCatalog {
  readonly #store: CatalogStore;
  #snapshot: CatalogSnapshot;
  #indexed: CatalogSnapshot | undefined;
  #index = new Map<string, InstalledPlugin>();
  #operations: ReadonlyMap<string, NamedOperation<InstalledPlugin>> = new Map();
  readonly #movedListeners = new Set<CatalogMoveListener>();
  /**
   * A descriptor on the catalog file the snapshot held was read from or
   * written as (the file every publish replaces first: generationFiles.ts
   * renames it before the lock and state files), with its link count and
   * change time when it was taken; undefined when none is known.
   */
  #watched: WatchedFile | undefined;
  /**
   * The quarantine time of each quarantine this host wrote, by plugin: what
   * its writer (the supervisor, `quarantine()`) already acted on. Recorded
   * before the write is published, since a call's read may move the snapshot
   * to it before the write's own continuation runs.
   */
  readonly #ownQuarantines = new Map<string, string>();
  /** The install of each plugin this host installed itself, whose old process its install retires (with its caller's drain). */
  readonly #ownInstalls = new Map<string, ExecutableBindingRecord>();
  #closed = false;

  constructor(store: CatalogStore, snapshot: CatalogSnapshot) {
    this.#store = store;
    this.#snapshot = snapshot;
    this.#watchOwnWrite(snapshot);
  }

  /**
   * Whether another generation may have been published since this host last
   * read or wrote the catalog: one `fstat` of a descriptor it holds, cheap
   * enough for every call. A publish renames a new file over the catalog
   * file, which takes a link from the one held and so changes its link count
   * and change time; the count alone reaches 0 only when the catalog had no
   * other name (a hard-link backup, `cp -al`, a dedup tool give it one), and a
   * write in place keeps it. `thorough` (the poll) also stats the path and
   * compares the file it names with the one held. A true answer only means
   * "read again".
   */
  changedOnDisk(thorough = false): boolean {
    const watched = this.#watched;
    if (watched === undefined) return true;
    try {
      const held = fstatSync(watched.fd);
      if (held.nlink === 0 || held.nlink !== watched.nlink || held.ctimeMs !== watched.ctimeMs) return true;
      if (!thorough) return false;
      const named = statSync(join(this.#store.profileDir, fileName('catalog')));
      return named.ino !== held.ino || named.dev !== held.dev;
    } catch {
      return true;
    }
  }

  /** Lets go of the descriptor {@link HostCatalog.changedOnDisk} uses (the host closed). */
  close(): void {
    this.#closed = true;
    this.#watch(undefined);
  }

  /** The snapshot, read again first when {@link HostCatalog.changedOnDisk} says another process may have published. */
  current(): ResultAsync<CatalogSnapshot, HostError> {
    return this.changedOnDisk() ? this.refresh() : okAsync(this.#snapshot);
  }

  /** The snapshot last read or written by this host. */
  get snapshot(): CatalogSnapshot {
    return this.#snapshot;
  }

  /** Reads the catalog again (another host may have changed it). */
  refresh(): ResultAsync<CatalogSnapshot, HostError> {
    // Opened before the read: a publish landing during the read then shows as a change at the next check, never the reverse.
    const opened = openLiveFileSync(this.#store.profileDir, 'catalog');
    return this.#store
      .snapshot()
      .map((snapshot) => {
        this.#watch(opened?.fd);
        return this.#move(snapshot);
      })
      .mapErr((error) => {
        if (opened !== undefined) closeSync(opened.fd);
        return error;
      });
  }

  /**
   * Tells `listener` each time this host's snapshot moves to another
   * generation, whichever read or write moved it: the one place a change is
   * seen, so no two observers of the catalog report one change twice.
   * Returns a function that stops telling it.
   */
  onMoved(listener: CatalogMoveListener): () => void {
    this.#movedListeners.add(listener);
    return () => this.#movedListeners.delete(listener);
  }

  /** One plugin as the catalog holds it now, or PLUGIN_NOT_FOUND. */
  plugin(pluginId: string): ResultAsync<InstalledPlugin, HostError> {
    return this.refresh().andThen((snapshot) => {
      const plugin = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: pluginId });
      return plugin === undefined ? err(notInstalled(pluginId)) : ok(plugin);
    });
  }

  /** One plugin as the last snapshot holds it, without reading the catalog. */
  cachedPlugin(pluginId: string): InstalledPlugin | undefined {
    return this.#indexSnapshot().get(pluginId);
  }

  /** The operation `opId` in the last snapshot. */
  operation(opId: string): NamedOperation<InstalledPlugin> | undefined {
    this.#indexSnapshot();
    return this.#operations.get(opId);
  }

  /**
   * Rewrites one plugin's state row in a catalog transaction; returns the row
   * as written. With `ran`, only while the catalog still pins that install:
   * another process may have removed and reinstalled or upgraded the plugin
   * since, and what the old install's process did is not the new one's
   * ({@link installReplaced}).
   */
  updateState(pluginId: string, update: (row: PluginStateRecord) => PluginStateRecord, ran?: ExecutableBindingRecord): ResultAsync<PluginStateRecord, HostError> {
    return this.#store
      .transaction((current) => {
        const plugin = Object.hasOwn(current.plugins, pluginId) ? current.plugins[pluginId] : undefined;
        if (plugin === undefined || current.states[pluginId] === undefined) return err(notInstalled(pluginId));
        if (ran !== undefined && !sameBinding(plugin.binding, ran)) return err(installReplaced(pluginId));
        return ok(
          updatePluginState(current, pluginId, (row) => {
            const next = withStatus(update(row));
            if (next.quarantined_at !== null && next.quarantined_at !== row.quarantined_at) this.#ownQuarantines.set(pluginId, next.quarantined_at);
            return next;
          }),
        );
      })
      .map((snapshot) => {
        // This host's own write is read already: the file it published is the one a later check looks at.
        if (this.#move(snapshot) === snapshot) this.#watchOwnWrite(snapshot);
        return snapshot.contents.states[pluginId]!;
      });
  }

  /** Records that this host installed `binding` for `pluginId` (before its snapshot reads the install as a move). */
  noteOwnInstall(pluginId: string, binding: ExecutableBindingRecord): void {
    this.#ownInstalls.set(pluginId, binding);
  }

  /** Whether `binding` is an install of `pluginId` this host made itself (its install retires the old process). */
  installedHere(pluginId: string, binding: ExecutableBindingRecord | undefined): boolean {
    const own = this.#ownInstalls.get(pluginId);
    return own !== undefined && binding !== undefined && sameBinding(own, binding);
  }

  /**
   * Whether `row`'s quarantine is one this host wrote (and so acted on
   * already), not another process's, however the snapshot moved to it: by a
   * read or by this host's own write, which may carry another process's
   * quarantine of the same plugin published just before it.
   */
  quarantinedHere(pluginId: string, row: PluginStateRecord | undefined): boolean {
    return row?.quarantined_at !== null && row?.quarantined_at !== undefined && this.#ownQuarantines.get(pluginId) === row.quarantined_at;
  }

  /** Moves to `snapshot` unless a newer generation was already seen (two reads in flight may finish out of order); returns the snapshot now held. */
  #move(snapshot: CatalogSnapshot): CatalogSnapshot {
    const before = this.#snapshot;
    if (snapshot.txid === before.txid || snapshot.install_generation < before.install_generation) return before;
    this.#snapshot = snapshot;
    for (const listener of this.#movedListeners) listener(before, snapshot);
    return snapshot;
  }

  /** Holds `fd` (the catalog file just read) instead of the descriptor held so far. */
  #watch(fd: number | undefined): void {
    const held = this.#watched?.fd;
    // A read that ends after close holds nothing.
    const kept = this.#closed ? undefined : fd;
    this.#watched = kept === undefined ? undefined : watchedFile(kept);
    if (held !== undefined && held !== kept) closeSync(held);
    if (this.#closed && fd !== undefined && fd !== held) closeSync(fd);
  }

  /**
   * After this host's own write of `snapshot`: holds the file it published,
   * when that is still the live one (its identity as the store took it under
   * the lock); else another process published since, and the next check reads.
   */
  #watchOwnWrite(snapshot: CatalogSnapshot): void {
    const published = this.#store.publishedIdentity(snapshot);
    if (published === undefined) return;
    const opened = openLiveFileSync(this.#store.profileDir, 'catalog');
    if (opened === undefined) return;
    if (opened.identity === published) this.#watch(opened.fd);
    else closeSync(opened.fd);
  }

  /** The snapshot's plugins by id; calls look plugins and operations up on every dispatch, so each snapshot is indexed once. */
  #indexSnapshot(): ReadonlyMap<string, InstalledPlugin> {
    if (this.#indexed !== this.#snapshot) {
      this.#indexed = this.#snapshot;
      const plugins = listPlugins(this.#snapshot);
      this.#index = new Map(plugins.map((p) => [p.plugin_id, p]));
      this.#operations = operationIndex(plugins);
    }
    return this.#index;
  }
}

/** Marks every plugin installed since the last open as activated (one transaction, only when there is one). */
export function activateInstalled(store: CatalogStore, clock: Clock): ResultAsync<CatalogSnapshot, HostError> {
  const activate = (current: CatalogContents): CatalogContents => {
    const now = new Date(clock.now()).toISOString();
    let next = current;
    for (const [id, row] of Object.entries(current.states)) {
      if (row.activated_at === null) next = updatePluginState(next, id, (r) => withStatus({ ...r, activated_at: now }));
    }
    return next;
  };
  return store.snapshot().andThen((snapshot) =>
    Object.values(snapshot.contents.states).some((row) => row.activated_at === null) ? store.transaction(activate) : okAsync(snapshot),
  );
}

/** Whether two catalog entries pin the same installed code (the same install root and digest). */
export function sameBinding(a: ExecutableBindingRecord, b: ExecutableBindingRecord): boolean {
  return a.install_root === b.install_root && a.executable_sha256 === b.executable_sha256;
}

/** Every operation of a closed host fails with this. */
export function closedError(): HostError {
  return hostError('HOST_CLOSED', 'this PluginHost was closed');
}

/** The plugin is not in this profile's catalog. */
export function notInstalled(pluginId: string): HostError {
  return hostError('PLUGIN_NOT_FOUND', `plugin '${pluginId}' is not installed in this profile`, { details: { plugin_id: pluginId } });
}

/** The plugin's install that a process ran is no longer the one the catalog pins (`details.replaced`). */
export function installReplaced(pluginId: string): HostError {
  return hostError('PLUGIN_NOT_FOUND', `the install of plugin '${pluginId}' this process ran was removed or replaced since`, { details: { plugin_id: pluginId, replaced: true } });
}
