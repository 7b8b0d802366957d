/**
 * Seeds 000 (GUM author guide) and 001 (GUM plugin contract), trust: what an
 * install shows and asks, the LICENSE of non-local installs, the display
 * name, the profile selection and the clientInfo a plugin is sent. Real
 * installs of the author guide's Flight Search example.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { TrustRequest } from '../../src/installer/trust.js';
import { cli, json, REPO } from '../cli/cliHarness.js';
import { HostPool, jsonOf } from '../support/hostHarness.js';

const SLOW = 60_000;
const pool = new HostPool();
const scratch: string[] = [];
let pkg = '';

beforeAll(async () => {
  pkg = await packageFixturePlugin(join(REPO, 'fixtures/plugins/gum-fli'));
  scratch.push(pkg);
});
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true }))));

/** The package as a .tgz archive, with or without a LICENSE file beside its manifest. */
async function archive(withLicense: boolean): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gum-trust-'));
  scratch.push(dir);
  await promisify(execFile)('cp', ['-a', `${pkg}/.`, join(dir, 'pkg')]);
  if (withLicense) await writeFile(join(dir, 'pkg', 'LICENSE'), 'MIT License\n');
  const file = join(dir, `fli-${withLicense ? 'licensed' : 'bare'}.tgz`);
  await promisify(execFile)('tar', ['-czf', file, '-C', join(dir, 'pkg'), '.']);
  return file;
}

describe('seed 001 §Trust Posture and §Reserved Namespaces: install displays the owner, ToS and risk and requires acceptance', () => {
  it('§Trust Posture: the accept callback is shown namespace_owner, ToS, risk and powers; declining installs nothing', async () => {
    const host = await pool.open(await pool.profile());
    const asked: TrustRequest[] = [];
    const declined = (await host.install(pkg, { accept: (request) => (asked.push(request), false) }))._unsafeUnwrapErr();
    expect(declined).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { plugin_id: 'fli', namespace_owner: 'io.example.flights' } });
    expect(asked).toEqual([
      {
        plugin_id: 'fli',
        display_name: 'Flight Search',
        version: '0.1.0',
        namespace_owner: 'io.example.flights',
        tos: 'https://flights.example/terms',
        risk: 'Searches public flight fares',
        license: null,
        source: 'directory',
        source_path: pkg,
        capabilities: { network: false, fs_write_dir: '', env_allow: [] },
        tools: [{ name: 'search', risk_class: 'read' }],
      },
    ]);
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
  });

  it('§Reserved Namespaces, remove keeps the owner: a reinstall by the same owner is not asked again (seed 000 §4.2)', async () => {
    const host = await pool.open(await pool.profile());
    let asked = 0;
    const accept = (): boolean => (asked++, true);
    expect((await host.install(pkg, { accept, canary: false })).isOk()).toBe(true);
    expect((await host.remove('fli')).isOk()).toBe(true);
    expect((await host.install(pkg, { accept, canary: false })).isOk()).toBe(true);
    expect(asked).toBe(1);
  });
});

describe('seed 000 §4.1 directory layout: LICENSE is required for non-local installs', () => {
  it('§4.1 an archive without LICENSE is PLUGIN_LICENSE_MISSING under the gum preset; with one it installs; a local directory needs none', async () => {
    const host = await pool.open(await pool.profile(), { preset: 'gum' });
    const refused = (await host.install(await archive(false), { canary: false }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_LICENSE_MISSING', details: { plugin_id: 'fli', source: 'tgz' } });
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
    expect((await host.install(await archive(true), { canary: false })).isOk()).toBe(true);
    const local = await pool.open(await pool.profile(), { preset: 'gum' });
    expect((await local.install(pkg, { canary: false })).isOk()).toBe(true);
  });
});

describe('seed 000 §3.1 (a) initialize: clientInfo is settable through PluginHost', () => {
  it('§3.1 the plugin receives the clientInfo the host application sets', async () => {
    const dir = await pool.profile();
    const host = await pool.open(dir, { clientInfo: { name: 'gum', version: '0.1.0' }, activation: 'immediate' });
    (await host.install(pkg, { canary: false }))._unsafeUnwrap();
    const answer = jsonOf<{ data: { client: unknown } }>((await host.call('plug.fli.search', { origin: 'SFO', destination: 'JFK', depart_date: '2026-06-15' }))._unsafeUnwrap());
    expect(answer.data.client).toEqual({ name: 'gum', version: '0.1.0' });
  });
});

describe('seed 000 §4.2 install commands: GUM_PROFILE / --profile=dev, the display name in list, --yes', () => {
  let home = '';
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'gum-profile-'));
    scratch.push(home);
  });

  it('§4.2 GUM_PROFILE=dev selects the dev profile a local directory installs into; list shows the display name', { timeout: SLOW }, async () => {
    const env = { XDG_DATA_HOME: home, GUM_PROFILE: 'dev' };
    const installed = await cli(['install', pkg, '--yes', '--skip-canary', '--json'], { env });
    expect(installed.code, installed.stderr).toBe(0);
    const listed = await cli(['list'], { env });
    expect(listed.stdout).toMatch(/^fli +0\.1\.0 +mcp-plugin +\S+ +1 +Flight Search$/m);
    const viaFlag = json(await cli(['list', '--profile=dev', '--json'], { env: { XDG_DATA_HOME: home } }));
    expect(viaFlag).toMatchObject({ profile: 'dev', profile_dir: join(home, 'mcp-plugin-host', 'dev'), plugins: [{ name: 'fli', display_name: 'Flight Search' }] });
    const info = await cli(['info', 'fli', '--profile=dev'], { env: { XDG_DATA_HOME: home } });
    expect(info.stdout).toMatch(/^display name +Flight Search$/m);
    expect(info.stdout).toMatch(/^namespace owner +io\.example\.flights$/m);
  });
});
