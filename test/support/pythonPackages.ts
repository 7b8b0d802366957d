/**
 * Python packages as an author ships them, built offline: the fixture's
 * files copied, and wheels of the project and its dependencies made by
 * `pip wheel` with the test build backend (fixtures/python/hatchling-standin,
 * a PEP 517 backend standing in for hatchling, which cannot be fetched here).
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

/** The stand-in for the mcp SDK (FastMCP on the standard library). */
export const MCP_STANDIN = join(root, 'fixtures/python/mcp-standin');
/** The Python interpreters' folder the Python install tests search (no pyenv shims). */
export const PYTHON_SEARCH_PATH = '/usr/bin:/bin';

/** Builds wheels of the given project folders into `into` with `pip wheel`, offline. */
export async function buildWheels(projects: readonly string[], into: string): Promise<void> {
  const env = { PATH: PYTHON_SEARCH_PATH, PYTHONPATH: join(root, 'fixtures/python/hatchling-standin'), PYTHONDONTWRITEBYTECODE: '1' };
  const options = ['--no-index', '--no-deps', '--no-build-isolation', '--no-cache-dir', '--disable-pip-version-check', '--quiet'];
  await run('/usr/bin/python3', ['-m', 'pip', 'wheel', ...options, '--wheel-dir', into, ...projects], { env });
}

/** A copy of a fixture folder with wheels of the fixture project and of `dependencies` in its `wheels/`. */
export async function pythonPackage(fixtureDir: string, dependencies: readonly string[] = [MCP_STANDIN]): Promise<string> {
  const out = await mkdtemp(join(tmpdir(), 'python-pkg-'));
  await cp(fixtureDir, out, { recursive: true });
  await buildWheels([out, ...dependencies], join(out, 'wheels'));
  return out;
}

/** Installs wheels of `projects` into `target` (pip install --target), as an MCP Bundle vendors its dependencies in server/lib. */
export async function vendorInto(projects: readonly string[], target: string): Promise<void> {
  const wheels = await mkdtemp(join(tmpdir(), 'python-wheels-'));
  await buildWheels(projects, wheels);
  const options = ['--no-index', '--find-links', wheels, '--no-cache-dir', '--disable-pip-version-check', '--no-compile', '--quiet', '--target', target];
  await run('/usr/bin/python3', ['-m', 'pip', 'install', ...options, ...projects.map((p) => basename(p).replace(/-standin$/, ''))], { env: { PATH: PYTHON_SEARCH_PATH } });
}
