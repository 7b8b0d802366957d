/**
 * An MCP Bundle's `compatibility.runtimes` range is checked against the
 * version of the interpreter its `mcp_config.command` names, found on the
 * host's interpreter search path. Until this check went through the
 * sandboxed probe it ran that file with `--version` on the host,
 * unsandboxed, as the host's user, at inspect and at install: a `python3`
 * first on the search path is anyone's program. Here that `python3` is a
 * native program that leaves a mark wherever it runs and otherwise runs the
 * system's Python: after the install, no mark is on the host, and the
 * version it answered in the sandbox still accepts the bundle whose range
 * it fits and refuses the one whose range it does not.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { markingProgram } from '../binding/helpers/markingNode.js';
import { HostPool } from '../support/hostHarness.js';
import { bundleDirectory, packBundle } from '../support/mcpbBundles.js';
import { MCP_STANDIN, PYTHON_SEARCH_PATH, vendorInto } from '../support/pythonPackages.js';
import { LINUX_BACKENDS } from '../sandbox/sandboxBackends.js';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'python-bundle');
const SYSTEM_PYTHON = '/usr/bin/python3';
const pool = new HostPool();
const made: string[] = [];
const bundles: Record<'fits' | 'too_old', string> = { fits: '', too_old: '' };
let systemVersion: string;

/** The fixture Python bundle (FastMCP stand-in vendored in server/lib) with `compatibility.runtimes.python` as given, packed by the MCPB CLI. */
async function packedFixture(range: string): Promise<string> {
  const dir = await bundleDirectory({});
  made.push(dir);
  await cp(FIXTURE, dir, { recursive: true });
  await vendorInto([MCP_STANDIN], join(dir, 'server', 'lib'));
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as { compatibility: { runtimes: Record<string, string> } };
  manifest.compatibility.runtimes['python'] = range;
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  const packed = await packBundle(dir);
  made.push(join(packed, '..'));
  return packed;
}

beforeAll(async () => {
  // The system's Python, which the marking python3 runs, says its version on the host (it is the system's own).
  systemVersion = /^Python (\d+\.\d+\.\d+)/.exec(execFileSync(SYSTEM_PYTHON, ['--version'], { encoding: 'utf8' }))?.[1] ?? '';
  expect(systemVersion).toMatch(/^3\.\d+\.\d+$/);
  bundles.fits = await packedFixture(`>=3.8 <${Number(systemVersion.split('.')[0]) + 1}`);
  bundles.too_old = await packedFixture('>=99');
}, 300_000);
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(made.map((path) => rm(path, { recursive: true, force: true }))));

describe.each(LINUX_BACKENDS)("MCP Bundles: the python3 first on the search path, for compatibility.runtimes (%s)", (backend) => {
  /** A host whose interpreter search path finds the marking python3 first; its mark and path. */
  async function markedHost(): Promise<{ host: Awaited<ReturnType<HostPool['open']>>; mark: string; python: string }> {
    const work = await pool.profile();
    const mark = join(work, 'ran-on-the-host');
    const python = await markingProgram(join(work, 'search-path'), 'python3', SYSTEM_PYTHON, mark);
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: `${join(work, 'search-path')}:${PYTHON_SEARCH_PATH}`, sandbox: { backend } });
    return { host, mark, python };
  }

  it('accepts a bundle whose range the version it answered in the sandbox fits; no mark on the host', { timeout: 180_000 }, async () => {
    const { host, mark, python } = await markedHost();
    const inspected = (await host.inspect(bundles.fits))._unsafeUnwrap();
    expect(inspected.report.violations).toEqual([]);
    const installed = await host.install(bundles.fits, { canary: false });
    if (installed.isErr()) expect.fail(`${installed.error.code}: ${installed.error.message} ${JSON.stringify(installed.error.details ?? {})}`);
    expect(existsSync(mark)).toBe(false);
    const lock = JSON.parse(await readFile(join(host.profileDir, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { binding: { interpreter?: { path?: string } } }> };
    expect(lock.plugins['hello-bundle']?.binding.interpreter?.path).toBe(python);
  });

  it('refuses a bundle whose range it does not fit, naming the version it answered; no mark on the host', { timeout: 180_000 }, async () => {
    const { host, mark, python } = await markedHost();
    const expected = { code: 'PLUGIN_BUNDLE_INCOMPATIBLE', pointer: '/compatibility/runtimes/python', message: `the bundle needs python >=99; ${python} is ${systemVersion}` };
    expect((await host.inspect(bundles.too_old))._unsafeUnwrap().report.violations).toEqual([expect.objectContaining(expected)]);
    const refused = (await host.install(bundles.too_old, { canary: false }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_BUNDLE_INCOMPATIBLE');
    expect(refused.details).toMatchObject({ violations: [expected] });
    expect(existsSync(mark)).toBe(false);
  });
});
