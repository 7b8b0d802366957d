/**
 * Python packages as an author ships them, built offline: the fixture's
 * files copied, and wheels of the project and its dependencies made by
 * `pip wheel` with the test build backend (fixtures/python/hatchling-standin,
 * a PEP 517 backend standing in for hatchling, which cannot be fetched here).
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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
  try {
    await buildWheels(projects, wheels);
    const options = ['--no-index', '--find-links', wheels, '--no-cache-dir', '--disable-pip-version-check', '--no-compile', '--quiet', '--target', target];
    await run('/usr/bin/python3', ['-m', 'pip', 'install', ...options, ...projects.map((p) => basename(p).replace(/-standin$/, ''))], { env: { PATH: PYTHON_SEARCH_PATH } });
  } finally {
    await rm(wheels, { recursive: true, force: true });
  }
}

/** A PEP 503 simple index on the loopback interface serving wheels of the given projects. */
export interface PythonIndex {
  /** The index URL, for pip's --index-url. */
  readonly url: string;
  /** Every path requested, in order. */
  readonly requested: readonly string[];
  /** The wheel file names served. */
  readonly wheels: readonly string[];
  /** Stops the server and removes the wheels. */
  close(): Promise<void>;
}

/** Serves wheels of `projects` (built with {@link buildWheels}) from a simple index at http://127.0.0.1:<port>/simple/. */
export async function servePythonIndex(projects: readonly string[]): Promise<PythonIndex> {
  const dir = await mkdtemp(join(tmpdir(), 'python-index-'));
  await buildWheels(projects, dir);
  const wheels = await readdir(dir);
  const requested: string[] = [];
  const projectOf = (wheel: string): string => wheel.split('-')[0]!.replace(/_/g, '-');
  const server = createServer((request, response) => {
    const path = request.url ?? '';
    requested.push(path);
    const listed = wheels.filter((wheel) => path === `/simple/${projectOf(wheel)}/`);
    const file = wheels.find((wheel) => path === `/files/${wheel}`);
    if (listed.length > 0) response.writeHead(200, { 'content-type': 'text/html' }).end(listed.map((w) => `<a href="/files/${w}">${w}</a>`).join('\n'));
    else if (file !== undefined) void readFile(join(dir, file)).then((bytes) => response.end(bytes));
    else response.writeHead(404).end();
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/simple/`,
    requested,
    wheels,
    close: async () => {
      await new Promise((closed) => server.close(closed));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
