/**
 * A plugin starts with the sandbox powers its install pinned (manifest and
 * recorded grant), never with more that plugin-catalog.json was edited to
 * hold: real installs, real catalog files, real sandboxed starts.
 */
import { readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packGreeterServer } from '../npm/npmPack.js';
import { HostPool, packaged } from '../support/hostHarness.js';

const SLOW = 120_000;
const pool = new HostPool();
afterEach(() => pool.cleanup());

type Catalog = { plugins: Record<string, { capabilities: { network: boolean; env_allow: string[] } }> };

async function editCatalog(profileDir: string, change: (catalog: Catalog) => void): Promise<void> {
  const file = join(profileDir, 'plugin-catalog.json');
  const catalog = JSON.parse(await readFile(file, 'utf8')) as Catalog;
  change(catalog);
  await writeFile(file, JSON.stringify(catalog, null, 2));
}

describe('capabilities at start', () => {
  it('refuses to start a plugin whose catalog entry was edited to widen it, and starts it as installed', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir);
    (await installer.install(await packaged('probe'), { canary: false }))._unsafeUnwrap();
    await installer.close();

    const host = await pool.open(dir);
    expect((await host.call('plug.host-probe.echo', { message: 'as installed' })).isOk()).toBe(true);
    await host.close();

    await editCatalog(dir, (catalog) => {
      const probe = catalog.plugins['host-probe']!;
      probe.capabilities = { ...probe.capabilities, network: true };
    });
    const edited = await pool.open(dir);
    const refused = (await edited.call('plug.host-probe.echo', { message: 'widened' }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_CAPABILITIES_MISMATCH');
    expect(refused.details).toMatchObject({ plugin_id: 'host-probe', recorded: { network: true }, pinned: { network: false } });
  });

  it('starts an introspected npm server with what its grant added to the host default, and not with more', { timeout: SLOW }, async () => {
    const work = await pool.profile();
    const tarball = await packGreeterServer(work, join(work, 'scripts-ran'));
    const dir = await pool.profile();
    const installer = await pool.open(dir, { profileKind: 'standard' });
    (await installer.install(`npm:${tarball}`, { canary: false, grant: { network: true, env_allow: ['GREETING'] } }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(dir, { profileKind: 'standard' });
    expect((await host.call('plug.greeter-npm.greet', { name: 'granted' }, { maxRisk: 'write' })).isOk()).toBe(true);
    await host.close();
    await editCatalog(dir, (catalog) => {
      const greeter = catalog.plugins['greeter-npm']!;
      greeter.capabilities = { ...greeter.capabilities, env_allow: [...greeter.capabilities.env_allow, 'GITHUB_TOKEN'] };
    });
    const edited = await pool.open(dir, { profileKind: 'standard' });
    expect((await edited.call('plug.greeter-npm.greet', { name: 'widened' }, { maxRisk: 'write' }))._unsafeUnwrapErr().code).toBe('PLUGIN_CAPABILITIES_MISMATCH');
  });

  it('reads a manifest again once it was rewritten in place, even with its size and modification time kept', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir);
    (await installer.install(await packaged('probe'), { canary: false }))._unsafeUnwrap();
    await installer.close();
    const first = await pool.open(dir);
    const manifest = join((await first.info('host-probe'))._unsafeUnwrap().executable.install_root, 'manifest.json');
    // A whole second, which utimes sets to the nanosecond (a Date from stat would drop what lies below the millisecond).
    const second = 1_700_000_000;
    await utimes(manifest, second, second);
    // A start reads the pinned manifest; the next starts in this process reuse what it read while the file is unchanged.
    expect((await first.call('plug.host-probe.echo', { message: 'as installed' })).isOk()).toBe(true);
    await first.close();
    const before = await stat(manifest, { bigint: true });
    const text = await readFile(manifest, 'utf8');
    const widened = text.replace('"network": false', '"network": true ');
    expect(widened).not.toBe(text);
    await writeFile(manifest, widened);
    await utimes(manifest, second, second);
    const after = await stat(manifest, { bigint: true });
    // Same inode, size and modification time: only the change time tells the rewrite.
    expect([after.ino, after.size, after.mtimeNs]).toEqual([before.ino, before.size, before.mtimeNs]);
    const host = await pool.open(dir);
    // The manifest now declares the network, the catalog does not: the capabilities check refuses before the tree check would.
    const refused = (await host.call('plug.host-probe.echo', { message: 'rewritten' }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_CAPABILITIES_MISMATCH');
    expect(refused.details).toMatchObject({ plugin_id: 'host-probe', recorded: { network: false }, pinned: { network: true } });
  });

  it('refuses an env name added to the catalog entry', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir);
    (await installer.install(await packaged('probe'), { canary: false }))._unsafeUnwrap();
    await installer.close();
    await editCatalog(dir, (catalog) => {
      const probe = catalog.plugins['host-probe']!;
      probe.capabilities = { ...probe.capabilities, env_allow: [...probe.capabilities.env_allow, 'AWS_SECRET_ACCESS_KEY'] };
    });
    const host = await pool.open(dir);
    expect((await host.call('plug.host-probe.echo', { message: 'widened' }))._unsafeUnwrapErr().code).toBe('PLUGIN_CAPABILITIES_MISMATCH');
  });
});
