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

/** How many of its own quarantines of one plugin a host remembers ({@link HostCatalog.quarantinedHere}). */
const OWN_QUARANTINES_KEPT = 4;

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
   * The quarantines this host wrote, by plugin (the last few, as
   * {@link quarantineOf} spells them): what their writer (the supervisor,
   * `quarantine()`, a canary) already acted on. Recorded before the write is
   * published, since a call's read may move the snapshot to it before the
   * write's own continuation runs.
   */
  readonly #ownQuarantines = new Map<string, string[]>();
  /** The install of each plugin this host installed itself, whose old process its install retires (with its caller's drain). */
  readonly #ownInstalls = new Map<string, ExecutableBindingRecord>();
  #closed = false;
  /**
   * How many times the snapshot moved. A read that began when this was the
   * same as now began after the snapshot held was read or written.
   */
  #moves = 0;

  /**
   * `snapshot`: the profile's catalog as the host opened it; when its open
   * published it (`holdCatalogFile`), the host holds that very file.
   */
  constructor(store: CatalogStore, snapshot: CatalogSnapshot) {
    this.#store = store;
    this.#snapshot = snapshot;
    this.#watch(store.takePublishedCatalog(snapshot));
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
    const since = this.#moves;
    return this.#store
      .snapshot()
      .map((snapshot) => {
        this.#watch(opened?.fd);
        return this.#move(snapshot, since);
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
    const since = this.#moves;
    return this.#store
      .transaction(
        (current) => {
          const plugin = Object.hasOwn(current.plugins, pluginId) ? current.plugins[pluginId] : undefined;
          if (plugin === undefined || current.states[pluginId] === undefined) return err(notInstalled(pluginId));
          if (ran !== undefined && !sameBinding(plugin.binding, ran)) return err(installReplaced(pluginId));
          return ok(
            updatePluginState(current, pluginId, (row) => {
              const next = withStatus(update(row));
              const quarantine = quarantineOf(next);
              if (quarantine !== undefined && quarantine !== quarantineOf(row)) this.#noteOwnQuarantine(pluginId, quarantine);
              return next;
            }),
          );
        },
        { holdCatalogFile: true },
      )
      .map((snapshot) => {
        // This host's own write is read already: the file it published (that very inode) is the one a later check looks at.
        const published = this.#store.takePublishedCatalog(snapshot);
        const held = this.#move(snapshot, since);
        if (published !== undefined) {
          if (held.txid === snapshot.txid) this.#watch(published);
          else closeSync(published);
        }
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
    const quarantine = row === undefined ? undefined : quarantineOf(row);
    return quarantine !== undefined && this.#ownQuarantines.get(pluginId)?.includes(quarantine) === true;
  }

  #noteOwnQuarantine(pluginId: string, quarantine: string): void {
    // A few, not one: a read begun before this host's next write of the plugin may still bring an earlier one of its own.
    const own = [...(this.#ownQuarantines.get(pluginId) ?? []), quarantine].slice(-OWN_QUARANTINES_KEPT);
    this.#ownQuarantines.set(pluginId, own);
  }

  /**
   * Moves to `snapshot`, read or written by an operation that began when
   * {@link HostCatalog.#moves} was `since`; returns the snapshot now held. A
   * generation older than the one held is a read that finished late (two
   * reads in flight may finish out of order) and is ignored, unless the
   * snapshot has not moved since the operation began: then the profile's
   * generation went backwards, which one profile never does (each publish
   * is its predecessor + 1). The profile was deleted and created again, or
   * its files restored from a backup, and what it holds now is all there is:
   * a move like any other, whose plugins the listeners compare with the ones
   * held (a reinstall has another install root, so it is an upgrade).
   */
  #move(snapshot: CatalogSnapshot, since: number): CatalogSnapshot {
    const before = this.#snapshot;
    if (snapshot.txid === before.txid) return before;
    if (snapshot.install_generation < before.install_generation && since !== this.#moves) return before;
    this.#snapshot = snapshot;
    this.#moves++;
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
    // The host constructed on the result holds the file this publishes (HostCatalog's constructor takes it).
    Object.values(snapshot.contents.states).some((row) => row.activated_at === null) ? store.transaction(activate, { holdCatalogFile: true }) : okAsync(snapshot),
  );
}

/**
 * A row's quarantine as one string (when, whether permanent, why, when it
 * may retry), undefined when it is not quarantined: two rows with the same
 * string are one quarantine. A quarantine time alone does not tell them
 * apart: a crash or a failed canary on a plugin already quarantined keeps
 * its time and changes the rest.
 */
export function quarantineOf(row: PluginStateRecord): string | undefined {
  if (row.quarantined_at === null) return undefined;
  return JSON.stringify([row.quarantined_at, row.permanent_quarantine === true, row.quarantine_reason, row.next_retry_at]);
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
