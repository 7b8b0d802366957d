/**
 * An npm package of the same name from another registry is another
 * publisher's package: an upgrade or reinstall that comes from another
 * registry than the version accepted before is asked (the TrustRequest names
 * both registries), and refused PLUGIN_TRUST_DECLINED (`registry_changed`)
 * when no one can be asked, even with no new powers and the same owner
 * string (a manifest's own claim, or `npm:<name>` for an introspected
 * server). The registry is kept across a remove. Two local registries
 * (node:http) serving packages made by npm pack, real installs through npm,
 * real sandboxed introspection starts.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import type { TrustRequest } from '../../src/installer/trust.js';
import { HostPool } from '../support/hostHarness.js';
import { serveNpmPackages, serveNpmVersions } from '../support/localNpmRegistry.js';
import { stdioMcpServerSource } from '../support/stdioMcpServer.js';

const SERVER = stdioMcpServerSource({
  name: 'same-name',
  tools: [{ name: 'look', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }],
  call: "send({ id, result: { content: [{ type: 'text', text: 'ok' }] } });",
});

const pool = new HostPool();
let base: string;
const servers: Server[] = [];
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-registry-trust-'));
});
afterEach(() => pool.cleanup());
afterAll(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((closed) => server.close(closed))));
  await rm(base, { recursive: true, force: true });
});

/**
 * `name`@`version` packed by npm; with `withManifest` it ships one claiming owner io.example.same and plugin id `id`, else
 * the host introspects it (owner `npm:<name>`).
 */
async function pack(name: string, version: string, note: string, withManifest: boolean, id = name): Promise<string> {
  const dir = await mkdtemp(join(base, 'pack-'));
  const pkg = join(dir, name);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), `${SERVER}// ${note}\n`, { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version, type: 'module', bin: { [name]: 'bin/server.mjs' } }));
  if (withManifest) {
    await writeFile(
      join(pkg, 'manifest.json'),
      JSON.stringify({
        manifest_schema_version: 1,
        plugin_id: id,
        name: 'Same name',
        version,
        // The owner is the package's own claim: the other registry's package spells it the same.
        namespace_owner: 'io.example.same',
        shape: 'mcp-plugin',
        executable: 'bin/server.mjs',
        advertised_tools: [{ name: 'look', description: 'Looks', risk_class: 'read' }],
        declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
      }),
    );
  }
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${name}-${version}.tgz`);
}

/** A registry serving `name` at each version given, from its tarball; its URL ends with `/`. */
const registry = (name: string, versions: Readonly<Record<string, string>>): Promise<string> => serveNpmVersions(servers, name, 'bin/server.mjs', versions);

const opened = (dir: string, from: string): Promise<PluginHost> => pool.open(dir, { profileKind: 'standard', activation: 'immediate', npm: { registry: from } });

/** The lock row's version and registry of `name`, and the registry its owner record kept. */
async function locked(dir: string, name: string): Promise<{ version?: string; registry?: string; ownerRegistry?: string }> {
  const lock = JSON.parse(await readFile(join(dir, 'plugins.lock'), 'utf8')) as {
    plugins: Record<string, { version: string; package: { registry?: string; source: string } }>;
    namespace_owners: Record<string, { registry?: string; package_name?: string }>;
  };
  const row = lock.plugins[name];
  const ownerRegistry = lock.namespace_owners[name]?.registry;
  return { ...(row === undefined ? {} : { version: row.version, registry: row.package.registry }), ...(ownerRegistry === undefined ? {} : { ownerRegistry }) };
}

/** An accept callback that records each request and answers `answer`. */
function asking(answer: boolean): { accept: (r: TrustRequest) => boolean; asked: TrustRequest[] } {
  const asked: TrustRequest[] = [];
  return { asked, accept: (r) => (asked.push(r), answer) };
}

describe('an npm package of the same name from another registry', { timeout: 300_000 }, () => {
  it('is refused unasked and asked with an accept callback, with no new powers and the same claimed owner; the same registry is not', async () => {
    const name = 'same-name-manifest';
    const genuine = await registry(name, { '1.0.0': await pack(name, '1.0.0', 'genuine 1.0.0', true), '1.0.1': await pack(name, '1.0.1', 'genuine 1.0.1', true) });
    const other = await registry(name, { '1.0.2': await pack(name, '1.0.2', 'other 1.0.2', true), '1.0.3': await pack(name, '1.0.3', 'other 1.0.3', true) });
    const dir = await pool.profile();
    const host = await opened(dir, genuine);
    expect((await host.install(`npm:${name}@1.0.0`, { canary: false })).isOk()).toBe(true);
    // The same registry, the same owner, no new powers: not asked.
    const same = asking(false);
    expect((await host.install(`npm:${name}@1.0.1`, { canary: false, accept: same.accept })).isOk()).toBe(true);
    expect(same.asked).toEqual([]);

    const moved = await opened(dir, other);
    // No one to ask: refused, naming both registries. On the old code it was installed as a same-owner upgrade.
    const unasked = (await moved.install(`npm:${name}@1.0.2`, { canary: false }))._unsafeUnwrapErr();
    expect(unasked.code).toBe('PLUGIN_TRUST_DECLINED');
    expect(unasked.details).toMatchObject({ reason: 'registry_changed', registry_from: genuine, registry_to: other, plugin_id: name });
    expect(unasked.message).toContain(`${genuine} → ${other}`);
    expect(unasked.hint).toContain('--yes');
    expect(await locked(dir, name)).toMatchObject({ version: '1.0.1', registry: genuine });

    // Asked, and declined: refused with the same reason.
    const declined = asking(false);
    const refused = (await moved.install(`npm:${name}@1.0.2`, { canary: false, accept: declined.accept }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'registry_changed', registry_from: genuine, registry_to: other } });
    expect(declined.asked).toHaveLength(1);
    expect(declined.asked[0]?.registry_change).toEqual({ from: genuine, to: other });
    expect(await locked(dir, name)).toMatchObject({ version: '1.0.1', registry: genuine });

    // Accepted: installed, and the new registry recorded; its next upgrade from there is not asked again.
    const accepted = asking(true);
    expect((await moved.install(`npm:${name}@1.0.2`, { canary: false, accept: accepted.accept })).isOk()).toBe(true);
    expect(accepted.asked.map((r) => r.registry_change)).toEqual([{ from: genuine, to: other }]);
    expect(await locked(dir, name)).toMatchObject({ version: '1.0.2', registry: other });
    const again = asking(false);
    expect((await moved.install(`npm:${name}@1.0.3`, { canary: false, accept: again.accept })).isOk()).toBe(true);
    expect(again.asked).toEqual([]);
  });

  it('an introspected server (owner npm:<name>) from another registry after a remove is refused unasked: the owner record keeps the registry', async () => {
    const name = 'same-name-introspected';
    const genuine = await registry(name, { '1.0.0': await pack(name, '1.0.0', 'genuine', false) });
    const other = await registry(name, { '1.0.0': await pack(name, '1.0.0', 'another publisher', false) });
    const dir = await pool.profile();
    const host = await opened(dir, genuine);
    const first = (await host.install(`npm:${name}@1.0.0`, { canary: false }))._unsafeUnwrap();
    expect(first.plugin.namespace_owner).toBe(`npm:${name}`);
    expect((await host.remove(name)).isOk()).toBe(true);
    expect(await locked(dir, name)).toEqual({ ownerRegistry: genuine });

    const moved = await opened(dir, other);
    const unasked = (await moved.install(`npm:${name}@1.0.0`, { canary: false }))._unsafeUnwrapErr();
    expect(unasked).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'registry_changed', registry_from: genuine, registry_to: other, namespace_owner: `npm:${name}` } });
    expect(await locked(dir, name)).toEqual({ ownerRegistry: genuine });
    const accepted = asking(true);
    expect((await moved.install(`npm:${name}@1.0.0`, { canary: false, accept: accepted.accept })).isOk()).toBe(true);
    expect(accepted.asked.map((r) => r.registry_change)).toEqual([{ from: genuine, to: other }]);
    expect(await locked(dir, name)).toMatchObject({ version: '1.0.0', registry: other });
  });
});

describe('another npm package claiming an installed plugin id and owner (review R9 F3)', { timeout: 300_000 }, () => {
  it('is refused unasked and asked with an accept callback, also after a remove: it would take over the data directory and env grants', async () => {
    const id = 'acme-files';
    const [genuine, helper] = ['acme-files-mcp', 'acme-files-helper'];
    const from = await serveNpmPackages(servers, {
      [genuine]: { bin: 'bin/server.mjs', versions: { '1.0.0': await pack(genuine, '1.0.0', 'genuine', true, id) } },
      [helper]: { bin: 'bin/server.mjs', versions: { '1.0.1': await pack(helper, '1.0.1', 'a helper copying the claim', true, id) } },
    });
    const dir = await pool.profile();
    const host = await opened(dir, from);
    expect((await host.install(`npm:${genuine}@1.0.0`, { canary: false })).isOk()).toBe(true);
    const source = async (): Promise<string | undefined> =>
      (JSON.parse(await readFile(join(dir, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { package: { source: string } }> }).plugins[id]?.package.source;

    // On the old code both went through unasked: the same owner string, the same registry, no new powers.
    const unasked = (await host.install(`npm:${helper}@1.0.1`, { canary: false }))._unsafeUnwrapErr();
    expect(unasked).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'package_changed', package_from: genuine, package_to: helper, plugin_id: id } });
    expect(unasked.hint).toContain('--yes');
    const declined = asking(false);
    expect((await host.install(`npm:${helper}@1.0.1`, { canary: false, accept: declined.accept }))._unsafeUnwrapErr().details).toMatchObject({ reason: 'package_changed' });
    expect(declined.asked.map((r) => r.package_change)).toEqual([{ from: genuine, to: helper }]);
    expect(await source()).toBe(`npm:${genuine}@1.0.0`);

    // The owner record keeps the package name across a remove.
    expect((await host.remove(id)).isOk()).toBe(true);
    expect((JSON.parse(await readFile(join(dir, 'plugins.lock'), 'utf8')) as { namespace_owners: Record<string, { package_name?: string }> }).namespace_owners[id]?.package_name).toBe(genuine);
    const afterRemove = (await host.install(`npm:${helper}@1.0.1`, { canary: false }))._unsafeUnwrapErr();
    expect(afterRemove.details).toMatchObject({ reason: 'package_changed', package_from: genuine, package_to: helper });

    const accepted = asking(true);
    expect((await host.install(`npm:${helper}@1.0.1`, { canary: false, accept: accepted.accept })).isOk()).toBe(true);
    expect(accepted.asked.map((r) => r.package_change)).toEqual([{ from: genuine, to: helper }]);
    expect(await source()).toBe(`npm:${helper}@1.0.1`);
  });
});
