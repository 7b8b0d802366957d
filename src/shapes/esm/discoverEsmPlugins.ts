import { readdir, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { ResultAsync } from 'neverthrow';
import type { HostError } from '../../errors/HostError.js';
import { ioError } from '../../errors/ioError.js';
import { compareVersions } from '../../manifest/versionOrder.js';
import { esmManifestPath } from './manifestFile.js';

/** `<name>@<version>` split at its last `@`, or undefined for a folder not named so. */
function nameAndVersion(folder: string): { readonly name: string; readonly version: string } | undefined {
  const at = folder.lastIndexOf('@');
  if (at <= 0 || at === folder.length - 1) return undefined;
  return { name: folder.slice(0, at), version: folder.slice(at + 1) };
}

/**
 * Of several `<name>@<version>` folders of one name, the one of the highest
 * version: an install writes a new folder per version (seed 003), so an
 * upgrade leaves the older one beside it. Folders whose versions have no
 * order (neither semver nor dotted numbers) all stay, and the loader keeps the first.
 */
function newestVersions(roots: readonly string[]): string[] {
  const newest = new Map<string, { readonly root: string; readonly version: string }>();
  const superseded = new Set<string>();
  for (const root of roots) {
    const parsed = nameAndVersion(basename(root));
    if (parsed === undefined) continue;
    const held = newest.get(parsed.name);
    const order = held === undefined ? 1 : compareVersions(parsed.version, held.version);
    if (order === undefined) continue;
    if (order > 0) {
      if (held !== undefined) superseded.add(held.root);
      newest.set(parsed.name, { root, version: parsed.version });
    } else {
      superseded.add(root);
    }
  }
  return roots.filter((root) => !superseded.has(root));
}

/**
 * The plugin roots under an install directory (PLUGIN_INSTALL_DIR): every
 * direct subdirectory, conventionally `<name>@<version>/`, that holds an
 * `mcp-plugin.json`, sorted by name; of several versions of one name only
 * the highest (semver). A missing install directory has none.
 */
export function discoverEsmPlugins(installDir: string): ResultAsync<string[], HostError> {
  const dir = resolve(installDir);
  const find = async (): Promise<string[]> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw cause;
    }
    const roots: string[] = [];
    for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const root = join(dir, entry.name);
      const manifest = await stat(esmManifestPath(root)).catch(() => undefined);
      if (manifest?.isFile() === true) roots.push(root);
    }
    return newestVersions(roots);
  };
  return ResultAsync.fromPromise(find(), (cause) => ioError('Listing the plugin install directory', dir, cause));
}
