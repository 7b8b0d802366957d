/**
 * MCP Bundles built the way their authors build them: a published npm server
 * laid out by `npm install` (production dependencies, no install scripts),
 * a `manifest.json` beside it, and the official MCPB CLI
 * (`mcpb pack`, from the @anthropic-ai/mcpb devDependency) zipping the
 * directory into a `.mcpb`. npm layouts are kept in `temp/mcpb-servers/` and
 * reused by later runs.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CACHE = join(REPO, 'temp/mcpb-servers');
const MCPB = join(REPO, 'node_modules/.bin/mcpb');

/** The version of a package installed in this repository (the devDependency the other tests run). */
export async function installedVersion(name: string): Promise<string> {
  return (JSON.parse(await readFile(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/** A directory holding `node_modules/<name>` and its production dependencies, as npm lays them out. */
export async function npmLayout(name: string, version: string): Promise<string> {
  const dir = join(CACHE, `${name.replace('/', '+')}@${version}`);
  if (await stat(join(dir, 'node_modules', name, 'package.json')).then(() => true, () => false)) return dir;
  await mkdir(CACHE, { recursive: true });
  const work = await mkdtemp(join(CACHE, '.work-'));
  await writeFile(join(work, 'package.json'), JSON.stringify({ name: 'mcpb-layout', version: '1.0.0', private: true }));
  await run('npm', ['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', `${name}@${version}`], { cwd: work, timeout: 300_000 });
  await rm(dir, { recursive: true, force: true });
  await rename(work, dir);
  return dir;
}

/** A test server bundled into one file (its dependencies inlined), as a bundle's `server/` holds it. */
export async function bundledServer(entry: string, into: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile: into,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
}

/** A bundle directory: `layout`'s files (if any) and `manifest`; the caller removes it. */
export async function bundleDirectory(manifest: object, layout?: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mcpb-src-'));
  if (layout !== undefined) await cp(join(layout, 'node_modules'), join(dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  return dir;
}

/** Packs a bundle directory with the official CLI; returns the `.mcpb` file (in a directory of its own). */
export async function packBundle(dir: string): Promise<string> {
  const out = join(await mkdtemp(join(tmpdir(), 'mcpb-out-')), 'bundle.mcpb');
  await run(MCPB, ['pack', dir, out], { timeout: 300_000 });
  return out;
}
