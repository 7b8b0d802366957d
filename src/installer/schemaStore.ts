/**
 * The profile's schema store: one file per served schema body,
 * `plugin-schemas/<ref>.<sha256>.json`, named by the JCS digest of its
 * content. A name therefore fixes its content, and plugins that reuse an
 * identical body share one file. Files are only written and deleted under the
 * store's own cross-process lock (see {@link withSchemaStoreLock}).
 */
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_STALE_LOCK_MS } from '../catalog/CatalogStore.js';
import { ProfileLock } from '../catalog/ProfileLock.js';
import type { HostError } from '../errors/HostError.js';
import type { ResolvedSchema } from '../manifest/model.js';
import { jcsDigest } from '../manifest/schemaRefs.js';
import type { Clock, Random } from '../ports/ports.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';

/** The ports the store's lock needs. */
export interface SchemaStorePorts {
  readonly clock: Clock;
  readonly random: Random;
}

/**
 * Runs `body` holding the schema store's lock. It is a lock of its own, not
 * the catalog's: a collection holding it reads the catalog, and that read
 * may itself need the catalog lock to repair a generation a crash left
 * mixed. Nothing takes the two in the other order.
 */
export async function withSchemaStoreLock<T>(layout: ProfileLayout, ports: SchemaStorePorts, body: () => Promise<T>): Promise<Result<T, HostError>> {
  await mkdir(layout.root, { recursive: true, mode: 0o700 });
  const lock = await ProfileLock.acquire({
    path: layout.schemaStoreLockFile,
    timeoutMs: DEFAULT_LOCK_TIMEOUT_MS,
    staleMs: DEFAULT_STALE_LOCK_MS,
    clock: ports.clock,
    random: ports.random,
  });
  if (lock.isErr()) return err(lock.error);
  try {
    return ok(await body());
  } finally {
    await lock.value.release();
  }
}

function digestOfText(text: string): string | undefined {
  try {
    return jcsDigest(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/**
 * Writes one schema into the store (mode 0644, fsynced, renamed into place)
 * unless a file with the right content is already there; a damaged one is
 * replaced. Call it holding the store's lock, with the file pinned.
 *
 * @param nonce - Names the temporary file.
 */
export async function storeSchema(layout: ProfileLayout, schema: ResolvedSchema, nonce: string): Promise<void> {
  const path = layout.schemaFile(schema.ref, schema.digest);
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  const existing = await readFile(path, 'utf8').catch(() => undefined);
  if (existing !== undefined && digestOfText(existing) === schema.digest) return;
  const temp = `${path}.${nonce}.tmp`;
  try {
    const handle = await open(temp, 'wx', 0o644);
    try {
      await handle.writeFile(JSON.stringify(schema.schema));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (cause) {
    await rm(temp, { force: true });
    throw cause;
  }
}
