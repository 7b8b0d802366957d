/**
 * Stored credentials reach only the package they were stored for (review R2
 * F4): a different package installed under the same plugin id (an unsigned
 * archive claiming the id and the namespace owner, before or after a plain
 * remove) finds none and needs setup, while a signed upgrade by the same key,
 * or the same package reinstalled, keeps them. Values stored before origins
 * were recorded are kept by the package installed then, never by another.
 * Real host, real archives, real sandboxed plugin processes.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errAsync } from 'neverthrow';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LockedPlugin } from '../../src/catalog/catalogTypes.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { CREDENTIALS_ORIGIN_KEY, packageOrigin } from '../../src/host/credentials.js';
import { FileSecretStore, type SecretStore } from '../../src/secrets/SecretStore.js';
import { ioError } from '../../src/errors/ioError.js';
import { answered, HostPool, textOf } from '../support/hostHarness.js';
import { digestOf, ed25519Keys, signPackage } from '../installer/craftArchives.js';
import { tgzOfDirectory } from '../installer/InstallerHarness.js';
import { KEYED_HASH_SERVER, keyedManifest } from '../support/keyedPackage.js';

const pool = new HostPool();
const dirs: string[] = [];
afterEach(() => pool.cleanup());
afterAll(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const ID = 'perplexity-search';
const OP = `plug.${ID}.env`;
const STORED = 'pplx-stored-0c5d7e21';
const SECOND = 'pplx-second-9ab3f4d0';
const sha = (value: string): string => createHash('sha256').update(value).digest('hex');


/** A .tgz of the keyed server under {@link ID} at `version`, declaring PERPLEXITY_API_KEY; `extra` changes its bytes. */
async function keyedArchive(version: string, extra = ''): Promise<{ archive: string; bytes: Buffer }> {
  const dir = await mkdtemp(join(tmpdir(), 'credential-origin-'));
  dirs.push(dir);
  const pkg = join(dir, 'pkg');
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'keyed.mjs'), `${KEYED_HASH_SERVER}${extra === '' ? '' : `// ${extra}\n`}`, { mode: 0o755 });
  // The owner is the package's own claim: the other package below spells it the same.
  const identity = { plugin_id: ID, name: 'Perplexity search', version, namespace_owner: 'io.example.perplexity' };
  await writeFile(join(pkg, 'manifest.json'), JSON.stringify(keyedManifest({ ...identity, tool: { name: 'env', description: 'Reports the key it was given' } })));
  const archive = join(dir, `keyed-${version}.tgz`);
  return { archive, bytes: await tgzOfDirectory(pkg, archive) };
}

/** The SHA-256 of the key the installed plugin is given. */
async function keySeen(host: PluginHost): Promise<string | null> {
  const called = await host.call(OP, {});
  if (called.isErr()) throw called.error;
  return (JSON.parse(textOf(called.value)) as { key: string | null }).key;
}

describe('stored credentials and the package they were stored for', { timeout: 120_000 }, () => {
  it('withholds them from a different unsigned package claiming the id and owner, installed over it or after a plain remove', async () => {
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate' });
    const first = await keyedArchive('1.0.0');
    expect(answered(await host.install(first.archive, { canary: false, checksum: digestOf(first.bytes) }))).toBeDefined();
    expect((await host.setup(ID, { 'perplexity-key': STORED })).isOk()).toBe(true);
    expect(await keySeen(host)).toBe(sha(STORED));

    // Another package: same id, same owner, a higher version, other bytes, no new power. On the old code it was
    // taken as an upgrade and called with the stored key.
    const other = await keyedArchive('1.0.1', 'another package');
    const over = (await host.install(other.archive, { canary: false, checksum: digestOf(other.bytes) }))._unsafeUnwrap();
    expect(over.plugin.status).toBe('needs_configuration');
    expect((await host.call(OP, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_NEEDS_CONFIGURATION');
    const canary = (await host.canary(ID, { live: true }))._unsafeUnwrap();
    expect(canary).toMatchObject({ status: 'skipped', error: { code: 'PLUGIN_NEEDS_CONFIGURATION', details: { stored_for_another_package: true } } });
    expect(canary.error?.message).toContain('the credentials stored under its id were set up for another package');

    // After a plain remove (credentials kept), the same.
    expect((await host.remove(ID)).isOk()).toBe(true);
    const third = await keyedArchive('1.0.2', 'a third package');
    expect((await host.install(third.archive, { canary: false, checksum: digestOf(third.bytes) }))._unsafeUnwrap().plugin.status).toBe('needs_configuration');
    expect((await host.call(OP, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_NEEDS_CONFIGURATION');

    // Setup for this package stores its own value, in place of the other package's.
    expect((await host.setup(ID, { 'perplexity-key': SECOND })).isOk()).toBe(true);
    expect(await keySeen(host)).toBe(sha(SECOND));
  });

  it('keeps them through a signed upgrade by the same key and a reinstall of the same package after a plain remove', async () => {
    const publisher = ed25519Keys();
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate', trustedKeys: [publisher.pem] });
    const signed = async (version: string): Promise<{ archive: string; checksum: string; signature: string }> => {
      const made = await keyedArchive(version, `release ${version}`);
      return { archive: made.archive, checksum: digestOf(made.bytes), signature: signPackage(made.bytes, publisher.privateKey) };
    };
    const v1 = await signed('1.0.0');
    expect((await host.install(v1.archive, { canary: false, checksum: v1.checksum, signature: v1.signature })).isOk()).toBe(true);
    expect((await host.setup(ID, { 'perplexity-key': STORED })).isOk()).toBe(true);

    const v2 = await signed('2.0.0');
    const upgraded = (await host.install(v2.archive, { canary: false, checksum: v2.checksum, signature: v2.signature }))._unsafeUnwrap();
    expect(upgraded.plugin.status).toBe('active');
    expect(await keySeen(host)).toBe(sha(STORED));

    expect((await host.remove(ID)).isOk()).toBe(true);
    expect((await host.install(v2.archive, { canary: false, checksum: v2.checksum, signature: v2.signature })).isOk()).toBe(true);
    expect(await keySeen(host)).toBe(sha(STORED));
  });

  it('lets values stored before origins were recorded stay with the package installed then, and no other', async () => {
    const dir = await pool.profile();
    const secretStore = new FileSecretStore(dir);
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate', secretStore });
    const first = await keyedArchive('1.0.0');
    expect(answered(await host.install(first.archive, { canary: false, checksum: digestOf(first.bytes) }))).toBeDefined();
    // As an older host stored them: values alone, no origin.
    expect((await secretStore.set(ID, { PERPLEXITY_API_KEY: STORED })).isOk()).toBe(true);
    expect((await host.canary(ID, { live: true }))._unsafeUnwrap().status).toBe('passed');
    expect(await keySeen(host)).toBe(sha(STORED));

    const other = await keyedArchive('1.0.1', 'another package');
    expect((await host.install(other.archive, { canary: false, checksum: digestOf(other.bytes) }))._unsafeUnwrap().plugin.status).toBe('needs_configuration');
    expect((await host.call(OP, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_NEEDS_CONFIGURATION');
    // The values were bound to the package they were stored with, before the other one replaced it.
    expect((await secretStore.get(ID))._unsafeUnwrap()[CREDENTIALS_ORIGIN_KEY]).toBe(`digest:${digestOf(first.bytes)}`);
  });

  it('withholds values stored before origins were recorded for an id removed before from the next package under it', async () => {
    const dir = await pool.profile();
    const secretStore = new FileSecretStore(dir);
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate', secretStore });
    const first = await keyedArchive('1.0.0');
    expect((await host.install(first.archive, { canary: false, checksum: digestOf(first.bytes) })).isOk()).toBe(true);
    expect((await host.remove(ID)).isOk()).toBe(true);
    // Kept by a plain remove on an older host: nothing names the package they were stored for.
    expect((await secretStore.set(ID, { PERPLEXITY_API_KEY: STORED })).isOk()).toBe(true);
    const any = await keyedArchive('1.0.1', 'any package');
    expect((await host.install(any.archive, { canary: false, checksum: digestOf(any.bytes) }))._unsafeUnwrap().plugin.status).toBe('needs_configuration');
    expect((await host.call(OP, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_NEEDS_CONFIGURATION');
  });

  it('gives values put in the store before any install under the id to the first package installed', async () => {
    const dir = await pool.profile();
    const secretStore = new FileSecretStore(dir);
    // An application (or the testing kit) giving the plugin its credentials ahead of the install.
    expect((await secretStore.set(ID, { PERPLEXITY_API_KEY: STORED })).isOk()).toBe(true);
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate', secretStore });
    const first = await keyedArchive('1.0.0');
    expect((await host.install(first.archive, { canary: false, checksum: digestOf(first.bytes) }))._unsafeUnwrap().plugin.status).toBe('active');
    expect(await keySeen(host)).toBe(sha(STORED));
  });

  it('deletes the credentials of a plugin removed before, with forgetSecrets', async () => {
    const dir = await pool.profile();
    const secretStore = new FileSecretStore(dir);
    const host = await pool.open(dir, { profileKind: 'standard', secretStore });
    const first = await keyedArchive('1.0.0');
    expect(answered(await host.install(first.archive, { canary: false, checksum: digestOf(first.bytes) }))).toBeDefined();
    expect((await host.setup(ID, { 'perplexity-key': STORED })).isOk()).toBe(true);
    expect((await host.remove(ID)).isOk()).toBe(true);
    expect((await secretStore.get(ID))._unsafeUnwrap()).toHaveProperty('PERPLEXITY_API_KEY', STORED);
    // On the old code: PLUGIN_NOT_FOUND, and the values stayed.
    expect((await host.remove(ID, { forgetSecrets: true })).isOk()).toBe(true);
    expect((await secretStore.get(ID))._unsafeUnwrap()).toEqual({});
    // Without forgetSecrets, an id not installed is still not found.
    expect((await host.remove(ID))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
  });

  it('says the plugin is removed when its credentials cannot be deleted after the remove', async () => {
    const dir = await pool.profile();
    const files = new FileSecretStore(dir);
    // A store whose delete fails, as a locked keychain's does.
    const secretStore: SecretStore = {
      get: (id) => files.get(id),
      set: (id, values) => files.set(id, values),
      delete: () => errAsync(ioError('Deleting the secrets of', ID, Object.assign(new Error('locked'), { code: 'EACCES' }))),
    };
    const host = await pool.open(dir, { profileKind: 'standard', secretStore });
    const first = await keyedArchive('1.0.0');
    expect(answered(await host.install(first.archive, { canary: false, checksum: digestOf(first.bytes) }))).toBeDefined();
    const error = (await host.remove(ID, { forgetSecrets: true }))._unsafeUnwrapErr();
    expect(error.message).toMatch(new RegExp(`^plugin '${ID}' was removed, but its stored credentials could not be deleted`));
    expect(error.details).toMatchObject({ plugin_id: ID, removed: true, credentials_deleted: false });
    expect(error.hint).toContain(`remove ${ID} --forget-secrets`);
    expect((await host.info(ID))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
  });
});

describe('packageOrigin', () => {
  const lock = (pkg: LockedPlugin['package'], tree = 'a'.repeat(64)): Pick<LockedPlugin, 'package' | 'binding'> => ({
    package: pkg,
    binding: { executable_path: 'bin/x', executable_sha256: 'b'.repeat(64), argv_normalized: [], install_root: '/r', tree: { sha256: tree, files: 1, bytes: 1 } },
  });

  it('is the registry and name across versions, a signer across packages, and otherwise the bytes', () => {
    const npmjs = 'https://registry.npmjs.org/';
    const registry = (spec: string, from = npmjs): string => packageOrigin(lock({ source: `npm:${spec}`, ref: '1', checksum: '', registry: from }));
    expect(registry('@scope/server@1.2.0')).toBe('npm-registry:https://registry.npmjs.org/@scope/server');
    expect(registry('@scope/server@1.3.0')).toBe(registry('@scope/server@1.2.0'));
    expect(registry('server@1.3.0')).not.toBe(registry('@scope/server@1.3.0'));
    // The same name on another registry is another publisher's package.
    expect(registry('@scope/server@1.3.0', 'https://npm.example.com/')).not.toBe(registry('@scope/server@1.3.0'));
    // Installed before the registry was recorded: the origin of that time, which no package recorded with a registry has.
    expect(packageOrigin(lock({ source: 'npm:@scope/server@1.2.0', ref: '1', checksum: '' }))).toBe('npm-registry:@scope/server');
    // A local tarball names the registry package it claims to be, but is only its bytes.
    expect(packageOrigin(lock({ source: 'npm:/tmp/server-1.3.0.tgz', ref: '1', checksum: '' }, 'c'.repeat(64)))).toBe(`tree:${'c'.repeat(64)}`);
    expect(packageOrigin(lock({ source: 'tgz:/tmp/a.tgz', ref: '1', checksum: 'sha256:1' }))).toBe('digest:sha256:1');
    expect(packageOrigin(lock({ source: 'tgz:/tmp/a.tgz', ref: '1', checksum: 'sha256:1', signer: 'sha256:k' }))).toBe('signer:sha256:k');
    expect(packageOrigin(lock({ source: 'directory:/home/me/plugin', ref: '1', checksum: '' }))).toBe('directory:/home/me/plugin');
  });
});
