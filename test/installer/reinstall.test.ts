/**
 * Installing a plugin id that is already installed: the same package again
 * changes nothing; other bytes under the same version are refused unless
 * the caller asks to replace them; a lower version is refused unless the
 * caller allows the downgrade; an upgrade of a signed package must be signed
 * by the same key unless the caller allows the change. The same rules hold
 * under the profile lock.
 */
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { okAsync } from 'neverthrow';
import { afterEach, describe, expect, it } from 'vitest';
import { compareVersions } from '../../src/manifest/versionOrder.js';
import { digestOf, ed25519Keys, signPackage } from './craftArchives.js';
import { editManifest, installed, refusedWith, testProfile, tgzOfDirectory, unwrap, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;

/** The install-toml fixture (plugin `notes`, one tool `search`) at `version`, its tool rated `risk` and named `toolName` on the server side. */
async function notesToml(version: string, risk: string, toolName = 'search'): Promise<string> {
  const pkg = await p.copyFixture('install-toml', `notes-${version}`);
  const file = join(pkg, 'plugin.toml');
  const text = (await readFile(file, 'utf8'))
    .replace('version = "2.1.0"', `version = "${version}"`)
    .replace('risk_class = "read"', `risk_class = "${risk}"`)
    .replace('tool_name = "search"', `tool_name = "${toolName}"`)
    .replace('tool = "search"', `tool = "${toolName}"`);
  expect(text).toContain(`tool_name = "${toolName}"`);
  await writeFile(file, text);
  return pkg;
}
afterEach(async () => {
  await p.dispose();
});

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);
const greeter = async (as: string, edit: (m: Record<string, unknown>) => void = () => undefined): Promise<string> => {
  const pkg = await p.copyFixture('install-node', as);
  await editManifest(pkg, edit);
  return pkg;
};

describe('same version', () => {
  it('installs the same directory again as an unchanged install: same root, same rows, nothing written', async () => {
    p = await testProfile('dev');
    const first = unwrap(await p.installer.install(await greeter('greeter')));
    const before = unwrap(await p.store.snapshot());
    const again = unwrap(await p.installer.install(await greeter('greeter-copy')));
    expect(again.unchanged).toBe(true);
    expect(again.lock).toEqual(first.lock);
    expect(await exists(first.lock.binding.install_root)).toBe(true);
    const after = unwrap(await p.store.snapshot());
    expect(after.install_generation).toBe(before.install_generation);
    expect(await readdir(join(p.layout.pluginsDir, 'greeter'))).toHaveLength(1);
    expect((await p.census()).staging).toEqual([]);
  });

  it('refuses other bytes under the installed version with PLUGIN_ALREADY_INSTALLED and keeps the installed code', async () => {
    p = await testProfile('dev');
    const first = unwrap(await p.installer.install(await greeter('greeter')));
    const changed = await greeter('greeter-changed');
    await writeFile(join(changed, 'bin', 'greeter.mjs'), '#!/usr/bin/env node\nprocess.exit(0);\n', { mode: 0o755 });
    const error = refusedWith(await p.installer.install(changed), 'PLUGIN_ALREADY_INSTALLED');
    expect(error.details).toMatchObject({ plugin_id: 'greeter', version: '1.0.0', installed_version: '1.0.0' });
    expect(await installed(p, 'greeter')).toEqual(first);
    expect(await readdir(join(p.layout.pluginsDir, 'greeter'))).toHaveLength(1);
    expect((await p.census()).staging).toEqual([]);
  });

  it('replaces other bytes under the installed version when asked to (replace: true)', async () => {
    p = await testProfile('dev');
    const first = unwrap(await p.installer.install(await greeter('greeter')));
    const replaced = unwrap(await p.installer.install(await greeter('greeter-b', (m) => (m.description = 'Changed')), { replace: true }));
    expect(replaced.unchanged).toBeUndefined();
    expect(replaced.lock.binding.install_root).not.toBe(first.lock.binding.install_root);
    expect(await exists(first.lock.binding.install_root)).toBe(false);
  });

  it('tells archives apart by their digest: the same archive is unchanged, another archive of the same version is refused', async () => {
    p = await testProfile('standard');
    const pkg = await greeter('greeter');
    const bytes = await tgzOfDirectory(pkg, join(p.dir, 'greeter-1.tgz'));
    const archive = join(p.dir, 'greeter-1.tgz');
    const first = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes) }));
    const again = unwrap(await p.installer.install(archive, { checksum: digestOf(bytes) }));
    expect(again.unchanged).toBe(true);
    expect(again.lock).toEqual(first.lock);
    await editManifest(pkg, (m) => (m.description = 'Repacked'));
    const otherBytes = await tgzOfDirectory(pkg, join(p.dir, 'greeter-1b.tgz'));
    const error = refusedWith(await p.installer.install(join(p.dir, 'greeter-1b.tgz'), { checksum: digestOf(otherBytes) }), 'PLUGIN_ALREADY_INSTALLED');
    expect(error.details).toMatchObject({ installed_checksum: digestOf(bytes), checksum: digestOf(otherBytes) });
    expect(await installed(p, 'greeter')).toEqual(first);
  });

  it('refuses under the profile lock when another process installed the same version meanwhile', async () => {
    p = await testProfile('dev');
    const store = p.store;
    const stale = unwrap(await store.snapshot());
    // Another installer on the same profile gets there first.
    const rival = p.installerWith({}, await p.openStore());
    unwrap(await rival.install(await greeter('greeter')));
    const current = store.snapshot.bind(store);
    let reads = 0;
    Object.defineProperty(store, 'snapshot', { value: () => (reads++ < 2 ? okAsync(stale) : current()) });
    refusedWith(await p.installer.install(await greeter('greeter-mine', (m) => (m.description = 'Mine'))), 'PLUGIN_ALREADY_INSTALLED');
  });
});

describe('downgrade', () => {
  it('refuses a lower version with PLUGIN_DOWNGRADE_REFUSED unless allowDowngrade is set', async () => {
    p = await testProfile('dev');
    const v2 = unwrap(await p.installer.install(await greeter('greeter-v2', (m) => (m.version = '2.0.0'))));
    const v1 = await greeter('greeter-v1');
    const error = refusedWith(await p.installer.install(v1), 'PLUGIN_DOWNGRADE_REFUSED');
    expect(error.details).toMatchObject({ plugin_id: 'greeter', version: '1.0.0', installed_version: '2.0.0' });
    expect(await installed(p, 'greeter')).toEqual(v2);
    const down = unwrap(await p.installer.install(v1, { allowDowngrade: true }));
    expect(down.lock.version).toBe('1.0.0');
    expect(await exists(v2.lock.binding.install_root)).toBe(false);
  });

  it('refuses a lower version that is not semver but dotted numbers (CalVer, two parts), against either kind', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await greeter('greeter-cal-2', (m) => (m.version = '2024.10'))));
    const older = refusedWith(await p.installer.install(await greeter('greeter-cal-1', (m) => (m.version = '2024.9'))), 'PLUGIN_DOWNGRADE_REFUSED');
    expect(older.details).toMatchObject({ version: '2024.9', installed_version: '2024.10' });
    unwrap(await p.installer.install(await greeter('greeter-semver', (m) => (m.version = '2025.1.0'))));
    refusedWith(await p.installer.install(await greeter('greeter-two-parts', (m) => (m.version = '2024.12'))), 'PLUGIN_DOWNGRADE_REFUSED');
  });

  it('orders versions by semver precedence, prereleases below releases, dotted numbers by their numbers, and leaves other versions unordered', () => {
    expect(compareVersions('1.10.0', '1.9.9')).toBe(1);
    expect(compareVersions('1.0.0-rc.1', '1.0.0')).toBe(-1);
    expect(compareVersions('1.0.0-alpha.2', '1.0.0-alpha.10')).toBe(-1);
    expect(compareVersions('1.0.0-alpha', '1.0.0-alpha.1')).toBe(-1);
    expect(compareVersions('1.0.0-beta', '1.0.0-1')).toBe(1);
    expect(compareVersions('1.0.0+build.5', '1.0.0')).toBe(0);
    expect(compareVersions('2024.1', '2023.9')).toBe(1);
    expect(compareVersions('2024.10', '2024.9')).toBe(1);
    expect(compareVersions('1.0', '1.0.0')).toBe(0);
    expect(compareVersions('1.5', '2.0.0')).toBe(-1);
    expect(compareVersions('1.0', '1.0.0-rc.1')).toBe(1);
    expect(compareVersions('2024.1', '2024.1')).toBe(0);
    expect(compareVersions('beta', 'alpha')).toBeUndefined();
    expect(compareVersions('r5', 'r5')).toBe(0);
    expect(compareVersions('1.0.x', '1.0.0')).toBeUndefined();
  });
});

describe('signer', () => {
  const publisher = ed25519Keys();
  const otherTrusted = ed25519Keys();
  const trustedKeys = [publisher.pem, otherTrusted.pem];

  /** Packs the greeter at `version` into an archive; returns its path, checksum and a signature by `key`. */
  const packed = async (version: string, key = publisher): Promise<{ archive: string; checksum: string; signature: string }> => {
    const pkg = await greeter(`greeter-${version}-${Math.random().toString(36).slice(2)}`, (m) => (m.version = version));
    const archive = join(p.dir, `greeter-${version}-${Math.random().toString(36).slice(2)}.tgz`);
    const bytes = await tgzOfDirectory(pkg, archive);
    return { archive, checksum: digestOf(bytes), signature: signPackage(bytes, key.privateKey) };
  };

  it('records the signer and refuses an upgrade signed by another trusted key, or not signed, unless allowSignerChange', async () => {
    p = await testProfile('standard', { trustedKeys });
    const v1 = await packed('1.0.0');
    const first = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: v1.signature }));
    expect(first.lock.package.signer).toMatch(/^sha256:[0-9a-f]{64}$/);

    const byOther = await packed('2.0.0', otherTrusted);
    const error = refusedWith(await p.installer.install(byOther.archive, { checksum: byOther.checksum, signature: byOther.signature }), 'PLUGIN_SIGNATURE_INVALID');
    expect(error.details).toMatchObject({ reason: 'signer_changed', plugin_id: 'greeter', installed_signer: first.lock.package.signer });
    expect(error.hint).toContain('allowSignerChange');
    const unsigned = await packed('2.0.1');
    const unsignedError = refusedWith(await p.installer.install(unsigned.archive, { checksum: unsigned.checksum }), 'PLUGIN_SIGNATURE_INVALID');
    expect(unsignedError.details).toMatchObject({ reason: 'signer_changed', signer: null });
    expect(await installed(p, 'greeter')).toEqual(first);

    const changed = unwrap(await p.installer.install(byOther.archive, { checksum: byOther.checksum, signature: byOther.signature, allowSignerChange: true }));
    expect(changed.lock.version).toBe('2.0.0');
    expect(changed.lock.package.signer).not.toBe(first.lock.package.signer);
  });

  it('keeps the signer through a repair from the same bytes given unsigned, so an unsigned upgrade is still refused after it', async () => {
    p = await testProfile('standard', { trustedKeys });
    const v1 = await packed('1.0.0');
    const first = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: v1.signature }));
    // A changed install root makes the same bytes a repair, not an unchanged install.
    await writeFile(join(first.lock.binding.install_root, 'mcp-plugin.json'), '{}\n');
    const repaired = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum }));
    expect(repaired.lock.binding.install_root).not.toBe(first.lock.binding.install_root);
    expect(repaired.lock.package.signer).toBe(first.lock.package.signer);
    const unsigned = await packed('2.0.0');
    const error = refusedWith(await p.installer.install(unsigned.archive, { checksum: unsigned.checksum }), 'PLUGIN_SIGNATURE_INVALID');
    expect(error.details).toMatchObject({ reason: 'signer_changed', installed_signer: first.lock.package.signer, signer: null });
  });

  it('refuses a repair from the same bytes signed by another trusted key unless allowSignerChange', async () => {
    p = await testProfile('standard', { trustedKeys });
    const v1 = await packed('1.0.0');
    const first = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: v1.signature }));
    await writeFile(join(first.lock.binding.install_root, 'mcp-plugin.json'), '{}\n');
    const bytes = await readFile(v1.archive);
    const byOther = signPackage(bytes, otherTrusted.privateKey);
    const error = refusedWith(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: byOther }), 'PLUGIN_SIGNATURE_INVALID');
    expect(error.details).toMatchObject({ reason: 'signer_changed', installed_signer: first.lock.package.signer });
    const changed = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: byOther, allowSignerChange: true }));
    expect(changed.lock.package.signer).not.toBe(first.lock.package.signer);
  });

  it('remembers the signer across remove: a reinstall must be signed by the same key unless allowSignerChange', async () => {
    p = await testProfile('standard', { trustedKeys });
    const v1 = await packed('1.0.0');
    const first = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: v1.signature }));
    unwrap(await p.installer.remove('greeter'));
    // The data directory and stored credentials outlive the remove: a package from another hand must not inherit them.
    const unsigned = await packed('1.0.1');
    const error = refusedWith(await p.installer.install(unsigned.archive, { checksum: unsigned.checksum }), 'PLUGIN_SIGNATURE_INVALID');
    expect(error.details).toMatchObject({ reason: 'signer_changed', plugin_id: 'greeter', installed_signer: first.lock.package.signer, signer: null });
    const byOther = await packed('1.0.2', otherTrusted);
    refusedWith(await p.installer.install(byOther.archive, { checksum: byOther.checksum, signature: byOther.signature }), 'PLUGIN_SIGNATURE_INVALID');
    expect(await installed(p, 'greeter')).toBeUndefined();
    const again = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: v1.signature }));
    expect(again.lock.package.signer).toBe(first.lock.package.signer);
    unwrap(await p.installer.remove('greeter'));
    const changed = unwrap(await p.installer.install(byOther.archive, { checksum: byOther.checksum, signature: byOther.signature, allowSignerChange: true }));
    expect(changed.lock.package.signer).not.toBe(first.lock.package.signer);
  });

  it('upgrades a package signed by the same key, and leaves unsigned plugins free to upgrade unsigned', async () => {
    p = await testProfile('standard', { trustedKeys });
    const v1 = await packed('1.0.0');
    const first = unwrap(await p.installer.install(v1.archive, { checksum: v1.checksum, signature: v1.signature }));
    const v2 = await packed('2.0.0');
    const second = unwrap(await p.installer.install(v2.archive, { checksum: v2.checksum, signature: v2.signature }));
    expect(second.lock.package.signer).toBe(first.lock.package.signer);

    await p.dispose();
    p = await testProfile('standard', { trustedKeys });
    const plain1 = await packed('1.0.0');
    const plain = unwrap(await p.installer.install(plain1.archive, { checksum: plain1.checksum }));
    expect(plain.lock.package.signer).toBeUndefined();
    const plain2 = await packed('2.0.0');
    expect(unwrap(await p.installer.install(plain2.archive, { checksum: plain2.checksum })).lock.version).toBe('2.0.0');
  });
});

describe('trust on upgrade', () => {
  const capabilities = (m: Record<string, unknown>): Record<string, unknown> => m.declared_capabilities as Record<string, unknown>;

  it('asks again when an upgrade by the same owner asks for more powers, and not when it asks for the same or fewer', async () => {
    p = await testProfile('dev');
    const asked: string[] = [];
    const accept = (request: { version: string }): boolean => (asked.push(request.version), true);
    unwrap(await p.installer.install(await greeter('greeter'), { accept }));
    expect(asked).toEqual(['1.0.0']);
    unwrap(await p.installer.install(await greeter('greeter-same', (m) => (m.version = '1.1.0')), { accept }));
    const fewer = await greeter('greeter-fewer', (m) => {
      m.version = '1.2.0';
      capabilities(m).env_allow = [];
    });
    unwrap(await p.installer.install(fewer, { accept }));
    expect(asked).toEqual(['1.0.0']);
    const wider: [string, (m: Record<string, unknown>) => void][] = [
      ['2.0.0', (m) => (capabilities(m).network = true)],
      ['2.1.0', (m) => (capabilities(m).env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN'])],
      ['2.2.0', (m) => (capabilities(m).egress = ['api.example.com:443'])],
    ];
    for (const [version, widen] of wider) {
      const pkg = await greeter(`greeter-${version}`, (m) => {
        m.version = version;
        widen(m);
      });
      const declined = refusedWith(await p.installer.install(pkg, { accept: () => false }), 'PLUGIN_TRUST_DECLINED');
      expect(declined.details).toMatchObject({ plugin_id: 'greeter' });
    }
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.2.0');
  });
  it('after a remove, lets the same owner reinstall with the powers it had unasked (seed 000 4.2), and asks again for more', async () => {
    p = await testProfile('dev');
    const asked: string[] = [];
    const accept = (request: { version: string }): boolean => (asked.push(request.version), true);
    unwrap(await p.installer.install(await greeter('greeter'), { accept }));
    unwrap(await p.installer.remove('greeter'));
    unwrap(await p.installer.install(await greeter('greeter-again', (m) => (m.version = '1.1.0')), { accept }));
    expect(asked).toEqual(['1.0.0']);
    unwrap(await p.installer.remove('greeter'));
    // Anyone can write the owner string: a package claiming it after the remove does not get the network unasked.
    const networked = await greeter('greeter-networked', (m) => {
      m.version = '2.0.0';
      capabilities(m).network = true;
    });
    refusedWith(await p.installer.install(networked, { accept: () => false }), 'PLUGIN_TRUST_DECLINED');
    expect(await installed(p, 'greeter')).toBeUndefined();
    unwrap(await p.installer.install(networked, { accept }));
    expect(asked).toEqual(['1.0.0', '2.0.0']);
  });
});

describe('trust on upgrade without an accept callback: powers widened', () => {
  const capabilities = (m: Record<string, unknown>): Record<string, unknown> => m.declared_capabilities as Record<string, unknown>;
  /** The greeter at `version`, its declared capabilities edited by `edit` (same owner, same tools as the fixture). */
  const declaring = (version: string, edit: (c: Record<string, unknown>) => void = () => undefined, owner?: string): Promise<string> =>
    greeter(`greeter-${version}-${Math.random().toString(36).slice(2)}`, (m) => {
      m.version = version;
      if (owner !== undefined) m.namespace_owner = owner;
      edit(capabilities(m));
    });

  it('refuses an upgrade that gives the plugin a new power, naming each in details, message and hint; installs it with accept, and a first install unasked', async () => {
    p = await testProfile('dev');
    // A first install declaring the network needs no one: the caller's install is the acceptance.
    unwrap(await p.installer.install(await declaring('1.0.0', (c) => (c.client_requests = ['roots']))));
    const cases: [string, (c: Record<string, unknown>) => void, unknown[], string][] = [
      ['2.0.0', (c) => (c.network = true), [{ field: 'network', value: true }], 'network'],
      ['2.1.0', (c) => (c.env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN']), [{ field: 'env_allow', value: 'GREETER_TOKEN' }], 'env_allow GREETER_TOKEN'],
      ['2.2.0', (c) => (c.egress = ['api.example.com:443']), [{ field: 'egress', value: 'api.example.com:443' }], 'egress api.example.com:443'],
      ['2.3.0', (c) => (c.client_requests = ['roots', 'sampling']), [{ field: 'client_requests', value: 'sampling' }], 'client_requests sampling'],
    ];
    for (const [version, widen, added, text] of cases) {
      const refused = refusedWith(await p.installer.install(await declaring(version, widen)), 'PLUGIN_TRUST_DECLINED');
      expect(refused.details, version).toEqual({ plugin_id: 'greeter', namespace_owner: 'io.example.greeter', reason: 'capabilities_widened', added_capabilities: added });
      expect(refused.message, version).toContain(`gives it powers the version accepted before did not have (${text})`);
      expect(refused.hint, version).toContain(`Review ${text}, then install again with an accept callback`);
      expect(refused.hint, version).toContain('--yes');
    }
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.0.0');
    // Fewer powers, or the same, need no one either.
    unwrap(await p.installer.install(await declaring('1.1.0', (c) => (c.env_allow = []))));
    // The environment name dropped by 1.1.0 is new again against it.
    refusedWith(await p.installer.install(await declaring('1.2.0')), 'PLUGIN_TRUST_DECLINED');
    // Several at once are all named; with an accept callback they are asked about, and accepted installed.
    const wide = await declaring('3.0.0', (c) => {
      c.network = true;
      c.env_allow = ['GREETER_TOKEN'];
    });
    const both = refusedWith(await p.installer.install(wide), 'PLUGIN_TRUST_DECLINED');
    expect(both.details).toMatchObject({ added_capabilities: [{ field: 'network', value: true }, { field: 'env_allow', value: 'GREETER_TOKEN' }] });
    const asked: unknown[] = [];
    unwrap(await p.installer.install(wide, { accept: (request) => (asked.push(request.added_capabilities), true) }));
    expect(asked).toEqual([[{ field: 'network', value: true }, { field: 'env_allow', value: 'GREETER_TOKEN' }]]);
    expect((await installed(p, 'greeter'))?.lock.version).toBe('3.0.0');
  });

  it('counts a new credential name as a power: refused unasked, named to an accept callback; after a remove too (review R7 N2)', async () => {
    p = await testProfile('dev');
    /** The greeter at `version` needing the credentials `names` (a host with credentialsFromEnv fills them from its env). */
    const needing = (version: string, names: readonly string[]): Promise<string> =>
      greeter(`greeter-${version}-${Math.random().toString(36).slice(2)}`, (m) => {
        m.version = version;
        m.requirements = {
          needs_user_creds: names,
          credential_descriptors: names.map((env) => ({ alias: env.toLowerCase(), env, kind: 'api_key', display_name: env, setup_hint: `Store ${env}.` })),
        };
      });
    unwrap(await p.installer.install(await needing('1.0.0', ['GREETER_KEY'])));
    const more = await needing('2.0.0', ['GREETER_KEY', 'GREETER_TOKEN']);
    const refused = refusedWith(await p.installer.install(more), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toEqual({
      plugin_id: 'greeter',
      namespace_owner: 'io.example.greeter',
      reason: 'capabilities_widened',
      added_capabilities: [{ field: 'needs_user_creds', value: 'GREETER_TOKEN' }],
    });
    expect(refused.message).toContain('did not have (needs_user_creds GREETER_TOKEN)');
    // No grant names a credential: the hint does not send the caller to one.
    expect(refused.hint).not.toContain('--grant');
    // A grant of every sandbox power is no consent to the credential.
    refusedWith(await p.installer.install(more, { grant: { network: false, env_allow: ['GREETER_LOCALE'] } }), 'PLUGIN_TRUST_DECLINED');
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.0.0');
    const asked: unknown[] = [];
    unwrap(await p.installer.install(more, { accept: (request) => (asked.push(request.added_capabilities), true) }));
    expect(asked).toEqual([[{ field: 'needs_user_creds', value: 'GREETER_TOKEN' }]]);
    expect((await installed(p, 'greeter'))?.lock.version).toBe('2.0.0');
    // The same names, or fewer, install unasked.
    unwrap(await p.installer.install(await needing('2.1.0', ['GREETER_TOKEN'])));
    // After a remove the owner record keeps the names: a reinstall adding one is refused, the same names install.
    unwrap(await p.installer.remove('greeter'));
    expect(unwrap(await p.store.snapshot()).contents.namespace_owners.greeter?.accepted_credentials).toEqual(['GREETER_TOKEN']);
    const again = refusedWith(await p.installer.install(await needing('3.0.0', ['GREETER_TOKEN', 'GREETER_KEY'])), 'PLUGIN_TRUST_DECLINED');
    expect(again.details).toMatchObject({ reason: 'capabilities_widened', added_capabilities: [{ field: 'needs_user_creds', value: 'GREETER_KEY' }] });
    unwrap(await p.installer.install(await needing('3.0.0', ['GREETER_TOKEN'])));
    expect((await installed(p, 'greeter'))?.lock.version).toBe('3.0.0');
  });

  it('names the new powers to an accept callback and in a declined install\'s details', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await declaring('1.0.0')));
    const asked: unknown[] = [];
    const declined = refusedWith(
      await p.installer.install(await declaring('2.0.0', (c) => (c.network = true)), { accept: (request) => (asked.push(request.added_capabilities), false) }),
      'PLUGIN_TRUST_DECLINED',
    );
    expect(asked).toEqual([[{ field: 'network', value: true }]]);
    expect(declined.details).toMatchObject({ reason: 'capabilities_widened', added_capabilities: [{ field: 'network', value: true }] });
    expect(declined.details).not.toHaveProperty('risk_changes');
  });

  it('after a remove, refuses a reinstall with powers the removed plugin did not have, and reinstalls the same powers', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await declaring('1.0.0')));
    unwrap(await p.installer.remove('greeter'));
    // Anyone can claim the owner string: a package doing so after the remove does not get the network because no one was there to ask.
    const refused = refusedWith(await p.installer.install(await declaring('2.0.0', (c) => (c.network = true))), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toMatchObject({ reason: 'capabilities_widened', added_capabilities: [{ field: 'network', value: true }] });
    expect(await installed(p, 'greeter')).toBeUndefined();
    unwrap(await p.installer.install(await declaring('1.1.0')));
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.1.0');
  });

  it('does not refuse a power the caller grants on the install itself, only what the package declares beyond it', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await declaring('1.0.0')));
    // The caller asking for the network is its consent to it.
    const networked = await declaring('2.0.0', (c) => {
      c.network = true;
      c.env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN'];
    });
    const partly = refusedWith(await p.installer.install(networked, { grant: { network: true } }), 'PLUGIN_TRUST_DECLINED');
    expect(partly.details).toMatchObject({ reason: 'capabilities_widened', added_capabilities: [{ field: 'env_allow', value: 'GREETER_TOKEN' }] });
    expect(partly.hint).toContain('--grant-env');
    unwrap(await p.installer.install(networked, { grant: { network: true, env_allow: ['GREETER_LOCALE', 'GREETER_TOKEN'] } }));
    expect((await installed(p, 'greeter'))?.lock.version).toBe('2.0.0');
    // Narrowed by a grant, the declared network is not what was accepted: an upgrade without that grant gets it back, refused.
    unwrap(await p.installer.install(await declaring('2.1.0', (c) => (c.network = true)), { grant: { network: false } }));
    expect(unwrap(await p.store.snapshot()).contents.descriptors.greeter?.capabilities?.network).toBe(false);
    const regained = refusedWith(await p.installer.install(await declaring('2.2.0', (c) => (c.network = true))), 'PLUGIN_TRUST_DECLINED');
    expect(regained.details).toMatchObject({ added_capabilities: [{ field: 'network', value: true }] });
    unwrap(await p.installer.install(await declaring('2.2.0', (c) => (c.network = true)), { grant: { network: false } }));
    expect((await installed(p, 'greeter'))?.lock.version).toBe('2.2.0');
  });

  it('refuses an upgrade that both widens powers and lowers a risk class once, reason capabilities_widened, naming both', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await greeter('greeter-1', (m) => (m.advertised_tools = [{ name: 'greet', description: 'Greets', risk_class: 'destructive' }]))));
    const both = await greeter('greeter-2', (m) => {
      m.version = '2.0.0';
      m.advertised_tools = [{ name: 'greet', description: 'Greets', risk_class: 'read' }];
      capabilities(m).network = true;
    });
    const refused = refusedWith(await p.installer.install(both), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toMatchObject({
      reason: 'capabilities_widened',
      added_capabilities: [{ field: 'network', value: true }],
      risk_changes: [{ name: 'greet', op_id: 'plug.greeter.greet', from: { risk_class: 'destructive' }, to: { risk_class: 'read' } }],
    });
    expect(refused.message).toContain('(network) and makes tools easier to call than the version accepted before (greet destructive→read)');
    expect(refused.hint).toContain('Review network; greet destructive→read');
    // The network granted on the install is the caller's own; the lowered tool still needs someone: reason risk_lowered.
    const lowered = refusedWith(await p.installer.install(both, { grant: { network: true } }), 'PLUGIN_TRUST_DECLINED');
    expect(lowered.details).toMatchObject({ reason: 'risk_lowered' });
    expect(lowered.details).not.toHaveProperty('added_capabilities');
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.0.0');
  });

  it('holds an owner change under the dev override to the same rule: the same powers install, a new one is refused', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await declaring('1.0.0')));
    const other = 'io.example.other';
    unwrap(await p.installer.install(await declaring('1.1.0', () => undefined, other), { devAllowNamespaceConflict: true }));
    const refused = refusedWith(await p.installer.install(await declaring('2.0.0', (c) => (c.network = true), other), { devAllowNamespaceConflict: true }), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toMatchObject({ namespace_owner: other, reason: 'capabilities_widened', added_capabilities: [{ field: 'network', value: true }] });
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.1.0');
  });
});

describe('trust on upgrade: tools made easier to call (review R3 F4)', () => {
  type Tool = { name: string; risk_class: string; confirmation_policy?: string };
  /** The greeter at `version` offering `tools` (same owner, same powers as the fixture). */
  const withTools = (version: string, tools: Tool[]): Promise<string> =>
    greeter(`greeter-${version}-${Math.random().toString(36).slice(2)}`, (m) => {
      m.version = version;
      m.advertised_tools = tools.map((t) => ({ description: `The ${t.name} tool`, ...t }));
    });
  const v1: Tool[] = [
    { name: 'greet', risk_class: 'write', confirmation_policy: 'high_stakes_write' },
    { name: 'shout', risk_class: 'destructive' },
  ];
  const rated = (risk_class: string, confirmation_policy = 'none'): { risk_class: string; confirmation_policy: string } => ({ risk_class, confirmation_policy });
  type Request = { version: string; risk_changes?: unknown };

  it('asks again, naming the tools, for a lower class, a new tool above read or a dropped confirmation; not for a raised class, a removed tool or a new read tool', async () => {
    p = await testProfile('dev');
    const asked: Request[] = [];
    const accept = (request: Request): boolean => (asked.push(request), true);
    unwrap(await p.installer.install(await withTools('1.0.0', v1), { accept }));
    expect(asked.map((r) => r.version)).toEqual(['1.0.0']);
    expect(asked[0]?.risk_changes).toBeUndefined();
    // Raised, removed and a new read tool: nothing is easier to call, so the recorded owner is not asked again.
    const safer: Tool[] = [{ name: 'shout', risk_class: 'destructive' }, { name: 'peek', risk_class: 'read' }];
    unwrap(await p.installer.install(await withTools('1.1.0', [...safer, v1[0] as Tool]), { accept }));
    unwrap(await p.installer.install(await withTools('1.2.0', safer), { accept }));
    expect(asked.map((r) => r.version)).toEqual(['1.0.0']);
    // A tool removed and added back is new again: above read, it is asked about.
    refusedWith(await p.installer.install(await withTools('1.3.0', [...safer, v1[0] as Tool]), { accept: () => false }), 'PLUGIN_TRUST_DECLINED');

    unwrap(await p.installer.install(await withTools('1.4.0', [...safer, v1[0] as Tool]), { accept }));
    const cases: [string, Tool[], unknown[]][] = [
      ['2.0.0', [{ name: 'shout', risk_class: 'read' }, { name: 'peek', risk_class: 'read' }, v1[0] as Tool], [{ name: 'shout', op_id: 'plug.greeter.shout', from: rated('destructive'), to: rated('read') }]],
      ['2.1.0', [...safer, { name: 'greet', risk_class: 'write' }], [{ name: 'greet', op_id: 'plug.greeter.greet', from: rated('write', 'high_stakes_write'), to: rated('write') }]],
      ['2.2.0', [...safer, v1[0] as Tool, { name: 'wipe', risk_class: 'destructive' }], [{ name: 'wipe', op_id: 'plug.greeter.wipe', from: null, to: rated('destructive') }]],
      ['2.3.0', [{ name: 'shout', risk_class: 'write' }, { name: 'peek', risk_class: 'read' }, { name: 'greet', risk_class: 'read' }], [
        { name: 'shout', op_id: 'plug.greeter.shout', from: rated('destructive'), to: rated('write') },
        { name: 'greet', op_id: 'plug.greeter.greet', from: rated('write', 'high_stakes_write'), to: rated('read') },
      ]],
    ];
    for (const [version, tools, changes] of cases) {
      const declinedAsk: Request[] = [];
      const declined = refusedWith(await p.installer.install(await withTools(version, tools), { accept: (r: Request) => (declinedAsk.push(r), false) }), 'PLUGIN_TRUST_DECLINED');
      expect(declinedAsk.map((r) => r.risk_changes), version).toEqual([changes]);
      expect(declined.details).toMatchObject({ plugin_id: 'greeter', reason: 'risk_lowered', risk_changes: changes });
    }
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.4.0');
    unwrap(await p.installer.install(await withTools('2.0.0', cases[0]?.[1] ?? []), { accept }));
    expect(asked.at(-1)).toMatchObject({ version: '2.0.0', risk_changes: cases[0]?.[2] });
    expect((await installed(p, 'greeter'))?.lock.version).toBe('2.0.0');
  });

  it('refuses such an upgrade without an accept callback (no one to ask), naming the tools in the hint, and installs the same upgrade with one', async () => {
    p = await testProfile('dev');
    // The finding's repro: destructive tools rated read by the next version of the same owner, same powers.
    unwrap(await p.installer.install(await withTools('1.0.0', [{ name: 'probe', risk_class: 'destructive' }, { name: 'daemon', risk_class: 'destructive' }])));
    const v2 = await withTools('2.0.0', [{ name: 'probe', risk_class: 'read' }, { name: 'daemon', risk_class: 'read' }]);
    const refused = refusedWith(await p.installer.install(v2), 'PLUGIN_TRUST_DECLINED');
    expect(refused.hint).toContain('probe destructive→read, daemon destructive→read');
    expect(refused.message).toContain('probe destructive→read');
    expect(refused.details).toMatchObject({ reason: 'risk_lowered', risk_changes: [{ name: 'probe' }, { name: 'daemon' }] });
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.0.0');
    const variants = unwrap(await p.store.snapshot()).contents.variants.filter((v) => v.plugin_id === 'greeter');
    expect(variants.map((v) => v.risk_class)).toEqual(['destructive', 'destructive']);
    // Raising a class needs no one: the upgrade the other way goes through unasked.
    unwrap(await p.installer.install(await withTools('1.5.0', [{ name: 'probe', risk_class: 'destructive' }, { name: 'daemon', risk_class: 'destructive' }, { name: 'peek', risk_class: 'read' }])));
    unwrap(await p.installer.install(v2, { accept: () => true }));
    expect((await installed(p, 'greeter'))?.lock.version).toBe('2.0.0');
  });

  it('compares the TOML form by the tool names its rows record: the same tools again are no change, a lower class is', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await notesToml('2.1.0', 'write')));
    unwrap(await p.installer.install(await notesToml('2.2.0', 'write')));
    const refused = refusedWith(await p.installer.install(await notesToml('2.3.0', 'read')), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toMatchObject({ reason: 'risk_lowered', risk_changes: [{ name: 'search', from: { risk_class: 'write' }, to: { risk_class: 'read' } }] });
  });

  it('compares by the op id callers address: a TOML form keeping op_id and renaming tool_name to a read tool is asked (review R4 F1)', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await notesToml('2.1.0', 'destructive', 'search')));
    const renamed = await notesToml('2.3.0', 'read', 'search_v2');
    const refused = refusedWith(await p.installer.install(renamed), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toMatchObject({ reason: 'risk_lowered', risk_changes: [{ name: 'search_v2', op_id: 'plug.notes.search', from: rated('destructive'), to: rated('read') }] });
    // Named by the op id too where it is not the tool name: `run` and ceilings address plug.notes.search.
    expect(refused.message).toContain('search_v2 (op plug.notes.search) destructive→read');
    const rows = unwrap(await p.store.snapshot()).contents.variants.filter((v) => v.plugin_id === 'notes');
    expect(rows.map((v) => [v.op_id, v.tool_name, v.risk_class])).toEqual([['notes.search', 'search', 'destructive']]);
    // The same op id at the same class under another tool_name is no change.
    unwrap(await p.installer.install(await notesToml('2.2.0', 'destructive', 'search_v2')));
    // After a remove, the owner's record keeps the op id and the reinstall is compared by it.
    unwrap(await p.installer.remove('notes'));
    expect(unwrap(await p.store.snapshot()).contents.namespace_owners.notes?.accepted_tools).toEqual([{ op_id: 'notes.search', name: 'search_v2', ...rated('destructive') }]);
    refusedWith(await p.installer.install(await notesToml('2.4.0', 'read', 'search')), 'PLUGIN_TRUST_DECLINED');
    unwrap(await p.installer.install(renamed, { accept: () => true }));
  });

  it('matches an owner record written without op ids by tool name (TOML tool_name), so its reinstall is still compared', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await notesToml('2.1.0', 'destructive')));
    unwrap(await p.installer.remove('notes'));
    // The record as a remove before op ids were kept wrote it.
    unwrap(
      await p.store.transaction((current) => {
        const owner = current.namespace_owners.notes!;
        const tools = (owner.accepted_tools ?? []).map(({ op_id: _opId, ...rest }) => rest);
        expect(tools).toEqual([{ name: 'search', ...rated('destructive') }]);
        return { ...current, namespace_owners: { ...current.namespace_owners, notes: { ...owner, accepted_tools: tools } } };
      }),
    );
    const refused = refusedWith(await p.installer.install(await notesToml('2.2.0', 'read')), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toMatchObject({ risk_changes: [{ name: 'search', from: rated('destructive'), to: rated('read') }] });
    unwrap(await p.installer.install(await notesToml('2.3.0', 'destructive')));
  });

  it('asks when a tool above read is dropped and a new lower-rated one added, as a rename cannot be told apart (JSON form, review R4 F1)', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await withTools('1.0.0', v1)));
    for (const name of ['shout2', 'Shout']) {
      const refused = refusedWith(await p.installer.install(await withTools('2.0.0', [v1[0] as Tool, { name, risk_class: 'read' }])), 'PLUGIN_TRUST_DECLINED');
      expect(refused.details, name).toMatchObject({ reason: 'risk_lowered', risk_changes: [{ name, from: rated('destructive'), to: rated('read') }] });
    }
    // Dropping a confirmed write tool for a new unconfirmed write one is asked as well.
    const refused = refusedWith(await p.installer.install(await withTools('2.1.0', [{ name: 'greet2', risk_class: 'write' }, v1[1] as Tool])), 'PLUGIN_TRUST_DECLINED');
    expect(refused.details).toMatchObject({ risk_changes: [{ name: 'greet2', from: rated('write', 'high_stakes_write'), to: rated('write') }] });
    expect((await installed(p, 'greeter'))?.lock.version).toBe('1.0.0');
    // A new read tool with nothing dropped stays unasked.
    unwrap(await p.installer.install(await withTools('1.1.0', [...v1, { name: 'peek', risk_class: 'read' }])));
  });

  it('after a remove, records the tools with the owner and asks again when a reinstall rates one lower', async () => {
    p = await testProfile('dev');
    const asked: Request[] = [];
    const accept = (request: Request): boolean => (asked.push(request), true);
    unwrap(await p.installer.install(await withTools('1.0.0', v1), { accept }));
    unwrap(await p.installer.remove('greeter'));
    const owners = unwrap(await p.store.snapshot()).contents.namespace_owners;
    expect(owners.greeter?.accepted_tools).toEqual([
      { op_id: 'plug.greeter.greet', name: 'greet', ...rated('write', 'high_stakes_write') },
      { op_id: 'plug.greeter.shout', name: 'shout', ...rated('destructive') },
    ]);
    unwrap(await p.installer.install(await withTools('1.1.0', v1), { accept }));
    expect(asked.map((r) => r.version)).toEqual(['1.0.0']);
    unwrap(await p.installer.remove('greeter'));
    const lowered = await withTools('2.0.0', [v1[0] as Tool, { name: 'shout', risk_class: 'read' }]);
    refusedWith(await p.installer.install(lowered), 'PLUGIN_TRUST_DECLINED');
    refusedWith(await p.installer.install(lowered, { accept: () => false }), 'PLUGIN_TRUST_DECLINED');
    expect(await installed(p, 'greeter')).toBeUndefined();
    unwrap(await p.installer.install(lowered, { accept }));
    expect(asked.at(-1)).toMatchObject({ version: '2.0.0', risk_changes: [{ name: 'shout', op_id: 'plug.greeter.shout', from: rated('destructive'), to: rated('read') }] });
  });
});
