import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chooseManifest } from '../manifest/manifestChoice.js';
import { PACKAGE_MANIFEST_NAMES, type PackageManifestName } from '../manifest/ManifestValidator.js';
import { Refusal, refuse } from './refusal.js';

/** Where the package root is inside an extracted tree. */
export interface PackageRoot {
  /** The directory holding the manifest. */
  readonly dir: string;
  /** The manifest found there. */
  readonly manifestFile: PackageManifestName;
  /** The single top-level directory that was stripped, if any. */
  readonly strippedTopDirectory?: string;
}

/**
 * The manifest of `dir` and what else is there. More than one file that
 * would be read as the plugin's own manifest is refused (review N6; the
 * judgement is chooseManifest's, shared with validateDirectory and each
 * start's capability pin).
 */
async function manifestIn(dir: string): Promise<{ manifest: PackageManifestName | undefined; names: string[]; onlyDirectory: string | undefined }> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files = new Set(entries.filter((e) => e.isFile()).map((e) => e.name));
  const only = entries.length === 1 && entries[0]?.isDirectory() === true ? entries[0].name : undefined;
  const chosen = await chooseManifest(dir, PACKAGE_MANIFEST_NAMES.filter((name) => files.has(name)), 'package');
  if (chosen.isErr()) throw new Refusal(chosen.error);
  return { manifest: chosen.value, names: entries.map((e) => e.name).sort(), onlyDirectory: only };
}

/**
 * Finds the manifest at the root of an extracted tree. Archives are often
 * made of one folder (`package/`, `<name>-1.2.0/`): when `allowStrip` is set,
 * the root holds no manifest, and its one entry is a directory that does, that
 * directory becomes the package root. Only one level is stripped.
 */
export async function locatePackageRoot(tree: string, allowStrip: boolean): Promise<PackageRoot> {
  const top = await manifestIn(tree);
  if (top.manifest !== undefined) return { dir: tree, manifestFile: top.manifest };
  if (allowStrip && top.onlyDirectory !== undefined) {
    const inner = await manifestIn(join(tree, top.onlyDirectory));
    if (inner.manifest !== undefined) {
      return { dir: join(tree, top.onlyDirectory), manifestFile: inner.manifest, strippedTopDirectory: top.onlyDirectory };
    }
  }
  return refuse('PLUGIN_MANIFEST_NOT_FOUND', `no ${PACKAGE_MANIFEST_NAMES.join(', ')} at the package root`, {
    details: { looked_for: [...PACKAGE_MANIFEST_NAMES], top_level: top.names.slice(0, 20) },
  });
}
