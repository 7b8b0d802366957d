/**
 * Collects the schema store: deletes the files no installed plugin of the
 * profile references and no install in progress has pinned. It runs after a
 * transaction has committed, never inside one, so a file is deleted only once
 * a durable generation has stopped referring to it; a crash before the
 * collection leaves files behind, and the next collection deletes them.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import type { CatalogStore } from '../catalog/CatalogStore.js';
import type { CatalogVariant } from '../catalog/catalogTypes.js';
import type { HostError } from '../errors/HostError.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';
import { pinnedFiles } from './schemaPins.js';
import { withSchemaStoreLock, type SchemaStorePorts } from './schemaStore.js';

const STORE_FILE = /^[a-z0-9][a-z0-9._-]*\.[0-9a-f]{64}\.json$/;
const TEMP_FILE = /^[a-z0-9][a-z0-9._-]*\.[0-9a-f]{64}\.json\.[0-9a-f]+\.tmp$/;

/** The store file names the variants refer to. */
export function referencedSchemaFiles(layout: ProfileLayout, variants: readonly CatalogVariant[]): Set<string> {
  const names = new Set<string>();
  for (const variant of variants) {
    for (const [ref, digest] of Object.entries(variant.schema_hashes)) names.add(layout.schemaFileName(ref, digest));
  }
  return names;
}

/**
 * Deletes unreferenced, unpinned store files and temporary files left by a
 * writer that died, under the schema store's lock. Other names, and
 * anything that is not a regular file, are left alone. Returns the deleted
 * names, sorted. Deletes nothing when the catalog cannot be read.
 */
export async function collectSchemaGarbage(layout: ProfileLayout, store: CatalogStore, ports: SchemaStorePorts): Promise<Result<string[], HostError>> {
  const collected = await withSchemaStoreLock(layout, ports, async (): Promise<Result<string[], HostError>> => {
    // Pins first, then the catalog: an install unpins only after its
    // transaction committed, so a pin missed here is a commit seen below.
    const keep = await pinnedFiles(layout, ports.clock);
    const snapshot = await store.snapshot();
    if (snapshot.isErr()) return err(snapshot.error);
    for (const name of referencedSchemaFiles(layout, snapshot.value.contents.variants)) keep.add(name);
    const entries = await readdir(layout.schemaStoreDir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [];
      throw e;
    });
    const deleted: string[] = [];
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      // Temporary files are only created under this lock: one seen now belongs to a dead writer.
      const garbage = TEMP_FILE.test(entry.name) || (STORE_FILE.test(entry.name) && !keep.has(entry.name));
      if (!garbage) continue;
      await rm(join(layout.schemaStoreDir, entry.name), { force: true });
      deleted.push(entry.name);
    }
    return ok(deleted.sort());
  });
  return collected.andThen((inner) => inner);
}
