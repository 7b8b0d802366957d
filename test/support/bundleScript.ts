/**
 * Bundles a TypeScript helper script into one plain ESM file, so that tests
 * which start a child process many times pay Node's start-up only, not the
 * TypeScript loader's.
 */
import { build } from 'esbuild';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Bundles `entry` and returns the path of the `.mjs` file and its directory (to remove afterwards). */
export async function bundleScript(entry: string): Promise<{ file: string; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'catalog-helper-'));
  const file = join(dir, 'helper.mjs');
  await build({
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  return { file, dir };
}
