import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * This package's version, read from the nearest package.json named
 * mcp-plugin-host above this file (src/cli/ in development, dist/ when
 * built); `unknown` when there is none.
 */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'mcp-plugin-host' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // No readable package.json here; keep walking up.
    }
    const parent = dirname(dir);
    if (parent === dir) return 'unknown';
    dir = parent;
  }
}
