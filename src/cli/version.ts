import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory of the nearest package.json named mcp-plugin-host above
 * this file (the repository in development, the installed package when
 * built); undefined when there is none.
 */
export function packageRoot(): string | undefined {
  return nearestPackage()?.dir;
}

/** This package's version (see {@link packageRoot}); `unknown` when there is no package.json. */
export function packageVersion(): string {
  return nearestPackage()?.version ?? 'unknown';
}

function nearestPackage(): { readonly dir: string; readonly version: string } | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'mcp-plugin-host' && typeof pkg.version === 'string') return { dir, version: pkg.version };
    } catch {
      // No readable package.json here; keep walking up.
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
