/**
 * Installer happy paths and package sources, on real temporary profiles: a
 * dev directory install recorded in all three catalog files and runnable
 * through its binding, the TOML form with schemas and credentials, and
 * archives built at test time with checksums and signatures.
 */
import { createHash } from 'node:crypto';
import { chmod, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyExecutableBinding } from '../../src/binding/ExecutableBinding.js';
import type { TrustRequest } from '../../src/installer/trust.js';
import { pluginState } from '../support/pluginState.js';
import { stoppedClock } from '../support/clocks.js';
import { digestOf, ed25519Keys, signPackage } from './craftArchives.js';
import {
  converse,
  FIXTURES,
  installed,
  modeOf,
  refusedWith,
  testProfile,
  tgzOfDirectory,
  unwrap,
  zipOfDirectory,
  type Census,
  type TestProfile,
} from './InstallerHarness.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const fixedClock = stoppedClock(NOW);
const sha256Of = async (path: string): Promise<string> => createHash('sha256').update(await readFile(path)).digest('hex');
const EMPTY: Omit<Census, 'owners'> = { plugins: [], opIds: [], installRoots: [], schemaFiles: [], staging: [] };

let profiles: TestProfile[] = [];
const profile = async (...args: Parameters<typeof testProfile>): Promise<TestProfile> => {
  const p = await testProfile(...args);
  profiles.push(p);
  return p;
};
afterEach(async () => {
  await Promise.all(profiles.map((p) => p.dispose()));
  profiles = [];
});

describe('installing a local directory on a dev profile', () => {
  it('records the binding, variants, descriptor and state, with 0644 files, 0755 executable and directories', async () => {
    const p = await profile('dev', { clock: fixedClock });
    const pkg = await p.copyFixture('install-node');
    // Source modes the installer must normalize: an unmarked executable and a private file.
    await chmod(join(pkg, 'bin', 'greeter.mjs'), 0o644);
    await chmod(join(pkg, 'README.md'), 0o600);

    const plugin = unwrap(await p.installer.install(pkg));

    const root = plugin.lock.binding.install_root;
    expect(root).toBe(await realpath(root));
    expect(root.startsWith(`${await realpath(p.layout.pluginsDir)}/greeter/1.0.0-`)).toBe(true);
    expect(plugin.lock).toMatchObject({
      plugin_id: 'greeter',
      version: '1.0.0',
      namespace_owner: 'io.example.greeter',
      package: { source: `directory:${pkg}`, ref: '1.0.0', checksum: '' },
    });
    const binding = plugin.lock.binding;
    expect(binding.executable_path).toBe('bin/greeter.mjs');
    expect(binding.executable_sha256).toBe(await sha256Of(join(FIXTURES, 'install-node', 'bin', 'greeter.mjs')));
    expect(binding.interpreter?.kind).toBe('node');
    expect(binding.argv_normalized).toEqual([binding.interpreter?.path, `${root}/bin/greeter.mjs`]);

    expect(plugin.variants).toEqual([
      expect.objectContaining({ op_id: 'plug.greeter.greet', variant_id: 'plug.greeter.greet@1.0.0', plugin_id: 'greeter', tool_name: 'greet', risk_class: 'read', confirmation_policy: 'none', schema_hashes: {} }),
      expect.objectContaining({ op_id: 'plug.greeter.shout', variant_id: 'plug.greeter.shout@1.0.0', tool_name: 'shout' }),
    ]);
    expect(plugin.descriptor).toEqual({
      plugin_id: 'greeter',
      name: 'Greeter',
      version: '1.0.0',
      shape: 'mcp-plugin',
      form: 'gum-json',
      description: expect.any(String),
      namespace_owner: 'io.example.greeter',
      capabilities: { network: false, fs_write_dir: '', env_allow: ['GREETER_LOCALE'] },
      needs_user_creds: [],
      credential_descriptors: [],
    });
    expect(plugin.state).toEqual(pluginState({ status: 'installed_pending_restart', installed_at: '2026-03-01T12:00:00.000Z' }));

    // What install returned is what the three files now hold.
    expect(await installed(p, 'greeter')).toEqual(plugin);
    const census = await p.census();
    expect(census).toEqual({ ...EMPTY, plugins: ['greeter'], opIds: ['plug.greeter.greet', 'plug.greeter.shout'], installRoots: [`greeter/${root.split('/').pop()}`], owners: { greeter: 'io.example.greeter' } });

    expect(await modeOf(root)).toBe(0o755);
    expect(await modeOf(join(root, 'bin'))).toBe(0o755);
    expect(await modeOf(join(root, 'lib'))).toBe(0o755);
    expect(await modeOf(join(root, 'bin', 'greeter.mjs'))).toBe(0o755);
    expect(await modeOf(join(root, 'lib', 'greeting.mjs'))).toBe(0o644);
    expect(await modeOf(join(root, 'README.md'))).toBe(0o644);
    expect(await modeOf(join(root, 'manifest.json'))).toBe(0o644);
  });

  it('installs a plugin that runs from its install root through the recorded binding', async () => {
    const p = await profile('dev');
    const plugin = unwrap(await p.installer.install(await p.copyFixture('install-node')));
    const exe = unwrap(await verifyExecutableBinding(plugin.lock.binding, { copyDir: p.layout.execDir }));
    const replies = await converse(exe, [
      { id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '0' } } },
      { id: 2, method: 'tools/call', params: { name: 'shout', arguments: { name: 'ada' } } },
    ]);
    expect(replies[0]).toMatchObject({ id: 1, result: { serverInfo: { name: 'Greeter' } } });
    const content = (replies[1] as { result: { content: Array<{ text: string }> } }).result.content[0]!.text;
    expect(JSON.parse(content)).toEqual({ success: true, data: { greeting: 'HELLO, ADA!' } });
  });

  it('installs the TOML form: declared ids, schema store files, credentials and the initial status hook', async () => {
    const p = await profile('dev');
    const plugin = unwrap(
      await p.installer.install(await p.copyFixture('install-toml'), {
        initialStatus: (m) => (m.requirements.needs_user_creds.length > 0 ? 'needs_configuration' : 'installed_pending_restart'),
      }),
    );
    expect(plugin.state?.status).toBe('needs_configuration');
    expect(plugin.lock.package).toEqual({ source: expect.stringMatching(/^directory:/), ref: 'v2.1.0', checksum: '' });
    expect(plugin.descriptor).toMatchObject({
      form: 'gum-toml',
      name: 'Notes',
      tos: 'user-accepted',
      needs_user_creds: ['NOTES_TOKEN'],
      credential_descriptors: [{ alias: 'notes', env: 'NOTES_TOKEN', kind: 'api_key', display_name: 'Notes API token', setup_hint: expect.any(String) }],
      canary: { tool: 'search', arguments: { query: 'groceries' } },
    });
    const [variant] = plugin.variants;
    expect(variant).toMatchObject({ op_id: 'notes.search', variant_id: 'notes.search.v2', tool_name: 'search', backend_kind: 'mcp-plugin', output_profile: 'notes.compact' });
    const bundle = JSON.parse(await readFile(join(FIXTURES, 'install-toml', 'schemas', 'notes.search.json'), 'utf8')) as { $defs: Record<string, unknown> };
    const hashes = variant!.schema_hashes;
    expect(Object.keys(hashes).sort()).toEqual(['notes.search.request', 'notes.search.response']);
    for (const part of ['request', 'response'] as const) {
      const file = p.layout.schemaFile(`notes.search.${part}`, hashes[`notes.search.${part}`]!);
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(bundle.$defs[part]);
      expect(await modeOf(file)).toBe(0o644);
    }
    expect((await p.census()).schemaFiles).toHaveLength(2);
  });

  it("names the credentials a first install's plugin will get in the question (review R9 N5)", async () => {
    const p = await profile('dev');
    const asked: TrustRequest[] = [];
    unwrap(await p.installer.install(await p.copyFixture('install-toml'), { accept: (request) => (asked.push(request), true) }));
    // Before, only an upgrade named a credential (as an added power): a first install's question had none.
    expect(asked.map((request) => request.credentials)).toEqual([['NOTES_TOKEN']]);
    asked.length = 0;
    unwrap(await p.installer.install(await p.copyFixture('install-node'), { accept: (request) => (asked.push(request), true) }));
    expect(asked.map((request) => request.credentials)).toEqual([undefined]);
  });

  it('records for each tool exactly its own schema refs, even when one ref is a prefix of another', async () => {
    const p = await profile('dev');
    const pkg = await p.copyFixture('install-schemas');
    const manifestPath = join(pkg, 'manifest.json');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { advertised_tools: Array<{ schema_ref: string }> };
    manifest.advertised_tools[0]!.schema_ref = 'weather';
    manifest.advertised_tools[1]!.schema_ref = 'weather.alerts';
    await writeFile(manifestPath, JSON.stringify(manifest));
    await writeFile(join(pkg, 'schemas', 'weather.json'), await readFile(join(pkg, 'schemas', 'weather.forecast.json')));
    const plugin = unwrap(await p.installer.install(pkg));
    expect(Object.keys(plugin.variants[0]!.schema_hashes).sort()).toEqual(['weather.request', 'weather.response']);
    expect(Object.keys(plugin.variants[1]!.schema_hashes).sort()).toEqual(['weather.alerts.request', 'weather.alerts.response']);
  });

  it('installs an esm-module plugin by pinning its entry module, with one variant per declared tool', async () => {
    const p = await profile('dev');
    const plugin = unwrap(await p.installer.install(join(FIXTURES, 'esm-all-capabilities')));
    const root = plugin.lock.binding.install_root;
    expect(plugin.lock.binding).toEqual({
      executable_path: 'dist/index.mjs',
      executable_sha256: await sha256Of(join(FIXTURES, 'esm-all-capabilities', 'dist', 'index.mjs')),
      argv_normalized: ['esm-runner', '--', root],
      install_root: root,
      kind: 'esm-entry',
      tree: { sha256: expect.stringMatching(/^[0-9a-f]{64}$/), files: 2, bytes: expect.any(Number) },
    });
    // Imported by the runner, never executed: the entry keeps its mode.
    expect(await modeOf(join(root, 'dist', 'index.mjs'))).toBe(0o644);
    expect(plugin.variants.map((v) => v.op_id)).toEqual(['plug.all-capabilities.echo', 'plug.all-capabilities.add']);
    expect(plugin.descriptor).toMatchObject({ shape: 'esm-module', form: 'open-discovery' });
    // An Open Discovery manifest has no namespace_owner: its registry name is the recorded owner.
    expect(await p.census()).toMatchObject({ staging: [], owners: { 'all-capabilities': 'open-discovery:all-capabilities' } });
  });

  it.each(['../outside.mjs', '/etc/passwd.mjs'])('refuses an esm-module entry %j outside the package before copying anything', async (entry) => {
    const p = await profile('dev');
    const pkg = await p.copyFixture('esm-all-capabilities');
    const manifestPath = join(pkg, 'mcp-plugin.json');
    await writeFile(manifestPath, JSON.stringify({ ...JSON.parse(await readFile(manifestPath, 'utf8')), entry }));
    const before = await p.census();
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_ENTRY_INVALID');
    expect(error.details.violations).toEqual([expect.objectContaining({ pointer: '/entry', code: 'PLUGIN_ENTRY_INVALID' })]);
    expect(await p.census()).toEqual(before);
  });

  it.each(['bin/missing.mjs', 'nowhere/greeter.mjs'])('refuses an executable %j that is not in the package, as untrusted (missing), and leaves nothing behind', async (executable) => {
    const p = await profile('dev');
    const pkg = await p.copyFixture('install-node');
    const manifestPath = join(pkg, 'manifest.json');
    await writeFile(manifestPath, JSON.stringify({ ...JSON.parse(await readFile(manifestPath, 'utf8')), executable }));
    const before = await p.census();
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(error.details).toMatchObject({ path: executable, reason: 'missing' });
    expect(await p.census()).toEqual(before);
  });

  it.each([
    ['dist/index.cjs', 'unsupported_format'],
    ['dist/missing.mjs', 'missing'],
  ])('refuses an esm-module entry %j (%s) and leaves nothing behind', async (entry, reason) => {
    const p = await profile('dev');
    const pkg = await p.copyFixture('esm-all-capabilities');
    const manifestPath = join(pkg, 'mcp-plugin.json');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { entry: string };
    manifest.entry = entry;
    await writeFile(manifestPath, JSON.stringify(manifest));
    await writeFile(join(pkg, 'dist', 'index.cjs'), 'module.exports = {};\n');
    const before = await p.census();
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(error.details.reason).toBe(reason);
    expect(await p.census()).toEqual(before);
  });
});

describe('installing archives', () => {
  it('installs a .tgz with the caller checksum on a standard profile and records the digest', async () => {
    const p = await profile('standard');
    const archive = join(p.dir, 'greeter.tgz');
    const bytes = await tgzOfDirectory(await p.copyFixture('install-node'), archive);
    const plugin = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes) }));
    expect(plugin.lock.package).toEqual({ source: `tgz:${archive}`, ref: '1.0.0', checksum: digestOf(bytes) });
    const root = plugin.lock.binding.install_root;
    expect(await modeOf(join(root, 'bin', 'greeter.mjs'))).toBe(0o755);
    expect(await modeOf(join(root, 'lib', 'greeting.mjs'))).toBe(0o644);
    expect((await p.census()).staging).toEqual([]);
  });

  it('installs a .zip with a bare-hex caller checksum', async () => {
    const p = await profile('standard');
    const archive = join(p.dir, 'weather.zip');
    const bytes = await zipOfDirectory(await p.copyFixture('install-schemas'), archive);
    const plugin = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes).slice('sha256:'.length).toUpperCase() }));
    expect(plugin.lock.package.checksum).toBe(digestOf(bytes));
    expect(plugin.variants.map((v) => v.op_id)).toEqual(['plug.weather.forecast', 'plug.weather.alerts']);
  });

  it('refuses an archive whose bytes do not match the caller checksum', async () => {
    const p = await profile('standard');
    const archive = join(p.dir, 'greeter.tgz');
    await tgzOfDirectory(await p.copyFixture('install-node'), archive);
    const before = await p.census();
    const error = refusedWith(await p.installer.install(archive, { checksum: `sha256:${'ab'.repeat(32)}` }), 'PLUGIN_CHECKSUM_MISMATCH');
    expect(error.details).toMatchObject({ reason: 'mismatch' });
    expect(await p.census()).toEqual({ ...before, staging: [] });
  });

  it('treats [package].checksum inside an archive as informational: it cannot name the archive holding it', async () => {
    const p = await profile('dev');
    const archive = join(p.dir, 'notes.tgz');
    const bytes = await tgzOfDirectory(await p.copyFixture('install-toml'), archive);
    const plugin = unwrap(await p.installer.install(archive));
    expect(plugin.lock.package.checksum).toBe(digestOf(bytes));
  });

  it('lets the caller checksum, which verified the archive, stand for [package].checksum', async () => {
    const p = await profile('standard');
    const archive = join(p.dir, 'notes.zip');
    const bytes = await zipOfDirectory(await p.copyFixture('install-toml'), archive);
    const plugin = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes) }));
    expect(plugin.lock.package).toEqual({ source: `zip:${archive}`, ref: 'v2.1.0', checksum: digestOf(bytes) });
  });

  it('refuses, on a standard profile, an archive without a checksum and any local directory', async () => {
    const p = await profile('standard');
    const pkg = await p.copyFixture('install-node');
    const archive = join(p.dir, 'greeter.tgz');
    await tgzOfDirectory(pkg, archive);
    expect(refusedWith(await p.installer.install(archive), 'PLUGIN_CHECKSUM_MISMATCH').details).toMatchObject({ reason: 'missing' });
    const directory = refusedWith(await p.installer.install(pkg), 'PLUGIN_SOURCE_NOT_ALLOWED');
    expect(directory.details).toMatchObject({ reason: 'directory_source' });
    expect(directory.hint).toContain("profileKind: 'dev'");
    expect(await p.census()).toEqual({ ...EMPTY, owners: {} });
  });

  describe('signatures', () => {
    const signer = ed25519Keys();
    const stranger = ed25519Keys();

    const signedArchive = async (p: TestProfile): Promise<{ archive: string; bytes: Buffer }> => {
      const archive = join(p.dir, 'greeter.tgz');
      return { archive, bytes: await tgzOfDirectory(await p.copyFixture('install-node'), archive) };
    };

    it('installs with a valid sidecar signature when signatures are required', async () => {
      const p = await profile('standard', { trustedKeys: [stranger.raw, signer.pem], requireSignatures: true });
      const { archive, bytes } = await signedArchive(p);
      await writeFile(`${archive}.sig`, `${signPackage(bytes, signer.privateKey)}\n`);
      unwrap(await p.installer.install(archive, { checksum: digestOf(bytes) }));
    });

    it('installs with a valid signature passed by the caller', async () => {
      const p = await profile('standard', { trustedKeys: [signer.raw], requireSignatures: true });
      const { archive, bytes } = await signedArchive(p);
      unwrap(await p.installer.install(archive, { checksum: digestOf(bytes), signature: signPackage(bytes, signer.privateKey) }));
    });

    it('refuses an unsigned archive when signatures are required', async () => {
      const p = await profile('standard', { trustedKeys: [signer.raw], requireSignatures: true });
      const { archive, bytes } = await signedArchive(p);
      const error = refusedWith(await p.installer.install(archive, { checksum: digestOf(bytes) }), 'PLUGIN_SIGNATURE_INVALID');
      expect(error.details).toMatchObject({ reason: 'missing' });
      expect(await p.census()).toEqual({ ...EMPTY, owners: {} });
    });

    it('refuses a signature made by a key the host does not trust', async () => {
      const p = await profile('standard', { trustedKeys: [signer.raw], requireSignatures: true });
      const { archive, bytes } = await signedArchive(p);
      await writeFile(`${archive}.sig`, signPackage(bytes, stranger.privateKey));
      const error = refusedWith(await p.installer.install(archive, { checksum: digestOf(bytes) }), 'PLUGIN_SIGNATURE_INVALID');
      expect(error.details).toMatchObject({ reason: 'not_verified' });
      expect(await p.census()).toEqual({ ...EMPTY, owners: {} });
    });

    it('refuses a trusted signature over other bytes even when signatures are optional', async () => {
      const p = await profile('standard', { trustedKeys: [signer.raw] });
      const { archive, bytes } = await signedArchive(p);
      await writeFile(`${archive}.sig`, signPackage(Buffer.concat([bytes, Buffer.from('x')]), signer.privateKey));
      expect(refusedWith(await p.installer.install(archive, { checksum: digestOf(bytes) }), 'PLUGIN_SIGNATURE_INVALID').details).toMatchObject({ reason: 'not_verified' });
    });
  });
});
