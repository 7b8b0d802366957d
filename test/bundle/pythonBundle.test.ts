/**
 * A Python MCP Bundle as MCPB lays one out: `server.type: python`, the
 * entry point run by `python3`, dependencies vendored in `server/lib` and
 * put on the path by `mcp_config.env.PYTHONPATH`; packed with the official
 * MCPB CLI, installed through PluginHost and called under the sandbox.
 */
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HostPool, jsonOf } from '../support/hostHarness.js';
import { bundleDirectory, packBundle } from '../support/mcpbBundles.js';
import { MCP_STANDIN, PYTHON_SEARCH_PATH, vendorInto } from '../support/pythonPackages.js';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'python-bundle');
const pool = new HostPool();
const made: string[] = [];
let bundle: string;
let outsidePath: string;

/** The fixture bundle with FastMCP vendored in server/lib and PYTHONPATH as given, packed by the MCPB CLI. */
async function packedFixture(pythonPath: string): Promise<string> {
  const dir = await bundleDirectory({});
  made.push(dir);
  await cp(FIXTURE, dir, { recursive: true });
  await vendorInto([MCP_STANDIN], join(dir, 'server', 'lib'));
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as { server: { mcp_config: { env: Record<string, string> } } };
  manifest.server.mcp_config.env['PYTHONPATH'] = pythonPath;
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  const packed = await packBundle(dir);
  made.push(join(packed, '..'));
  return packed;
}

beforeAll(async () => {
  bundle = await packedFixture('${__dirname}/server/lib');
  outsidePath = await packedFixture('${__dirname}/server/lib:/usr/lib/python3/dist-packages');
}, 300_000);
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(made.map((path) => rm(path, { recursive: true, force: true }))));

describe('a Python MCP Bundle with vendored dependencies', () => {
  it('installs with its interpreter pinned and runs in the sandbox with server/lib on its path', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const installed = await installer.install(bundle, { canary: false });
    if (installed.isErr()) expect.fail(`${installed.error.code}: ${installed.error.message} ${JSON.stringify(installed.error.details ?? {})}`);
    await installer.close();
    const host = await pool.open(dir, { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const info = (await host.info('hello-bundle'))._unsafeUnwrap();
    expect(info.enforced_capabilities).toMatchObject({ backend: expect.stringMatching(/^(landlock|bubblewrap)$/), network: false });
    const hello = await host.call('plug.hello-bundle.hello', { name: 'bundle' }, { maxRisk: 'destructive' });
    if (hello.isErr()) expect.fail(`${hello.error.code}: ${hello.error.message} ${JSON.stringify(hello.error.details ?? {})}`);
    expect(jsonOf(hello.value)).toEqual({ success: true, data: { greeting: 'Hello, bundle!' } });
    const root = info.executable.install_root;
    const where = jsonOf((await host.call('plug.hello-bundle.where', {}, { maxRisk: 'destructive' }))._unsafeUnwrap());
    expect(where).toEqual({ fastmcp: join(root, 'server/lib/mcp/server/fastmcp.py'), main: join(root, 'server/main.py'), path0: join(root, 'server') });
  });

  it('refuses a PYTHONPATH that names a directory outside the bundle', async () => {
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const error = (await host.install(outsidePath, { canary: false }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(error.message).toMatch(/PYTHONPATH .* may only name directories inside the bundle/);
  });
});
