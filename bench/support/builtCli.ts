/**
 * The CLI built with the package's own ESM build settings into a scratch
 * directory, so that a bench times the shipped chunk layout, not a stale dist/.
 */
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Options } from 'tsup';
import packageConfig from '../../tsup.config.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** A built CLI: the path of its entry, and how to remove it. */
export interface BuiltCli {
  /** Absolute path of cli.js. */
  readonly entry: string;
  /** Deletes the scratch directory. */
  readonly remove: () => Promise<void>;
}

function cliBuild(): Options {
  const config = packageConfig as unknown as Options[] | ((overrides: Options) => Options[]);
  const builds = typeof config === 'function' ? config({ dts: false }) : config;
  const found = builds.find((b) => typeof b.entry === 'object' && !Array.isArray(b.entry) && 'cli' in b.entry);
  if (found === undefined) throw new Error('tsup.config.ts has no build with a cli entry');
  return found;
}

/** Builds the CLI into a fresh scratch directory (node_modules linked to the repository's). */
export async function buildCli(): Promise<BuiltCli> {
  const out = await mkdtemp(join(tmpdir(), 'bench-built-cli-'));
  const options = cliBuild();
  const entry = Object.fromEntries(Object.entries(options.entry as Record<string, string>).map(([name, path]) => [name, join(REPO, path)]));
  await build({ ...options, entry, outDir: out, clean: false, dts: false, sourcemap: false, silent: true, config: false });
  await symlink(join(REPO, 'node_modules'), join(out, 'node_modules'), 'dir');
  await writeFile(join(out, 'package.json'), JSON.stringify({ name: 'mcp-plugin-host', version: '0.0.0-bench', type: 'module' }));
  return { entry: join(out, 'cli.js'), remove: () => rm(out, { recursive: true, force: true }) };
}
