/**
 * This library as an application installs it: built from the working tree
 * into a scratch copy (the repository's own dist/ is left alone), packed
 * with `npm pack`, and installed with a real `npm install` into scratch
 * applications laid out the ways package managers lay them out.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);
const NPM_INSTALL = ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];
const PACKED_PARTS = ['package.json', 'tsup.config.ts', 'tsconfig.json', 'src', 'etc', 'scripts', 'native', 'docs', 'examples', 'README.md', 'CHANGELOG.md', 'BENCHMARKS.md'];

/** Builds (tsup and the sandbox launcher, as `npm run build` does) and packs the library; returns the tarball's path. */
export async function packLibrary(into: string): Promise<string> {
  const copy = join(into, 'library');
  await mkdir(copy);
  for (const part of PACKED_PARTS) await cp(join(REPO, part), join(copy, part), { recursive: true });
  await symlink(join(REPO, 'node_modules'), join(copy, 'node_modules'));
  await run(process.execPath, [join(REPO, 'node_modules', 'tsup', 'dist', 'cli-default.js')], { cwd: copy });
  // What `npm run build` adds after tsup: the sandbox launcher in dist/, which the package ships.
  await run(process.execPath, [join(copy, 'scripts', 'build-launcher.mjs')], { cwd: copy });
  const { stdout } = await run('npm', ['pack', '--pack-destination', into, '--loglevel=error'], { cwd: copy });
  return join(into, stdout.trim().split('\n').at(-1)!);
}

/** The npm layouts an application may end up with. */
export type Layout = 'hoisted' | 'nested' | 'linked' | 'pnpm' | 'workspace';

/**
 * A scratch application depending on the packed library, installed by npm
 * in `layout`; returns the folder to run the application from and the
 * scratch folder to remove afterwards.
 * - hoisted: the library's dependencies beside it in the application's node_modules;
 * - nested: the application needs other majors of zod and neverthrow, so npm nests the library's under node_modules/mcp-plugin-host/node_modules;
 * - linked: npm's isolated store (install-strategy=linked), symlinks into node_modules/.store;
 * - pnpm: pnpm 9 (run with npx from the npm registry), its symlinked store in node_modules/.pnpm;
 * - workspace: the library unpacked as a workspace package, linked into the root node_modules, its dependencies hoisted to the root.
 */
export async function installApplication(tarball: string, layout: Layout): Promise<{ readonly app: string; readonly root: string }> {
  const root = await mkdtemp(join(tmpdir(), `packed-${layout}-`));
  const dependencies: Record<string, string> = { 'mcp-plugin-host': layout === 'workspace' ? '*' : `file:${tarball}` };
  if (layout === 'nested' || layout === 'pnpm' || layout === 'workspace') Object.assign(dependencies, { zod: '^3.25.0', neverthrow: '^7.0.0' });
  const app = { name: 'app', version: '1.0.0', private: true, type: 'module', dependencies };
  if (layout === 'pnpm') {
    await writeFile(join(root, 'package.json'), JSON.stringify(app));
    await run('npx', ['--yes', 'pnpm@9', 'install', '--ignore-scripts', '--reporter=silent'], { cwd: root });
    return { app: root, root };
  }
  if (layout !== 'workspace') {
    await writeFile(join(root, 'package.json'), JSON.stringify(app));
    await run('npm', [...NPM_INSTALL, ...(layout === 'linked' ? ['--install-strategy=linked'] : [])], { cwd: root });
    return { app: root, root };
  }
  const library = join(root, 'packages', 'mcp-plugin-host');
  await mkdir(library, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', library, '--strip-components=1']);
  await mkdir(join(root, 'packages', 'app'));
  await writeFile(join(root, 'packages', 'app', 'package.json'), JSON.stringify(app));
  await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'monorepo', private: true, workspaces: ['packages/*'] }));
  await run('npm', NPM_INSTALL, { cwd: root });
  return { app: join(root, 'packages', 'app'), root };
}
