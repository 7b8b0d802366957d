/**
 * The profile's schema store: one file per served schema body,
 * `plugin-schemas/<ref>.<sha256>.json`, named by the JCS digest of its
 * content. A name therefore fixes its content, and plugins that reuse an
 * identical body share one file.
 */
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ResolvedSchema } from '../manifest/model.js';
import { jcsDigest } from '../manifest/schemaRefs.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';

function digestOfText(text: string): string | undefined {
  try {
    return jcsDigest(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/**
 * Writes one schema into the store (mode 0644, fsynced, renamed into place).
 * Returns the path when this call created the file, so a failed install
 * knows what to delete, or `undefined` when a file with the right content
 * was already there (another plugin's, or this plugin's earlier version) or
 * a damaged one was replaced: such files are not this install's to delete.
 *
 * @param nonce - Makes the temporary name unique among concurrent installs.
 */
export async function storeSchema(layout: ProfileLayout, schema: ResolvedSchema, nonce: string): Promise<string | undefined> {
  const path = layout.schemaFile(schema.ref, schema.digest);
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  const existing = await readFile(path, 'utf8').catch(() => undefined);
  if (existing !== undefined && digestOfText(existing) === schema.digest) return undefined;
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
  return existing === undefined ? path : undefined;
}

/** Makes the renames in a directory durable before the catalog refers to them. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
