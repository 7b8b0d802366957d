import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { err, type Result } from 'neverthrow';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostError, type HostError } from '../../src/errors/HostError.js';
import { CatalogStore, PROFILE_LOCK_FILE } from '../../src/catalog/CatalogStore.js';
import { listPlugins, lookupPlugin, putPlugin, removePlugin, updatePluginState } from '../../src/catalog/catalogContents.js';
import { readGeneration } from '../../src/catalog/generationFiles.js';
import { pluginRecords } from './helpers/catalogFixtures.js';

let base: string;
let dir: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'catalog-store-'));
  dir = join(base, 'work');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

const open = async (profile = 'work', extra: Partial<Parameters<typeof CatalogStore.open>[0]> = {}) =>
  CatalogStore.open({ profileDir: dir, profile, ...extra });
const must = async <T>(r: PromiseLike<Result<T, HostError>>): Promise<T> => {
  const v = await r;
  if (v.isErr()) throw v.error;
  return v.value;
};
const readJson = (name: string): Record<string, unknown> => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown>;
const install = (store: CatalogStore, id: string) => must(store.transaction((c) => putPlugin(c, pluginRecords(id))));

describe('CatalogStore generations', () => {
  it('opens a new profile at generation 0 with nothing installed and no files written', async () => {
    const store = await must(open());
    const snap = await must(store.snapshot());
    expect(snap.install_generation).toBe(0);
    expect(listPlugins(snap)).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('publishes the three files as one generation with one txid, schema versions and mode 0600', async () => {
    const store = await must(open());
    const snap = await install(store, 'fli');
    const catalog = readJson('plugin-catalog.json');
    const lock = readJson('plugins.lock');
    const state = readJson('plugin-state.json');
    for (const file of [catalog, lock, state]) {
      expect(file.install_generation).toBe(1);
      expect(file.txid).toBe(snap.txid);
      expect(file.profile).toBe('work');
    }
    expect(snap.txid).toMatch(/^[0-9a-f]{32}$/);
    expect(catalog.plugin_catalog_schema_version).toBe(1);
    expect(lock.plugins_lock_schema_version).toBe(1);
    expect(state.plugin_state_schema_version).toBe(1);
    for (const name of ['plugin-catalog.json', 'plugins.lock', 'plugin-state.json']) expect(statSync(join(dir, name)).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual(['plugin-catalog.json', 'plugin-state.json', 'plugins.lock']);

    const second = await install(store, 'hello');
    expect(second.install_generation).toBe(2);
    expect(second.txid).not.toBe(snap.txid);
    const reread = await must((await must(open())).snapshot());
    expect(Object.keys(reread.contents.plugins).sort()).toEqual(['fli', 'hello']);
    expect(reread.contents.variants.map((v) => v.op_id).sort()).toEqual(['plug.fli.search', 'plug.hello.search']);
    expect(reread.contents.variants[0]?.backend_kind).toBe('mcp-plugin');
    expect(reread.contents.descriptors.fli?.capabilities).toEqual({ network: false, fs_write_dir: '', env_allow: [] });
    expect((catalog.plugins as Record<string, { name: string }>).fli?.name).toBe('Plugin fli');
  });

  it('keeps the namespace owner when a plugin is removed', async () => {
    const store = await must(open());
    await install(store, 'fli');
    const after = await must(store.transaction((c) => removePlugin(c, 'fli')));
    expect(after.contents.plugins).toEqual({});
    expect(after.contents.states).toEqual({});
    expect(after.contents.variants).toEqual([]);
    expect(after.contents.descriptors).toEqual({});
    expect(after.contents.namespace_owners.fli?.namespace_owner).toBe('io.example.fli');
    expect((readJson('plugins.lock').namespace_owners as Record<string, unknown>).fli).toBeDefined();
  });

  it('updates one plugin state without touching the others', async () => {
    const store = await must(open());
    await install(store, 'a');
    await install(store, 'b');
    const snap = await must(
      store.transaction((c) =>
        updatePluginState(c, 'a', (s) => ({ ...s, status: 'quarantined', quarantined_at: '2026-05-19T01:00:00.000Z', quarantine_reason: 'digest_mismatch', last_error_code: 'PLUGIN_EXECUTABLE_UNTRUSTED' })),
      ),
    );
    expect(snap.contents.states.a?.status).toBe('quarantined');
    expect(snap.contents.states.b?.status).toBe('active');
  });

  it('writes nothing when the mutator returns an error', async () => {
    const store = await must(open());
    await install(store, 'fli');
    const before = readFileSync(join(dir, 'plugins.lock'), 'utf8');
    const r = await store.transaction(() => err(hostError('PLUGIN_ALREADY_INSTALLED', 'already there')));
    expect(r._unsafeUnwrapErr().code).toBe('PLUGIN_ALREADY_INSTALLED');
    expect(readFileSync(join(dir, 'plugins.lock'), 'utf8')).toBe(before);
    expect(existsSync(join(dir, PROFILE_LOCK_FILE))).toBe(false);
  });

  it('reports a mutator that throws as a host bug (HOST_INTERNAL_ERROR), writes nothing and releases the lock', async () => {
    const store = await must(open());
    await install(store, 'fli');
    const before = readFileSync(join(dir, 'plugins.lock'), 'utf8');
    const r = await store.transaction(() => {
      throw new TypeError('invariant broken');
    });
    const e = r._unsafeUnwrapErr();
    expect(e.code).toBe('HOST_INTERNAL_ERROR');
    expect(e.retryable).toBe(false);
    expect(e.hint).toBe('This is a bug in mcp-plugin-host; report it with details.');
    expect(e.message).toContain('invariant broken');
    expect(readFileSync(join(dir, 'plugins.lock'), 'utf8')).toBe(before);
    expect(existsSync(join(dir, PROFILE_LOCK_FILE))).toBe(false);
  });

  it('refuses a mutation that would write a file its schema rejects', async () => {
    const store = await must(open());
    const bad = pluginRecords('x');
    const r = await store.transaction((c) => putPlugin(c, { ...bad, state: { ...bad.state, status: 'sleeping' as 'active' } }));
    expect(r._unsafeUnwrapErr().code).toBe('HOST_INTERNAL_ERROR');
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('CatalogStore damaged files', () => {
  it('reports corrupt JSON naming the file and leaves the file as it was', async () => {
    await install(await must(open()), 'fli');
    writeFileSync(join(dir, 'plugins.lock'), '{"plugins_lock_schema_version": 1, "plug');
    const r = await open();
    const e = r._unsafeUnwrapErr();
    expect(e.code).toBe('CATALOG_CORRUPT');
    expect(e.details.file).toBe(join(dir, 'plugins.lock'));
    expect(e.message).toContain('plugins.lock');
    expect(readFileSync(join(dir, 'plugins.lock'), 'utf8')).toBe('{"plugins_lock_schema_version": 1, "plug');
  });

  it.each([
    ['plugin-catalog.json', 'plugin_catalog_schema_version', 'PLUGIN_CATALOG_SCHEMA_UNSUPPORTED'],
    ['plugins.lock', 'plugins_lock_schema_version', 'PLUGIN_LOCK_SCHEMA_UNSUPPORTED'],
    ['plugin-state.json', 'plugin_state_schema_version', 'PLUGIN_STATE_SCHEMA_UNSUPPORTED'],
  ])('refuses an unsupported version of %s with its own code', async (name, field, code) => {
    await install(await must(open()), 'fli');
    writeFileSync(join(dir, name), JSON.stringify({ ...readJson(name), [field]: 2 }));
    const e = (await open())._unsafeUnwrapErr();
    expect(e.code).toBe(code);
    expect(e.details.file).toBe(join(dir, name));
    expect(e.details.found).toBe(2);
  });

  it('rolls a generation killed during its renames forward', async () => {
    const store = await must(open());
    await install(store, 'a');
    await install(store, 'b');
    // Generation 2 files as a killed publish leaves them: catalog renamed, lock and state still `.next`.
    const gen2 = Object.fromEntries(['plugin-catalog.json', 'plugins.lock', 'plugin-state.json'].map((n) => [n, readFileSync(join(dir, n), 'utf8')]));
    rmSync(dir, { recursive: true });
    await install(await must(open()), 'a');
    writeFileSync(join(dir, 'plugin-catalog.json'), gen2['plugin-catalog.json']!);
    writeFileSync(join(dir, 'plugins.lock.next'), gen2['plugins.lock']!);
    writeFileSync(join(dir, 'plugin-state.json.next'), gen2['plugin-state.json']!);
    const lockBefore = readJson('plugins.lock');
    expect(lockBefore.install_generation).toBe(1);

    const reader = await must(CatalogStore.open({ profileDir: dir, profile: 'work' }));
    const snap = await must(reader.snapshot());
    expect(snap.install_generation).toBe(2);
    expect(Object.keys(snap.contents.plugins).sort()).toEqual(['a', 'b']);
    expect(readJson('plugins.lock').install_generation).toBe(2);
    expect(readJson('plugin-state.json').txid).toBe(readJson('plugin-catalog.json').txid);
    expect(readdirSync(dir).filter((n) => n.endsWith('.next'))).toEqual([]);
  });

  it('never reads a generation only `.next` files hold, beside live files of the publish before it', async () => {
    // What a reader without the lock can meet: it read the live files while generation 2 was being renamed into place,
    // then generation 2 finished and the next transaction wrote generation 3's `.next` files before the reader listed them.
    const names = ['plugin-catalog.json', 'plugins.lock', 'plugin-state.json'];
    const store = await must(open());
    const generations: Record<string, string>[] = [];
    for (const id of ['a', 'b', 'c']) {
      await install(store, id);
      generations.push(Object.fromEntries(names.map((n) => [n, readFileSync(join(dir, n), 'utf8')])));
    }
    const [first, second, third] = generations as [Record<string, string>, Record<string, string>, Record<string, string>];
    writeFileSync(join(dir, 'plugin-catalog.json'), second['plugin-catalog.json']!);
    writeFileSync(join(dir, 'plugins.lock'), first['plugins.lock']!);
    writeFileSync(join(dir, 'plugin-state.json'), first['plugin-state.json']!);
    for (const n of names) writeFileSync(join(dir, `${n}.next`), third[n]!);

    const outcome = await must(readGeneration(dir, new Map()));
    expect('selected' in outcome ? outcome.selected.files.catalog.generation : 'no generation').toBe('no generation');
    // Once generation 3's renames begin, its catalog is live and the read rolls it forward.
    writeFileSync(join(dir, 'plugin-catalog.json'), third['plugin-catalog.json']!);
    rmSync(join(dir, 'plugin-catalog.json.next'));
    const rolled = await must(readGeneration(dir, new Map()));
    expect('selected' in rolled ? rolled.selected.files.catalog.generation : 'no generation').toBe(3);
  });

  it('rolls a generation killed before its first rename back and removes its leftovers', async () => {
    const store = await must(open());
    await install(store, 'a');
    writeFileSync(join(dir, 'plugin-catalog.json.next'), JSON.stringify({ ...readJson('plugin-catalog.json'), install_generation: 2, txid: 'f'.repeat(32) }));
    writeFileSync(join(dir, 'plugins.lock.next'), '{"plugins_lock_sch');
    const snap = await must((await must(open())).snapshot());
    expect(snap.install_generation).toBe(1);
    expect(readdirSync(dir).filter((n) => n.endsWith('.next'))).toEqual([]);
    const next = await install(store, 'b');
    expect(next.install_generation).toBe(2);
  });

  it('refuses files that share no generation instead of resetting to empty', async () => {
    const store = await must(open());
    await install(store, 'a');
    await install(store, 'b');
    writeFileSync(join(dir, 'plugin-state.json'), JSON.stringify({ ...readJson('plugin-state.json'), install_generation: 7, txid: 'e'.repeat(32) }));
    const e = (await open())._unsafeUnwrapErr();
    expect(e.code).toBe('CATALOG_CORRUPT');
    expect(readJson('plugins.lock').install_generation).toBe(2);
  });

  it('refuses a missing file next to files of a later generation', async () => {
    await install(await must(open()), 'a');
    rmSync(join(dir, 'plugin-state.json'));
    expect((await open())._unsafeUnwrapErr().code).toBe('CATALOG_CORRUPT');
  });
});

describe('CatalogStore profiles', () => {
  it('never answers a lookup keyed by another profile', async () => {
    const work = await must(open('work'));
    await install(work, 'fli');
    const snap = await must(work.snapshot());
    expect(lookupPlugin(snap, { profile: 'work', plugin_id: 'fli' })?.lock.version).toBe('1.0.0');
    expect(lookupPlugin(snap, { profile: 'personal', plugin_id: 'fli' })).toBeUndefined();
    expect(await must(work.lookup({ profile: 'personal', plugin_id: 'fli' }))).toBeUndefined();
    expect(await must(work.lookup({ profile: 'work', plugin_id: 'constructor' }))).toBeUndefined();

    const personal = await must(CatalogStore.open({ profileDir: join(base, 'personal'), profile: 'personal' }));
    expect(await must(personal.list())).toEqual([]);
  });

  it('refuses to open a profile directory as another profile', async () => {
    await install(await must(open('work')), 'fli');
    const e = (await open('personal'))._unsafeUnwrapErr();
    expect(e.code).toBe('HOST_INVALID_OPTIONS');
    expect(e.details.profile).toBe('work');
  });

  it('validates its options', async () => {
    expect((await CatalogStore.open({ profileDir: 'relative/dir', profile: 'work' }))._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect((await CatalogStore.open({ profileDir: dir, profile: '../x' }))._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });
});

describe('CatalogStore lock', () => {
  const writeLock = (owner: Record<string, unknown>): void => writeFileSync(join(dir, PROFILE_LOCK_FILE), JSON.stringify(owner));

  it('takes over a lock whose owner process died', async () => {
    const store = await must(open());
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeLock({ pid: dead, hostname: hostname(), started_at: new Date().toISOString(), started_at_ms: Date.now(), token: 'dead' });
    const snap = await install(store, 'fli');
    expect(snap.install_generation).toBe(1);
    expect(existsSync(join(dir, PROFILE_LOCK_FILE))).toBe(false);
    expect(readdirSync(dir).filter((n) => n.includes('.steal-'))).toEqual([]);
  });

  it('times out on a lock held by a live process, naming the owner', async () => {
    const store = await must(open('work', { lockTimeoutMs: 300 }));
    writeLock({ pid: process.pid, hostname: hostname(), started_at: new Date().toISOString(), started_at_ms: Date.now(), token: 'live' });
    const e = (await store.transaction((c) => putPlugin(c, pluginRecords('fli'))))._unsafeUnwrapErr();
    expect(e.code).toBe('CATALOG_LOCK_TIMEOUT');
    expect((e.details.owner as { pid: number }).pid).toBe(process.pid);
    expect(readFileSync(join(dir, PROFILE_LOCK_FILE), 'utf8')).toContain('"live"');
  });

  it('takes over a lock held past the stale age even if the pid looks alive', async () => {
    const store = await must(open('work', { staleLockMs: 1_000 }));
    writeLock({ pid: process.pid, hostname: 'elsewhere', started_at: '2020-01-01T00:00:00.000Z', started_at_ms: Date.now() - 5_000, token: 'old' });
    expect((await install(store, 'fli')).install_generation).toBe(1);
  });

  it('takes over an empty lock file left by an owner that died while creating it', async () => {
    const store = await must(open());
    writeFileSync(join(dir, PROFILE_LOCK_FILE), '');
    const old = new Date(Date.now() - 10_000);
    utimesSync(join(dir, PROFILE_LOCK_FILE), old, old);
    expect((await install(store, 'fli')).install_generation).toBe(1);
  });

  it('serializes concurrent transactions of one process without losing any', async () => {
    const a = await must(open());
    const b = await must(open());
    const ids = Array.from({ length: 12 }, (_, i) => `p${i}`);
    await Promise.all(ids.map((id, i) => install(i % 2 === 0 ? a : b, id)));
    const snap = await must(a.snapshot());
    expect(snap.install_generation).toBe(12);
    expect(Object.keys(snap.contents.plugins).sort()).toEqual([...ids].sort());
  });
});
