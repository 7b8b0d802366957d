import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ResultAsync } from 'neverthrow';
import type { HostError } from '../../errors/HostError.js';
import { ioError } from '../../errors/ioError.js';
import { esmManifestPath } from './manifestFile.js';

/**
 * The plugin roots under an install directory (PLUGIN_INSTALL_DIR): every
 * direct subdirectory, conventionally `<name>@<version>/`, that holds an
 * `mcp-plugin.json`, sorted by name. A missing install directory has none.
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
    return roots;
  };
  return ResultAsync.fromPromise(find(), (cause) => ioError('Listing the plugin install directory', dir, cause));
}
