/**
 * Credentials stored for an npm package are bound to the registry it came
 * from as well as its name: a host whose npm registry was changed installs
 * another publisher's package of the same name, and that package gets none of
 * them (it needs setup), while an upgrade from the same registry keeps them.
 * Values stored under the origin of before (`npm-registry:<name>`, no
 * registry) stay with a package installed then, and go to no package recorded
 * with a registry. Two local registries (node:http) serving packages made by
 * npm pack, real installs through npm, real sandboxed plugin processes.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LockedPlugin } from '../../src/catalog/catalogTypes.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { CREDENTIALS_ORIGIN_KEY, CredentialSource } from '../../src/host/credentials.js';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { FileSecretStore } from '../../src/secrets/SecretStore.js';
import { HostPool, textOf } from '../support/hostHarness.js';
import { KEYED_HASH_SERVER, keyedManifest } from '../support/keyedPackage.js';
import { serveNpmVersions } from '../support/localNpmRegistry.js';

const NAME = 'keyed-server';
const OP = `plug.${NAME}.env`;
const STORED = 'pplx-stored-71e0c3aa';
const sha = (value: string): string => createHash('sha256').update(value).digest('hex');


const pool = new HostPool();
let base: string;
const servers: Server[] = [];
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-registry-origin-'));
});
afterEach(() => pool.cleanup());
afterAll(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((closed) => server.close(closed))));
  await rm(base, { recursive: true, force: true });
});

/** {@link NAME}@`version` packed by npm, shipping a manifest that declares PERPLEXITY_API_KEY; `note` is who published it. */
async function packKeyed(version: string, note: string): Promise<string> {
  const dir = await mkdtemp(join(base, 'pack-'));
  const pkg = join(dir, NAME);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'keyed.mjs'), `${KEYED_HASH_SERVER}// ${note}\n`, { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: NAME, version, type: 'module', bin: { [NAME]: 'bin/keyed.mjs' } }));
  // The owner is the package's own claim: the other registry's package spells it the same.
  const identity = { plugin_id: NAME, name: 'Keyed server', version, namespace_owner: 'io.example.keyed' };
  await writeFile(join(pkg, 'manifest.json'), JSON.stringify(keyedManifest({ ...identity, tool: { name: 'env', description: 'Reports the key it was given' } })));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${NAME}-${version}.tgz`);
}

/** A registry serving {@link NAME} at each version given, from its tarball; its URL ends with `/`. */
const registry = (versions: Readonly<Record<string, string>>): Promise<string> => serveNpmVersions(servers, NAME, 'bin/keyed.mjs', versions);

/** The SHA-256 of the key the installed plugin is given. */
async function keySeen(host: PluginHost): Promise<string | null> {
  const called = await host.call(OP, {});
  if (called.isErr()) throw called.error;
  return (JSON.parse(textOf(called.value)) as { key: string | null }).key;
}

const opened = (dir: string, from: string, secretStore?: FileSecretStore): Promise<PluginHost> =>
  pool.open(dir, { profileKind: 'standard', activation: 'immediate', npm: { registry: from }, ...(secretStore === undefined ? {} : { secretStore }) });

describe('credentials of an npm package and the registry it came from', { timeout: 240_000 }, () => {
  it('a same-name package from another registry gets none of them; an upgrade from the same registry keeps them', async () => {
    const genuine = await registry({ '1.0.0': await packKeyed('1.0.0', 'the genuine publisher, 1.0.0'), '1.0.1': await packKeyed('1.0.1', 'the genuine publisher, 1.0.1') });
    const other = await registry({ '1.0.2': await packKeyed('1.0.2', 'another publisher of the same name') });

    const dir = await pool.profile();
    const secretStore = new FileSecretStore(dir);
    const host = await opened(dir, genuine, secretStore);
    expect((await host.install(`npm:${NAME}@1.0.0`, { canary: false }))._unsafeUnwrap().plugin.status).toBe('needs_configuration');
    expect((await host.setup(NAME, { 'perplexity-key': STORED }))._unsafeUnwrap().status).toBe('passed');
    expect((await secretStore.get(NAME))._unsafeUnwrap()[CREDENTIALS_ORIGIN_KEY]).toBe(`npm-registry:${genuine}${NAME}`);
    // An upgrade from the registry the values were stored for keeps them.
    expect((await host.install(`npm:${NAME}@1.0.1`, { canary: false }))._unsafeUnwrap().plugin.status).toBe('active');
    expect(await keySeen(host)).toBe(sha(STORED));

    // The same profile with its npm registry changed: the other publisher's package of the same name. On the old code
    // it was 'active' and its tool was given the stored key. The registry change is asked (npmRegistryTrust.test.ts), and accepted here.
    const moved = await opened(dir, other, secretStore);
    expect((await moved.install(`npm:${NAME}@1.0.2`, { canary: false, accept: () => true }))._unsafeUnwrap().plugin.status).toBe('needs_configuration');
    expect((await moved.call(OP, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_NEEDS_CONFIGURATION');
    const canary = (await moved.canary(NAME, { live: true }))._unsafeUnwrap();
    expect(canary).toMatchObject({ status: 'skipped', error: { code: 'PLUGIN_NEEDS_CONFIGURATION', details: { stored_for_another_package: true } } });
    // The values are still the genuine package's, not rebound to the one that replaced it.
    expect((await secretStore.get(NAME))._unsafeUnwrap()).toMatchObject({ PERPLEXITY_API_KEY: STORED, [CREDENTIALS_ORIGIN_KEY]: `npm-registry:${genuine}${NAME}` });
  });

  it('values stored under the origin of before (no registry) reach a package installed then, and no package recorded with a registry', async () => {
    const dir = await mkdtemp(join(base, 'store-'));
    const store = new FileSecretStore(dir);
    const credentials = new CredentialSource(store, undefined);
    // As setup stored them before registries were recorded.
    expect((await store.set(NAME, { PERPLEXITY_API_KEY: STORED, [CREDENTIALS_ORIGIN_KEY]: `npm-registry:${NAME}` })).isOk()).toBe(true);
    const holder = (registryUrl?: string): { plugin_id: string; lock: Pick<LockedPlugin, 'package' | 'binding'> } => ({
      plugin_id: NAME,
      lock: {
        package: { source: `npm:${NAME}@1.0.0`, ref: '1.0.0', checksum: '', ...(registryUrl === undefined ? {} : { registry: registryUrl }) },
        binding: { executable_path: 'bin/keyed.mjs', executable_sha256: 'b'.repeat(64), argv_normalized: [], install_root: '/r', tree: { sha256: 'a'.repeat(64), files: 1, bytes: 1 } },
      },
    });
    // The lock row of a package installed then records no registry either.
    expect((await credentials.values(holder(), ['PERPLEXITY_API_KEY']))._unsafeUnwrap()).toEqual({ PERPLEXITY_API_KEY: STORED });
    for (const from of ['https://registry.npmjs.org/', 'http://127.0.0.1:9/']) {
      expect((await credentials.values(holder(from), ['PERPLEXITY_API_KEY']))._unsafeUnwrap()).toEqual({});
      expect(await credentials.storedForAnother(holder(from))).toBe(true);
    }
  });
});
