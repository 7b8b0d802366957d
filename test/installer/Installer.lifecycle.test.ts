/**
 * Namespace ownership, remove, reinstall and upgrade on real profiles:
 * reserved prefixes, owners kept across remove, the dev-only override, rows
 * replaced and never duplicated, old install roots deleted, schema refs
 * shared only with an identical body, and the re-checks that run under the
 * profile lock when another process got there first.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { okAsync } from 'neverthrow';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyExecutableBinding } from '../../src/binding/ExecutableBinding.js';
import type { CatalogStore } from '../../src/catalog/CatalogStore.js';
import { digestOf } from './craftArchives.js';
import { editManifest, installed, refusedWith, testProfile, tgzOfDirectory, unwrap, violationCodes, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
afterEach(async () => {
  await p.dispose();
});

type Tool = Record<string, unknown>;
const tools = (m: Record<string, unknown>): Tool[] => m.advertised_tools as Tool[];
const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);

/** A copy of the greeter fixture edited into a rival, a new version, … */
const greeter = async (as: string, edit: (m: Record<string, unknown>) => void = () => undefined): Promise<string> => {
  const pkg = await p.copyFixture('install-node', as);
  await editManifest(pkg, edit);
  return pkg;
};
const rivalOwner = (m: Record<string, unknown>): void => {
  m.namespace_owner = 'io.example.rival';
};

/**
 * Makes the next `store.snapshot()` (the inspection's) return what it returns
 * now, as if the inspection ran before another process's install; later
 * reads (the schema collection's) see the catalog as it is.
 */
const freezeSnapshot = async (store: CatalogStore): Promise<void> => {
  const stale = unwrap(await store.snapshot());
  const current = store.snapshot.bind(store);
  let reads = 0;
  Object.defineProperty(store, 'snapshot', { value: () => (reads++ === 0 ? okAsync(stale) : current()) });
};

describe('namespace ownership', () => {
  it('refuses a reserved first-party prefix unless the plugin is installed as first-party', async () => {
    p = await testProfile('dev');
    const pkg = await greeter('drive', (m) => {
      m.plugin_id = 'drive-sync';
    });
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_NAMESPACE_CONFLICT');
    expect(error.message).toContain("reserved first-party prefix 'drive'");
    const plugin = unwrap(await p.installer.install(pkg, { firstParty: true }));
    expect(plugin.variants.map((v) => v.op_id)).toEqual(['plug.drive-sync.greet', 'plug.drive-sync.shout']);
  });

  it('refuses a plugin id owned by another namespace_owner and leaves the owner installed untouched', async () => {
    p = await testProfile('dev');
    const original = unwrap(await p.installer.install(await greeter('greeter')));
    const before = await p.census();
    const error = refusedWith(await p.installer.install(await greeter('rival', rivalOwner)), 'PLUGIN_NAMESPACE_CONFLICT');
    expect(error.message).toContain("Namespace 'greeter' is owned by 'io.example.greeter'");
    expect(await p.census()).toEqual(before);
    expect(await installed(p, 'greeter')).toEqual(original);
  });

  it('accepts the dev override on a dev profile only, and never hands the namespace to the new owner', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await greeter('greeter')));
    const rival = await greeter('rival', rivalOwner);
    const plugin = unwrap(await p.installer.install(rival, { devAllowNamespaceConflict: true, replace: true }));
    expect(plugin.lock.namespace_owner).toBe('io.example.rival');
    expect((await p.census()).owners).toEqual({ greeter: 'io.example.greeter' });

    const standard = p.installerWith({ profileKind: 'standard' });
    const archive = join(p.dir, 'rival.tgz');
    const bytes = await tgzOfDirectory(rival, archive);
    const refused = refusedWith(await standard.install(archive, { checksum: digestOf(bytes), devAllowNamespaceConflict: true }), 'HOST_INVALID_OPTIONS');
    expect(refused.message).toContain('accepted only on a dev profile');
    expect(refusedWith(await standard.install(archive, { checksum: digestOf(bytes) }), 'PLUGIN_NAMESPACE_CONFLICT').message).toContain('owned by');
  });

  it('refuses an op_id another plugin already records, even inside the declaring plugin namespace', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await greeter('greeter')));
    const pkg = await p.copyFixture('install-toml', 'squatter');
    const file = join(pkg, 'plugin.toml');
    await writeFile(
      file,
      (await readFile(file, 'utf8'))
        .replace('name = "notes"', 'name = "plug"')
        .replace('op_id = "notes.search"', 'op_id = "plug.greeter.greet"')
        .replace('variant_id = "notes.search.v2"', 'variant_id = "plug.greet.v1"'),
    );
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_NAMESPACE_CONFLICT');
    expect(error.details).toMatchObject({
      violations: [{ stage: 'namespace', pointer: '/tools/0/op_id', message: 'op_id "plug.greeter.greet" is already recorded by plugin \'greeter\'' }],
    });
    expect((await p.census()).opIds).toEqual(['plug.greeter.greet', 'plug.greeter.shout']);
  });

  it('re-checks ownership under the profile lock: a rival that claimed the id meanwhile wins, nothing of ours stays', async () => {
    p = await testProfile('dev');
    const lateStore = await p.openStore();
    await freezeSnapshot(lateStore);
    const late = p.installerWith({}, lateStore);
    unwrap(await p.installer.install(await greeter('greeter')));
    const before = await p.census();
    const error = refusedWith(await late.install(await greeter('rival', rivalOwner)), 'PLUGIN_NAMESPACE_CONFLICT');
    expect(error.details).toMatchObject({ reason: 'owner_mismatch' });
    expect(await p.census()).toEqual(before);
  });
});

describe('remove', () => {
  it('deletes the rows and the install root and keeps the namespace owner', async () => {
    p = await testProfile('dev');
    const plugin = unwrap(await p.installer.install(await greeter('greeter')));
    unwrap(await p.installer.remove('greeter'));
    expect(await exists(plugin.lock.binding.install_root)).toBe(false);
    expect(await p.census()).toEqual({ plugins: [], opIds: [], installRoots: [], schemaFiles: [], staging: [], owners: { greeter: 'io.example.greeter' } });
    expect(refusedWith(await p.installer.remove('greeter'), 'PLUGIN_NOT_FOUND').details).toEqual({ plugin_id: 'greeter' });
  });

  it('still refuses a different owner after remove, and lets the same owner reinstall', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await greeter('greeter')));
    unwrap(await p.installer.remove('greeter'));
    refusedWith(await p.installer.install(await greeter('rival', rivalOwner)), 'PLUGIN_NAMESPACE_CONFLICT');
    const again = unwrap(await p.installer.install(await greeter('again')));
    expect(again.lock.namespace_owner).toBe('io.example.greeter');
    expect((await p.census()).opIds).toEqual(['plug.greeter.greet', 'plug.greeter.shout']);
  });

  it('never deletes a directory outside the profile that an edited lock names as install root', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await greeter('greeter')));
    const victim = join(p.dir, 'victim');
    await mkdir(victim);
    await writeFile(join(victim, 'keep.txt'), 'precious');
    unwrap(
      await p.store.transaction((current) => {
        const lock = current.plugins.greeter!;
        return { ...current, plugins: { ...current.plugins, greeter: { ...lock, binding: { ...lock.binding, install_root: victim } } } };
      }),
    );
    const error = refusedWith(await p.installer.remove('greeter'), 'CATALOG_CORRUPT');
    expect(error.details).toMatchObject({ plugin_id: 'greeter', install_root: victim, removed: true });
    expect(await readFile(join(victim, 'keep.txt'), 'utf8')).toBe('precious');
    expect((await p.census()).plugins).toEqual([]);
  });
});

describe('reinstall and upgrade', () => {
  it('replaces the rows of a forced reinstall (same version, other bytes) and deletes the old install root', async () => {
    p = await testProfile('dev');
    const first = unwrap(await p.installer.install(await greeter('greeter')));
    const second = unwrap(await p.installer.install(await greeter('greeter-again', (m) => (m.description = 'Greets again')), { replace: true }));
    expect(second.lock.binding.install_root).not.toBe(first.lock.binding.install_root);
    expect(await exists(first.lock.binding.install_root)).toBe(false);
    const census = await p.census();
    expect(census.opIds).toEqual(['plug.greeter.greet', 'plug.greeter.shout']);
    expect(census.installRoots).toEqual([`greeter/${second.lock.binding.install_root.split('/').pop()}`]);
  });

  it('upgrades to v2: new rows replace old ones, removed tools go, the old root is deleted', async () => {
    p = await testProfile('dev');
    const v1 = unwrap(await p.installer.install(await greeter('greeter')));
    const v2 = unwrap(
      await p.installer.install(
        await greeter('greeter-v2', (m) => {
          m.version = '2.0.0';
          tools(m)[1] = { name: 'wave', description: 'Wave at someone', risk_class: 'read' };
        }),
      ),
    );
    expect(v2.lock.version).toBe('2.0.0');
    expect(v2.variants.map((v) => v.variant_id)).toEqual(['plug.greeter.greet@2.0.0', 'plug.greeter.wave@2.0.0']);
    expect(await exists(v1.lock.binding.install_root)).toBe(false);
    const census = await p.census();
    expect(census.plugins).toEqual(['greeter']);
    expect(census.opIds).toEqual(['plug.greeter.greet', 'plug.greeter.wave']);
    expect(census.installRoots).toEqual([`greeter/${v2.lock.binding.install_root.split('/').pop()}`]);
    expect(v2.lock.binding.install_root).toContain('/greeter/2.0.0-');
  });

  it('upgrades without deleting a directory outside the profile that an edited lock names as the old root', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await greeter('greeter')));
    const victim = join(p.dir, 'victim');
    await mkdir(victim);
    await writeFile(join(victim, 'keep.txt'), 'precious');
    unwrap(
      await p.store.transaction((current) => {
        const lock = current.plugins.greeter!;
        return { ...current, plugins: { ...current.plugins, greeter: { ...lock, binding: { ...lock.binding, install_root: victim } } } };
      }),
    );
    unwrap(await p.installer.install(await greeter('greeter-v2', (m) => (m.version = '2.0.0'))));
    expect(await readFile(join(victim, 'keep.txt'), 'utf8')).toBe('precious');
  });

  it('keeps v1 whole when the upgrade to v2 fails', async () => {
    p = await testProfile('dev');
    const v1 = unwrap(await p.installer.install(await greeter('greeter')));
    const broken = await greeter('greeter-v2', (m) => {
      m.version = '2.0.0';
      m.executable = 'bin/run';
    });
    await writeFile(join(broken, 'bin', 'run'), '#!/bin/bash\nexec node bin/greeter.mjs\n', { mode: 0o755 });
    const before = await p.census();
    refusedWith(await p.installer.install(broken), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(await p.census()).toEqual(before);
    expect(await installed(p, 'greeter')).toEqual(v1);
    const exe = unwrap(await verifyExecutableBinding(v1.lock.binding, { copyDir: p.layout.execDir }));
    exe.release();
  });
});

describe('schema refs across plugins and versions', () => {
  const withForecastBody = async (pkg: string, request: object): Promise<void> => {
    const file = join(pkg, 'schemas', 'weather.forecast.json');
    const bundle = JSON.parse(await readFile(file, 'utf8')) as { $defs: Record<string, unknown> };
    bundle.$defs.request = request;
    await writeFile(file, JSON.stringify(bundle));
  };
  /** A second plugin whose only tool reuses the ref `weather.forecast` with the given bundle. */
  const climate = async (request?: object): Promise<string> => {
    const pkg = await p.copyFixture('install-schemas', 'climate');
    await editManifest(pkg, (m) => {
      m.plugin_id = 'climate';
      m.namespace_owner = 'io.example.climate';
      m.advertised_tools = [tools(m)[0]];
    });
    if (request !== undefined) await withForecastBody(pkg, request);
    return pkg;
  };

  it('lets a plugin change its own schema bodies on upgrade', async () => {
    p = await testProfile('dev');
    const v1 = unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const pkg = await p.copyFixture('install-schemas', 'weather-v2');
    await editManifest(pkg, (m) => {
      m.version = '2.0.0';
    });
    await withForecastBody(pkg, { type: 'object', properties: { city: { type: 'string' } } });
    const v2 = unwrap(await p.installer.install(pkg));
    const [old, now] = [v1.variants[0]!.schema_hashes, v2.variants[0]!.schema_hashes];
    expect(now['weather.forecast.request']).not.toBe(old['weather.forecast.request']);
    expect(now['weather.forecast.response']).toBe(old['weather.forecast.response']);
    expect((await p.census()).schemaFiles).toContain(`weather.forecast.request.${now['weather.forecast.request']}.json`);
  });

  it("refuses another plugin's ref with a different body (SCHEMA_REF_COLLISION) and allows identical-body reuse", async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const before = await p.census();
    const error = refusedWith(await p.installer.install(await climate({ type: 'object' })), 'SCHEMA_REF_COLLISION');
    expect(violationCodes(error)).toEqual(['SCHEMA_REF_COLLISION']);
    expect(await p.census()).toEqual(before);

    const shared = unwrap(await p.installer.install(await climate()));
    expect(shared.variants[0]!.schema_hashes).toEqual((await installed(p, 'weather'))!.variants[0]!.schema_hashes);
    expect((await p.census()).schemaFiles).toEqual(before.schemaFiles);

    // Now the ref is shared, the owner plugin cannot change its body either.
    const pkg = await p.copyFixture('install-schemas', 'weather-v2');
    await withForecastBody(pkg, { type: 'object', properties: { town: { type: 'string' } } });
    refusedWith(await p.installer.install(pkg), 'SCHEMA_REF_COLLISION');
  });

  it('re-checks schema collisions under the profile lock', async () => {
    p = await testProfile('dev');
    const lateStore = await p.openStore();
    await freezeSnapshot(lateStore);
    const late = p.installerWith({}, lateStore);
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const before = await p.census();
    const error = refusedWith(await late.install(await climate({ type: 'object' })), 'SCHEMA_REF_COLLISION');
    expect(error.details).toMatchObject({ plugin_id: 'climate', ref: 'weather.forecast.request' });
    expect(await p.census()).toEqual(before);
  });
});
