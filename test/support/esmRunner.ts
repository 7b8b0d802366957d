/**
 * The ESM runner as the package ships it, for host tests that run from
 * source: tsup bundles src/shapes/esm/runner.ts into one file placed under
 * the repository's node_modules, so it resolves its dependencies from an
 * enclosing node_modules exactly as node_modules/mcp-plugin-host/dist/esm-runner.js does.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A built runner: the argv prefix that starts it (for `esmRunnerArgv`) and a way to remove it. */
export interface BuiltRunner {
  readonly argv: readonly string[];
  remove(): Promise<void>;
}

/** Builds the runner into a fresh directory; call `remove()` when done. */
export async function buildEsmRunner(): Promise<BuiltRunner> {
  await mkdir(join(REPO, 'node_modules', '.cache'), { recursive: true });
  const dir = await mkdtemp(join(REPO, 'node_modules', '.cache', 'esm-runner-host-'));
  // mkdtemp makes it 0700; on a root host plugins run as users of their own, who must read the runner like a shipped dist/.
  await chmod(dir, 0o755);
  // The library's own dependencies and peers (the MCP SDK is one), as its published package.json names them: the sandbox exposes what they resolve to.
  const { dependencies, peerDependencies } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
  };
  await writeFile(join(dir, 'package.json'), `${JSON.stringify({ type: 'module', dependencies: dependencies ?? {}, peerDependencies: peerDependencies ?? {} })}\n`);
  await build({
    entry: { 'esm-runner': join(REPO, 'src/shapes/esm/runner.ts') },
    outDir: join(dir, 'dist'),
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    dts: false,
    silent: true,
    config: false,
  });
  return {
    argv: [process.execPath, join(dir, 'dist', 'esm-runner.js')],
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
