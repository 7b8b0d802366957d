/**
 * The author guide's §5 Python example as published: a pyproject.toml with
 * a console-script entry point and a dependency, shipped with its wheels,
 * installed into a private environment and run in the sandbox.
 */
import { appendFile, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HostPool, jsonOf } from '../support/hostHarness.js';
import { cli } from '../cli/cliHarness.js';
import { MCP_STANDIN, pythonPackage, PYTHON_SEARCH_PATH, servePythonIndex } from '../support/pythonPackages.js';


const root = join(import.meta.dirname, '..', '..');
const pool = new HostPool();
let pkg: string;

beforeAll(async () => {
  pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'));
});
afterEach(() => pool.cleanup());
afterAll(() => rm(pkg, { recursive: true, force: true }));

interface LockedBinding {
  executable_path: string;
  argv_normalized: string[];
  install_root: string;
}

async function lockedBinding(profileDir: string): Promise<LockedBinding> {
  const lock = JSON.parse(await readFile(join(profileDir, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { binding: LockedBinding }> };
  return lock.plugins['hello']!.binding;
}

describe('Python console script (author guide §5)', () => {
  it('installs into a private environment from the shipped wheels and answers in the sandbox', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const installed = await installer.install(pkg, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    await installer.close();
    const reopened = await pool.open(dir, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const binding = await lockedBinding(dir);
    expect(binding.executable_path).toBe('.mcp-plugin-host:venv/bin/hello-mcp');
    expect(binding.argv_normalized[1]).toBe('-IS');
    const info = (await reopened.info('hello'))._unsafeUnwrap();
    expect(info.enforced_capabilities).toMatchObject({ backend: expect.stringMatching(/^(landlock|bubblewrap)$/), network: false });
    const result = (await reopened.call('plug.hello.hello', { name: 'world' }))._unsafeUnwrap();
    expect(jsonOf(result)).toEqual({ success: true, data: { greeting: 'Hello, world!' } });
    // The guide's step 4: FastMCP returns the INVALID_INPUT envelope in an isError: false result.
    expect((await reopened.call('plug.hello.hello', { name: '' }))._unsafeUnwrapErr()).toMatchObject({ code: 'INVALID_ARGS', source_error_code: 'INVALID_INPUT' });
  });

  it('installs the same package again as unchanged: the environment the host built is no difference in the package', async () => {
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    (await host.install(pkg, { canary: false }))._unsafeUnwrap();
    expect((await host.install(pkg, { canary: false }))._unsafeUnwrap()).toMatchObject({ unchanged: true });
  });

  it('pins the private environment with the package: a changed installed module stops the next start', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const sitePackages = join((await lockedBinding(dir)).install_root, '.mcp-plugin-host:venv', 'lib');
    const [version] = await readdir(sitePackages);
    await appendFile(join(sitePackages, version!, 'site-packages', 'hello_plugin', '__init__.py'), '\nprint("tampered")\n');
    const reopened = await pool.open(dir, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    expect((await reopened.call('plug.hello.hello', { name: 'world' }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED' });
  });

  it('installs nothing when a dependency has no wheel in the package (pip never reaches the network)', async () => {
    const withoutDependency = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    try {
      const dir = await pool.profile();
      const host = await pool.open(dir, { interpreterSearchPath: PYTHON_SEARCH_PATH });
      const error = (await host.install(withoutDependency, { canary: false }))._unsafeUnwrapErr();
      expect(error).toMatchObject({ code: 'PLUGIN_PYTHON_INSTALL_FAILED', details: { reason: 'pip_failed', project: 'hello-plugin' } });
      expect(String(error.details?.['stderr_tail'])).toMatch(/mcp>=1\.0\.0/);
      expect((await host.list())._unsafeUnwrap()).toEqual([]);
      expect(await readdir(join(dir, 'plugins')).catch(() => [])).toEqual([]);
    } finally {
      await rm(withoutDependency, { recursive: true, force: true });
    }
  });

  it('fetches the wheels the package does not ship from the index the caller names, and only then', async () => {
    const withoutDependency = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    const index = await servePythonIndex([MCP_STANDIN]);
    try {
      const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
      const installed = await host.install(withoutDependency, { canary: false, pythonIndexUrl: index.url });
      expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
      // pip asks the index about every requirement; only the dependency the package lacks is found there.
      expect([...index.requested].sort()).toEqual([`/files/${index.wheels[0]!}`, '/simple/hello-plugin/', '/simple/mcp/']);
    } finally {
      await index.close();
      await rm(withoutDependency, { recursive: true, force: true });
    }
  });

  it('takes the index from the CLI as --python-index', async () => {
    const withoutDependency = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    const index = await servePythonIndex([MCP_STANDIN]);
    try {
      const run = await cli(['install', withoutDependency, '--dev', '--skip-canary', '--profile-dir', await pool.profile(), '--python-index', index.url, '--json']);
      expect(run.code, run.stderr).toBe(0);
      expect(index.requested).toContain(`/files/${index.wheels[0]!}`);
    } finally {
      await index.close();
      await rm(withoutDependency, { recursive: true, force: true });
    }
  });
});
