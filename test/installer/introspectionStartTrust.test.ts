/**
 * The introspection start (a server that ships no tool list is started once
 * at install to list them) is judged by the same trust judgement as the
 * install, before any code of the package runs: an install that would be
 * refused unasked whatever its tools (a package from another npm registry
 * than the version accepted before, `registry_changed`; a credential name the
 * version accepted before did not need) is refused before the start, and
 * with an `accept` callback a start with network is asked about every power
 * the install would be asked about, credential names included.
 *
 * Real installs: npm fetches from two local registries (node:http) serving
 * packages made by npm pack, MCP Bundles from directories, real sandboxed
 * starts. The sandbox lets no start write a file the test could read, so a
 * start leaves its marker by connecting to a TCP listener of the test
 * (with the network the install grants), or fails (offline), which an install
 * that ran it reports instead of the refusal.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server as HttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import type { TrustRequest } from '../../src/installer/trust.js';
import { HostPool } from '../support/hostHarness.js';
import { serveNpmPackages, serveNpmVersions } from '../support/localNpmRegistry.js';
import { StartMarker } from '../support/startMarker.js';
import { bundleDirectory } from '../support/mcpbBundles.js';
import { digestOf, ed25519Keys, signPackage } from './craftArchives.js';
import { tgzOfDirectory } from './InstallerHarness.js';

const pool = new HostPool();
const registries: HttpServer[] = [];
let base: string;
let marker: StartMarker;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'start-trust-'));
  marker = await new StartMarker().listen();
});
afterEach(() => pool.cleanup());
afterAll(async () => {
  await pool.cleanup();
  await Promise.all(registries.splice(0).map((server) => new Promise((closed) => server.close(closed))));
  await marker.close();
  await rm(base, { recursive: true, force: true });
});

/** The start marker's server (see {@link StartMarker.serverSource}). */
const serverSource = (marking: boolean): string => marker.serverSource('start-trust', marking);

/** The package directory of `name`@`version` (no manifest: the host introspects it); `marking` as {@link serverSource}. */
async function packageDir(name: string, version: string, marking: boolean): Promise<string> {
  const pkg = join(await mkdtemp(join(base, 'pack-')), name);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), serverSource(marking), { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version, type: 'module', bin: { [name]: 'bin/server.mjs' } }));
  return pkg;
}

/** `name`@`version` packed by npm (see {@link packageDir}). */
async function pack(name: string, version: string, marking: boolean): Promise<string> {
  const pkg = await packageDir(name, version, marking);
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', join(pkg, '..')], { cwd: pkg, stdio: 'ignore' });
  return join(pkg, '..', `${name}-${version}.tgz`);
}

/** A GUM manifest for the packed server of `name`, claiming `owner`. */
const manifestOf = (name: string, version: string, owner: string): Record<string, unknown> => ({
  manifest_schema_version: 1,
  plugin_id: name,
  name: 'Start trust',
  version,
  namespace_owner: owner,
  shape: 'mcp-plugin',
  executable: 'bin/server.mjs',
  advertised_tools: [{ name: 'look', description: 'Looks', risk_class: 'read' }],
  declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
});

/** An accept callback that records each request and answers `answer`. */
function asking(answer: boolean): { accept: (r: TrustRequest) => boolean; asked: TrustRequest[] } {
  const asked: TrustRequest[] = [];
  return { asked, accept: (r) => (asked.push(r), answer) };
}

describe('an npm package from another registry under an installed name', { timeout: 300_000 }, () => {
  it('is refused (registry_changed) before its introspection start runs, offline or with the network granted', async () => {
    const name = 'start-trust-registry';
    const genuine = await serveNpmVersions(registries, name, 'bin/server.mjs', { '1.0.0': await pack(name, '1.0.0', false) });
    const other = await serveNpmVersions(registries, name, 'bin/server.mjs', { '1.0.1': await pack(name, '1.0.1', true) });
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate', npm: { registry: genuine } });
    expect((await host.install(`npm:${name}@1.0.0`, { canary: false, grant: { network: true } })).isOk()).toBe(true);

    const moved = await pool.open(dir, { profileKind: 'standard', activation: 'immediate', npm: { registry: other } });
    // Offline, the other publisher's server fails at start: on the old code that start ran, and its failure was the answer.
    const offline = (await moved.install(`npm:${name}@1.0.1`, { canary: false }))._unsafeUnwrapErr();
    expect(offline).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'registry_changed', registry_from: genuine, registry_to: other } });
    // With the network granted (the grant is the consent to it), the start would connect to the marker listener.
    const before = marker.starts;
    const networked = (await moved.install(`npm:${name}@1.0.1`, { canary: false, grant: { network: true } }))._unsafeUnwrapErr();
    expect(networked).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'registry_changed', registry_from: genuine, registry_to: other } });
    expect(marker.starts).toBe(before);

    // Asked before the start with network (the registry change named), and declined: nothing ran either.
    const declined = asking(false);
    const refused = (await moved.install(`npm:${name}@1.0.1`, { canary: false, grant: { network: true }, accept: declined.accept }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { stage: 'introspection', reason: 'registry_changed' } });
    expect(declined.asked.map((r) => [r.stage, r.registry_change])).toEqual([['introspection', { from: genuine, to: other }]]);
    expect(marker.starts).toBe(before);

    // Accepted: the start runs (its marker), and the install is asked with the tools it listed.
    const accepted = asking(true);
    const installed = await moved.install(`npm:${name}@1.0.1`, { canary: false, grant: { network: true }, accept: accepted.accept });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    expect(accepted.asked.map((r) => [r.stage ?? 'install', r.registry_change?.to, r.tools.map((t) => t.name)])).toEqual([
      ['introspection', other, []],
      ['install', other, ['marked_tool']],
    ]);
    expect(marker.starts).toBeGreaterThan(before);
  });
});

describe('an introspected npm package under an id another owner or key holds', { timeout: 300_000 }, () => {
  it('is refused (PLUGIN_NAMESPACE_CONFLICT) before its start when another namespace owner is recorded', async () => {
    const name = 'start-trust-owner';
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    // Installed with the caller's manifest, which claims another owner than the generated one (npm:<name>).
    const first = await host.install(`npm:${await pack(name, '1.0.0', false)}`, { canary: false, manifest: manifestOf(name, '1.0.0', 'io.example.owner') });
    expect(first.isOk(), JSON.stringify(first.isErr() ? first.error : null)).toBe(true);
    const other = await pack(name, '1.0.1', true);
    // Offline the server fails at start: on the old code that failure was the answer.
    expect((await host.install(`npm:${other}`, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_NAMESPACE_CONFLICT', details: { reason: 'owner_mismatch' } });
    const before = marker.starts;
    const networked = (await host.install(`npm:${other}`, { canary: false, grant: { network: true }, accept: () => true }))._unsafeUnwrapErr();
    expect(networked).toMatchObject({ code: 'PLUGIN_NAMESPACE_CONFLICT', details: { recorded_owner: 'io.example.owner', namespace_owner: `npm:${name}` } });
    expect(marker.starts).toBe(before);
  });

  it('is refused (signer_changed) before its start when a key signed the version installed, or the one removed', async () => {
    const name = 'start-trust-signed';
    const key = ed25519Keys();
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard', trustedKeys: [key.pem] });
    // The signed archive claims the owner the generated manifest will (npm:<name>): only the signature differs.
    const signed = await packageDir(name, '1.0.0', false);
    await writeFile(join(signed, 'manifest.json'), JSON.stringify(manifestOf(name, '1.0.0', `npm:${name}`)));
    const bytes = await tgzOfDirectory(signed, join(signed, '..', 'signed.tgz'));
    const first = await host.install(join(signed, '..', 'signed.tgz'), { canary: false, checksum: digestOf(bytes), signature: signPackage(bytes, key.privateKey) });
    expect(first.isOk(), JSON.stringify(first.isErr() ? first.error : null)).toBe(true);

    const unsigned = `npm:${await pack(name, '1.0.1', true)}`;
    const before = marker.starts;
    expect((await host.install(unsigned, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SIGNATURE_INVALID', details: { reason: 'signer_changed', signer: null } });
    expect((await host.install(unsigned, { canary: false, grant: { network: true }, accept: () => true }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SIGNATURE_INVALID', details: { reason: 'signer_changed' } });
    expect(marker.starts).toBe(before);
    // Removed, the key that signed it still holds the id.
    expect((await host.remove(name)).isOk()).toBe(true);
    expect((await host.install(unsigned, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SIGNATURE_INVALID', details: { reason: 'signer_changed' } });
    // The caller's allowSignerChange lets it through to the start (which fails offline).
    expect((await host.install(unsigned, { canary: false, allowSignerChange: true }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
  });
});

/** A bundle whose server lists its tools at run time (`tools_generated`) after connecting to the marker listener; `credential` adds a sensitive user_config passed as REMOTE_TOKEN. */
async function markingBundle(version: string, credential: boolean): Promise<string> {
  const dir = await bundleDirectory({
    manifest_version: '0.3',
    name: 'marking_bundle',
    version,
    description: 'A bundle whose server connects at start',
    author: { name: 'Tests' },
    server: {
      type: 'node',
      entry_point: 'server/remote.mjs',
      mcp_config: { command: 'node', args: ['${__dirname}/server/remote.mjs'], ...(credential ? { env: { REMOTE_TOKEN: '${user_config.token}' } } : {}) },
    },
    ...(credential ? { user_config: { token: { type: 'string', title: 'Token', description: 'The service token', sensitive: true, required: true } } } : {}),
    tools: [{ name: 'placeholder' }],
    tools_generated: true,
  });
  await mkdir(join(dir, 'server'));
  await writeFile(join(dir, 'server/remote.mjs'), serverSource(true));
  return dir;
}

describe('an MCP Bundle upgrade that needs a credential name the version accepted before did not', { timeout: 120_000 }, () => {
  it('is asked about it before its start with network, and refused before the start with no one to ask', async () => {
    const host = await pool.open(await pool.profile());
    const first = asking(true);
    expect((await host.install(await markingBundle('1.0.0', false), { canary: false, grant: { network: true }, accept: first.accept })).isOk()).toBe(true);
    expect(first.asked.map((r) => r.stage ?? 'install')).toEqual(['introspection', 'install']);
    // The same bundle again with the same powers: neither the start nor the install is asked (the owner accepted them).
    const same = asking(false);
    expect((await host.install(await markingBundle('1.0.1', false), { canary: false, grant: { network: true }, accept: same.accept })).isOk()).toBe(true);
    expect(same.asked).toEqual([]);

    // No one to ask: the install would be refused for the new credential name whatever the server lists, so it never starts.
    const before = marker.starts;
    const unasked = (await host.install(await markingBundle('1.0.2', true), { canary: false, grant: { network: true } }))._unsafeUnwrapErr();
    expect(unasked).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'capabilities_widened', added_capabilities: [{ field: 'needs_user_creds', value: 'REMOTE_TOKEN' }] } });
    expect(marker.starts).toBe(before);

    // Asked before the start with network, naming the credential: on the old code the start was spared (its powers alone were compared).
    const declined = asking(false);
    const refused = (await host.install(await markingBundle('1.0.2', true), { canary: false, grant: { network: true }, accept: declined.accept }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { stage: 'introspection', reason: 'capabilities_widened' } });
    expect(declined.asked.map((r) => [r.stage, r.added_capabilities])).toEqual([['introspection', [{ field: 'needs_user_creds', value: 'REMOTE_TOKEN' }]]]);
    expect(marker.starts).toBe(before);
  });
});

describe('an introspected package the installed version refuses whatever it lists', { timeout: 300_000 }, () => {
  it('is refused (PLUGIN_DOWNGRADE_REFUSED) before its start when it is a lower version; allowDowngrade lets it start', async () => {
    const name = 'start-trust-downgrade';
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    expect((await host.install(`npm:${await pack(name, '1.0.1', false)}`, { canary: false })).isOk()).toBe(true);
    const lower = `npm:${await pack(name, '1.0.0', true)}`;
    const before = marker.starts;
    // Offline the server fails at start: on the old code that start ran, and its failure was the answer.
    expect((await host.install(lower, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_DOWNGRADE_REFUSED', details: { version: '1.0.0', installed_version: '1.0.1' } });
    // With the network granted and the start accepted, the old code ran it (the marker) and refused after.
    const asked = asking(true);
    expect((await host.install(lower, { canary: false, grant: { network: true }, accept: asked.accept }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_DOWNGRADE_REFUSED' });
    expect(asked.asked).toEqual([]);
    expect(marker.starts).toBe(before);
    // The caller's allowDowngrade lets it through to the start.
    const downgraded = await host.install(lower, { canary: false, grant: { network: true }, accept: () => true, allowDowngrade: true });
    expect(downgraded.isOk(), JSON.stringify(downgraded.isErr() ? downgraded.error : null)).toBe(true);
    expect(marker.starts).toBeGreaterThan(before);
  });

  it('is refused (PLUGIN_ALREADY_INSTALLED) before its start when it is the installed version from other files; the same files start and are unchanged', async () => {
    const name = 'start-trust-same';
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const first = `npm:${await pack(name, '1.0.0', false)}`;
    expect((await host.install(first, { canary: false })).isOk()).toBe(true);
    // The same files again start (their manifest is made from what they list) and are an unchanged install.
    expect((await host.install(first, { canary: false }))._unsafeUnwrap().unchanged).toBe(true);

    const other = `npm:${await pack(name, '1.0.0', true)}`;
    const before = marker.starts;
    expect((await host.install(other, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_ALREADY_INSTALLED', details: { version: '1.0.0', installed_version: '1.0.0' } });
    expect((await host.install(other, { canary: false, grant: { network: true }, accept: () => true }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_ALREADY_INSTALLED' });
    expect(marker.starts).toBe(before);
    // replace lets other files through to the start.
    const replaced = await host.install(other, { canary: false, grant: { network: true }, accept: () => true, replace: true });
    expect(replaced.isOk(), JSON.stringify(replaced.isErr() ? replaced.error : null)).toBe(true);
    expect(marker.starts).toBeGreaterThan(before);
  });

  it('an MCP Bundle of a lower version is refused before its start', async () => {
    const host = await pool.open(await pool.profile());
    expect((await host.install(await markingBundle('1.0.1', false), { canary: false, grant: { network: true }, accept: () => true })).isOk()).toBe(true);
    const before = marker.starts;
    const lower = await markingBundle('1.0.0', false);
    expect((await host.install(lower, { canary: false, grant: { network: true } }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_DOWNGRADE_REFUSED', details: { version: '1.0.0', installed_version: '1.0.1' } });
    expect((await host.install(lower, { canary: false, grant: { network: true }, accept: () => true }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_DOWNGRADE_REFUSED' });
    expect(marker.starts).toBe(before);
  });
});

describe('another npm package whose name makes an installed plugin id', { timeout: 300_000 }, () => {
  it('is refused (package_changed) before its introspection start, and asked about with the package named', async () => {
    // pluginIdOf makes both names 'start-trust-pkg'; the one installed was given a manifest claiming the owner the other's generated one claims.
    const installedName = 'start_trust_pkg';
    const otherName = 'start.trust.pkg';
    const registry = await serveNpmPackages(registries, {
      [installedName]: { bin: 'bin/server.mjs', versions: { '1.0.0': await pack(installedName, '1.0.0', false) } },
      [otherName]: { bin: 'bin/server.mjs', versions: { '1.0.1': await pack(otherName, '1.0.1', true) } },
    });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', npm: { registry } });
    const first = await host.install(`npm:${installedName}@1.0.0`, { canary: false, manifest: { ...manifestOf('start-trust-pkg', '1.0.0', `npm:${otherName}`) } });
    expect(first.isOk(), JSON.stringify(first.isErr() ? first.error : null)).toBe(true);

    const other = `npm:${otherName}@1.0.1`;
    const changed = { reason: 'package_changed', package_from: installedName, package_to: otherName };
    // Offline the server fails at start: on the old code that start ran, and its failure was the answer.
    expect((await host.install(other, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: changed });
    const before = marker.starts;
    expect((await host.install(other, { canary: false, grant: { network: true } }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: changed });
    expect(marker.starts).toBe(before);

    // Asked before the start with network, the package named, and declined: nothing ran.
    const declined = asking(false);
    expect((await host.install(other, { canary: false, grant: { network: true }, accept: declined.accept }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { stage: 'introspection', ...changed } });
    expect(declined.asked.map((r) => [r.stage, r.package_change])).toEqual([['introspection', { from: installedName, to: otherName }]]);
    expect(marker.starts).toBe(before);

    // Accepted: the start runs, and the install is asked again with its tools.
    const accepted = asking(true);
    const installed = await host.install(other, { canary: false, grant: { network: true }, accept: accepted.accept });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    expect(accepted.asked.map((r) => [r.stage ?? 'install', r.package_change?.to])).toEqual([
      ['introspection', otherName],
      ['install', otherName],
    ]);
    expect(marker.starts).toBeGreaterThan(before);
  });
});
