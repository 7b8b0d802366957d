/**
 * A package's peer dependencies in the tree npm lays out. With
 * `--install-strategy=shallow` the package is the only dependency of the
 * staging project, and its own dependencies sit in its `node_modules`; but
 * npm installs the peers it declares (`@supabase/mcp-server-supabase`'s
 * `@modelcontextprotocol/server` and `zod`) beside it, at the project's top
 * level, which the host does not stage: the package directory alone must be
 * a complete tree. They are moved into the package's own `node_modules`,
 * where Node resolves them the same way.
 */
import { lstat, mkdir, readdir, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** What moving the peers did: the names moved, or the one that a nested dependency of the same name blocks. */
export type PeerAdoption = { readonly moved: readonly string[] } | { readonly conflict: string };

async function topLevelNames(modules: string): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await readdir(modules, { withFileTypes: true }).catch(() => [])) {
    // .bin holds npm's links and .package-lock.json its record: neither is a package.
    if (entry.name.startsWith('.') || !entry.isDirectory()) continue;
    if (!entry.name.startsWith('@')) names.push(entry.name);
    else for (const scoped of await readdir(join(modules, entry.name))) names.push(`${entry.name}/${scoped}`);
  }
  return names;
}

const exists = (path: string): Promise<boolean> => lstat(path).then(() => true, () => false);

/**
 * Moves every package npm installed at the top of `project` other than
 * `name` (at `dir`) into `dir/node_modules`. A name the package already has
 * nested there is not replaced: that is a conflict for the caller to refuse.
 */
export async function adoptPeerDependencies(project: string, name: string, dir: string): Promise<PeerAdoption> {
  const peers = (await topLevelNames(join(project, 'node_modules'))).filter((peer) => peer !== name);
  for (const peer of peers) {
    if (await exists(join(dir, 'node_modules', ...peer.split('/')))) return { conflict: peer };
  }
  for (const peer of peers) {
    const target = join(dir, 'node_modules', ...peer.split('/'));
    await mkdir(dirname(target), { recursive: true });
    await rename(join(project, 'node_modules', ...peer.split('/')), target);
  }
  return { moved: peers };
}
