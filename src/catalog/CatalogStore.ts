/**
 * A profile's plugin catalog: `plugin-catalog.json`, `plugins.lock` and
 * `plugin-state.json`, published together as one generation under a
 * cross-process lock. Readers never see a mix of generations; a crash at any
 * moment leaves either the old or the new generation (see generationFiles.ts
 * and docs/install-safety.md).
 */
import { closeSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { err, ok, ResultAsync, safeTry, type Result } from 'neverthrow';
import { hostError, internalError, isHostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { systemClock, systemRandom, type Clock, type Random } from '../ports/ports.js';
import { CatalogEncoder, type SourceFile } from './CatalogEncoder.js';
import { inconsistencyError } from './catalogConsistency.js';
import { CATALOG_FILE_KINDS, validateFile, fileName, type CatalogFileKind } from './catalogFiles.js';
import { listPlugins, lookupPlugin, type InstalledPlugin } from './catalogContents.js';
import { makeDirectoryLevels } from './makeDirectoryLevels.js';
import {
  EMPTY_CONTENTS,
  PLUGIN_CATALOG_SCHEMA_VERSION,
  PLUGIN_STATE_SCHEMA_VERSION,
  PLUGINS_LOCK_SCHEMA_VERSION,
  type CatalogContents,
  type CatalogSnapshot,
} from './catalogTypes.js';
import { publishGeneration, readGeneration, readLiveSource, repairGeneration, type GenerationFiles, type ParseCache, type ReadOutcome } from './generationFiles.js';
import { ProfileLock } from './ProfileLock.js';
import { profileAncestorsTrusted } from '../profile/profileAncestors.js';

/** Options of {@link CatalogStore.open}. */
export interface CatalogStoreOptions {
  /** The profile's directory (absolute); created with mode 0700 if missing. */
  readonly profileDir: string;
  /** The profile name recorded in, and required of, every file. */
  readonly profile: string;
  /** Stamps `updated_at`; measures lock waits and lock ages. */
  readonly clock?: Clock;
  /** Makes txids and lock tokens. */
  readonly random?: Random;
  /** How long a transaction waits for the profile lock. Default 30,000 ms. */
  readonly lockTimeoutMs?: number;
  /** Age after which a lock whose owner still seems alive is taken over. Default 600,000 ms. */
  readonly staleLockMs?: number;
}

/**
 * A transaction's change: a pure function from the current content to the
 * next. Return an `err` to abort without writing anything.
 *
 * It must return new objects for everything it changes and must never
 * modify `current` (or `snapshot`) in place, at any depth: copy the path down
 * to what changes and share the rest, as `putPlugin`, `removePlugin` and
 * `updatePluginState` do. The transaction takes an entry that is the very
 * object of the current generation as unchanged: it writes that entry's
 * cached bytes and skips its schema check, so an edit made in place is lost
 * on disk, unchecked, and leaves this process's cached catalog disagreeing
 * with the files. The contents are `readonly` types but are not frozen at
 * run time (freezing costs a fresh open too much; see docs/install-safety.md).
 */
export type CatalogMutator = (current: CatalogContents, snapshot: CatalogSnapshot) => Result<CatalogContents, HostError> | CatalogContents;

/** Options of {@link CatalogStore.transaction}. */
export interface CatalogTransactionOptions {
  /**
   * Keep a descriptor on the catalog file the transaction publishes, for
   * {@link CatalogStore.takePublishedCatalog}: a reader that holds it learns
   * from one `fstat` whether a later generation replaced it.
   */
  readonly holdCatalogFile?: boolean;
}

/** Default wait for the profile lock. */
export const DEFAULT_LOCK_TIMEOUT_MS = 30_000;
/** Default age after which a lock held by a seemingly live owner is stale. */
export const DEFAULT_STALE_LOCK_MS = 600_000;

/** Name of the lock file inside the profile directory. */
export const PROFILE_LOCK_FILE = '.catalog.lock';

const LOCK_FREE_READ_ATTEMPTS = 5;
const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function snapshotOf(profile: string, files: GenerationFiles): CatalogSnapshot {
  const { catalog, lock, state } = files;
  if (catalog.data === undefined || lock.data === undefined || state.data === undefined) {
    return { profile, install_generation: 0, txid: '', updated_at: '', contents: EMPTY_CONTENTS };
  }
  return {
    profile,
    install_generation: catalog.data.install_generation,
    txid: catalog.data.txid,
    updated_at: catalog.data.updated_at,
    contents: {
      variants: catalog.data.variants,
      descriptors: catalog.data.plugins,
      plugins: lock.data.plugins,
      namespace_owners: lock.data.namespace_owners,
      states: state.data.plugins,
    },
  };
}

function checkProfile(dir: string, profile: string, files: GenerationFiles): Result<void, HostError> {
  for (const kind of CATALOG_FILE_KINDS) {
    const found = files[kind].data?.profile;
    if (found !== undefined && found !== profile) {
      return err(
        hostError('HOST_INVALID_OPTIONS', `${join(dir, fileName(kind))} belongs to profile "${found}", not "${profile}".`, {
          details: { file: join(dir, fileName(kind)), profile: found, expected: profile },
        }),
      );
    }
  }
  return ok(undefined);
}

function disagreementError(dir: string, outcome: Extract<ReadOutcome, { disagreement: unknown }>): HostError {
  return hostError('CATALOG_CORRUPT', `The catalog files in ${dir} share no generation; they were left in place.`, {
    details: { file: join(dir, fileName('catalog')), generations: outcome.disagreement },
  });
}

function validateOptions(options: CatalogStoreOptions): Result<void, HostError> {
  const bad = (message: string): Result<void, HostError> => err(hostError('HOST_INVALID_OPTIONS', message));
  if (!isAbsolute(options.profileDir)) return bad(`profileDir must be absolute, got "${options.profileDir}".`);
  if (!PROFILE_NAME.test(options.profile)) return bad(`profile must match ${PROFILE_NAME.source}, got "${options.profile}".`);
  for (const key of ['lockTimeoutMs', 'staleLockMs'] as const) {
    const v = options[key];
    if (v !== undefined && !(Number.isFinite(v) && v >= 0)) return bad(`${key} must be a non-negative number.`);
  }
  return ok(undefined);
}

/**
 * Refuses a profile directory another user could change: one owned by a user
 * other than this process's (or root), or one its group or others can write
 * (sticky or not), or one below a folder such a user could change
 * (profileAncestors.ts). Such a user could rename the catalog files, the
 * staging area or an install root away and put their own in their place,
 * and the host would publish, run or delete what they planted. Not checked where the
 * platform has no POSIX owners (Windows).
 */
async function profileDirectoryTrusted(dir: string): Promise<Result<void, HostError>> {
  const uid = process.geteuid?.();
  if (uid === undefined) return ok(undefined);
  let info: Stats;
  try {
    info = await stat(dir);
  } catch (cause) {
    return err(ioError('Reading the profile directory', dir, cause));
  }
  const mode = (info.mode & 0o7777).toString(8);
  if (info.uid !== uid && info.uid !== 0) {
    return err(
      hostError('HOST_INVALID_OPTIONS', `The profile directory ${dir} belongs to user ${info.uid}, not to this process's user (${uid}) or root.`, {
        details: { option: 'profileDir', reason: 'foreign_owner', path: dir, owner_uid: info.uid },
        hint: 'Use a profile directory of your own, or have its owner hand it over (chown).',
      }),
    );
  }
  if ((info.mode & 0o022) !== 0) {
    return err(
      hostError('HOST_INVALID_OPTIONS', `The profile directory ${dir} can be written by its group or by others (mode ${mode}).`, {
        details: { option: 'profileDir', reason: 'writable_by_others', path: dir, mode },
        hint: `Make it writable by its owner alone: chmod go-w ${dir} (the host creates it 0700).`,
      }),
    );
  }
  // The folders above it too (review R9 N3): one another user can write or owns lets them swap the whole profile.
  return profileAncestorsTrusted(dir, uid);
}

/** A profile's catalog store. */
export class CatalogStore {
  readonly #dir: string;
  readonly #profile: string;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #lockTimeoutMs: number;
  readonly #staleLockMs: number;
  readonly #cache: ParseCache = new Map();
  readonly #encoder = new CatalogEncoder();
  /**
   * A descriptor on the catalog file of the last generation this store
   * published with `holdCatalogFile`, not yet taken: at most one is kept,
   * an untaken one is closed by the next such publish.
   */
  #published: { readonly txid: string; readonly fd: number } | undefined;

  private constructor(options: CatalogStoreOptions) {
    this.#dir = options.profileDir;
    this.#profile = options.profile;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    this.#staleLockMs = options.staleLockMs ?? DEFAULT_STALE_LOCK_MS;
  }

  /**
   * Opens (creating if needed) a profile's catalog. If a crash left the files
   * at different generations, the generation whose renames began (the one the
   * live catalog names) is completed under the lock. Corrupt JSON fails with `CATALOG_CORRUPT` naming
   * the file (left in place); files that do not all name the same plugins
   * fail with `CATALOG_INCONSISTENT` (left in place: a plugin is never
   * hidden or dropped); unsupported versions fail with
   * `PLUGIN_CATALOG_SCHEMA_UNSUPPORTED`, `PLUGIN_LOCK_SCHEMA_UNSUPPORTED` or
   * `PLUGIN_STATE_SCHEMA_UNSUPPORTED`.
   */
  static open(options: CatalogStoreOptions): ResultAsync<CatalogStore, HostError> {
    return safeTry(async function* () {
      yield* validateOptions(options);
      try {
        await makeDirectoryLevels(options.profileDir, 0o700);
      } catch (cause) {
        return err(ioError('Creating the profile directory', options.profileDir, cause));
      }
      yield* await profileDirectoryTrusted(options.profileDir);
      const store = new CatalogStore(options);
      const outcome = yield* await readGeneration(store.#dir, store.#cache);
      let opened: Result<CatalogSnapshot, HostError>;
      if ('selected' in outcome && !outcome.selected.needsRepair) {
        const files = outcome.selected.files;
        opened = checkProfile(store.#dir, store.#profile, files).map(() => snapshotOf(store.#profile, files));
      } else {
        opened = await store.#withLock(async () => store.#readLocked());
      }
      const snapshot = yield* opened;
      const inconsistent = inconsistencyError(store.#dir, snapshot.contents);
      return inconsistent === undefined ? ok(store) : err(inconsistent);
    });
  }

  /** The profile this store belongs to. */
  get profile(): string {
    return this.#profile;
  }

  /** The profile directory. */
  get profileDir(): string {
    return this.#dir;
  }

  /**
   * Hands over the descriptor a transaction with `holdCatalogFile` kept on
   * the catalog file it published for `snapshot` (read-only, close-on-exec,
   * opened before the file was renamed into place, so it is exactly the
   * published inode even when another process has published since). The
   * caller owns it and closes it. Undefined when `snapshot` is not the last
   * such transaction of this store or the descriptor was taken already.
   */
  takePublishedCatalog(snapshot: CatalogSnapshot): number | undefined {
    const published = this.#published;
    if (published?.txid !== snapshot.txid) return undefined;
    this.#published = undefined;
    return published.fd;
  }

  /**
   * The current generation, read without taking the lock. Always one
   * consistent generation: if a publish is in flight the read is retried,
   * and after a few attempts it falls back to reading under the lock.
   */
  snapshot(): ResultAsync<CatalogSnapshot, HostError> {
    return new ResultAsync(this.#snapshot());
  }

  /** Every installed plugin, sorted by id. */
  list(): ResultAsync<InstalledPlugin[], HostError> {
    return this.snapshot().map(listPlugins);
  }

  /** One plugin by (profile, plugin id); `undefined` when not installed or when the key names another profile. */
  lookup(key: { readonly profile: string; readonly plugin_id: string }): ResultAsync<InstalledPlugin | undefined, HostError> {
    return this.snapshot().map((s) => lookupPlugin(s, key));
  }

  /**
   * Runs `mutate` on the current generation under the cross-process lock and
   * publishes its result as generation + 1 with a new txid. Returns the new
   * snapshot. Waits at most `lockTimeoutMs` for the lock
   * (`CATALOG_LOCK_TIMEOUT`); an `err` from `mutate` aborts without writing.
   */
  transaction(mutate: CatalogMutator, options: CatalogTransactionOptions = {}): ResultAsync<CatalogSnapshot, HostError> {
    return new ResultAsync(this.#withLock(async (lock) => this.#transact(lock, mutate, options.holdCatalogFile === true)));
  }

  async #snapshot(): Promise<Result<CatalogSnapshot, HostError>> {
    for (let attempt = 0; attempt < LOCK_FREE_READ_ATTEMPTS; attempt++) {
      const outcome = await readGeneration(this.#dir, this.#cache);
      if (outcome.isErr()) return err(outcome.error);
      if ('selected' in outcome.value) {
        const files = outcome.value.selected.files;
        return checkProfile(this.#dir, this.#profile, files).map(() => snapshotOf(this.#profile, files));
      }
      await sleep(2 * (attempt + 1));
    }
    return this.#withLock(async () => this.#readLocked());
  }

  async #withLock<T>(body: (lock: ProfileLock) => Promise<Result<T, HostError>>): Promise<Result<T, HostError>> {
    const lock = await ProfileLock.acquire({
      path: join(this.#dir, PROFILE_LOCK_FILE),
      timeoutMs: this.#lockTimeoutMs,
      staleMs: this.#staleLockMs,
      clock: this.#clock,
      random: this.#random,
    });
    if (lock.isErr()) return err(lock.error);
    try {
      return await body(lock.value);
    } catch (cause) {
      if (isHostError(cause)) return err(cause);
      return err(internalError(`A catalog transaction failed: ${cause instanceof Error ? cause.message : String(cause)}`, cause));
    } finally {
      await lock.value.release();
    }
  }

  /** Reads under the lock, repairing a generation left mixed by a crash. */
  #readLocked(): ResultAsync<CatalogSnapshot, HostError> {
    const dir = this.#dir;
    const profile = this.#profile;
    const cache = this.#cache;
    return safeTry(async function* () {
      const outcome = yield* await readGeneration(dir, cache);
      if (!('selected' in outcome)) return err(disagreementError(dir, outcome));
      const { files, needsRepair } = outcome.selected;
      yield* checkProfile(dir, profile, files);
      if (needsRepair) yield* await repairGeneration(dir, files);
      return ok(snapshotOf(profile, files));
    });
  }

  /** The live file of `kind` as read for `snapshot`, read again for the encoder's first encoding of it (see readLiveSource). */
  async #source(kind: CatalogFileKind, snapshot: CatalogSnapshot): Promise<SourceFile | undefined> {
    if (!this.#encoder.wantsSource(kind)) return undefined;
    const source = await readLiveSource(this.#dir, kind, this.#cache);
    return source?.data.txid === snapshot.txid ? source : undefined;
  }

  async #transact(lock: ProfileLock, mutate: CatalogMutator, holdCatalog: boolean): Promise<Result<CatalogSnapshot, HostError>> {
    const current = await this.#readLocked();
    if (current.isErr()) return current;
    // Read while the mutation and the checks below run on this thread (readLiveSource never rejects).
    const sources = Promise.all(CATALOG_FILE_KINDS.map((kind) => this.#source(kind, current.value)));
    const mutated = mutate(current.value.contents, current.value);
    const next = isResult(mutated) ? mutated : ok(mutated);
    if (next.isErr()) return err(next.error);
    const stamp = {
      profile: this.#profile,
      install_generation: current.value.install_generation + 1,
      txid: Buffer.from(this.#random.bytes(16)).toString('hex'),
      updated_at: new Date(this.#clock.now()).toISOString(),
    };
    const files = {
      catalog: { plugin_catalog_schema_version: PLUGIN_CATALOG_SCHEMA_VERSION, ...stamp, variants: next.value.variants, plugins: next.value.descriptors },
      lock: {
        plugins_lock_schema_version: PLUGINS_LOCK_SCHEMA_VERSION,
        ...stamp,
        plugins: next.value.plugins,
        namespace_owners: next.value.namespace_owners,
      },
      state: { plugin_state_schema_version: PLUGIN_STATE_SCHEMA_VERSION, ...stamp, plugins: next.value.states },
    } as const;
    // Entries taken over unchanged from the current generation were validated when it was read; check the rest.
    const changed = changedPart(current.value.contents, next.value);
    const toCheck = {
      catalog: { ...files.catalog, variants: changed.variants, plugins: changed.descriptors },
      lock: { ...files.lock, plugins: changed.plugins, namespace_owners: changed.namespace_owners },
      state: { ...files.state, plugins: changed.states },
    };
    for (const kind of CATALOG_FILE_KINDS) {
      const checked = validateFile(kind, toCheck[kind], fileName(kind));
      if (checked.isErr()) {
        return err(hostError('HOST_INTERNAL_ERROR', `The transaction produced an invalid ${fileName(kind)}: ${checked.error.message}`, { details: checked.error.details }));
      }
    }
    const [catalogSource, lockSource, stateSource] = await sources;
    const encoded = {
      catalog: this.#encoder.encode('catalog', files.catalog, catalogSource),
      lock: this.#encoder.encode('lock', files.lock, lockSource),
      state: this.#encoder.encode('state', files.state, stateSource),
    };
    if (!(await lock.stillHeld())) {
      return err(hostError('CATALOG_LOCK_TIMEOUT', `The profile lock in ${this.#dir} was taken over during the transaction; nothing was written.`, { details: { reason: 'lock_lost' } }));
    }
    const published = await publishGeneration(
      this.#dir,
      {
        catalog: { encoded: encoded.catalog, data: files.catalog },
        lock: { encoded: encoded.lock, data: files.lock },
        state: { encoded: encoded.state, data: files.state },
      },
      this.#cache,
      { holdCatalog },
    );
    if (published.isErr()) return err(published.error);
    if (published.value !== undefined) {
      if (this.#published !== undefined) closeSync(this.#published.fd);
      this.#published = { txid: stamp.txid, fd: published.value };
    }
    return ok({ profile: this.#profile, install_generation: stamp.install_generation, txid: stamp.txid, updated_at: stamp.updated_at, contents: next.value });
  }
}

function changedEntries<T>(before: Readonly<Record<string, T>>, after: Readonly<Record<string, T>>): Record<string, T> {
  const out: Record<string, T> = {};
  if (before === after) return out;
  // Object.keys, not Object.entries: no pair array per entry on a 1,000-entry record.
  for (const key of Object.keys(after)) {
    const value = after[key] as T;
    if (before[key] !== value) out[key] = value;
  }
  return out;
}

/** The part of `after` that is not the very same object in `before`. */
function changedPart(before: CatalogContents, after: CatalogContents): CatalogContents {
  const previous = new Set(before.variants);
  return {
    variants: after.variants.filter((v) => !previous.has(v)),
    descriptors: changedEntries(before.descriptors, after.descriptors),
    plugins: changedEntries(before.plugins, after.plugins),
    namespace_owners: changedEntries(before.namespace_owners, after.namespace_owners),
    states: changedEntries(before.states, after.states),
  };
}

function isResult(value: unknown): value is Result<CatalogContents, HostError> {
  return typeof value === 'object' && value !== null && typeof (value as { isOk?: unknown }).isOk === 'function' && typeof (value as { isErr?: unknown }).isErr === 'function';
}
