/**
 * Schema-store collection on real profiles: remove and upgrade delete the
 * schema files no installed plugin references any more, keep bodies another
 * plugin shares, never take a file from an install in progress in another
 * process, and collect what processes killed mid-install (before or after
 * their commit) left behind.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jcsDigest } from '../../src/manifest/schemaRefs.js';
import type { Installer } from '../../src/installer/Installer.js';
import { DEAD_PIN_MIN_AGE_MS } from '../../src/installer/schemaPins.js';
import { bundleScript } from '../support/bundleScript.js';
import { startHelper, type Helper } from '../support/childHelper.js';
import { stoppedClock } from '../support/clocks.js';
import { editManifest, installed, testProfile, unwrap, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
let child: { file: string; dir: string };
beforeAll(async () => {
  child = await bundleScript(join(import.meta.dirname, 'helpers', 'installerChild.ts'));
});
afterAll(async () => {
  await rm(child.dir, { recursive: true, force: true });
});
afterEach(async () => {
  await p.dispose();
});

type Tool = Record<string, unknown>;
const tools = (m: Record<string, unknown>): Tool[] => m.advertised_tools as Tool[];
const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);
const NEW_REQUEST = { type: 'object', properties: { city: { type: 'string' } } };
const newRequestFile = `weather.forecast.request.${jcsDigest(NEW_REQUEST)}.json`;

const withForecastRequest = async (pkg: string, request: object): Promise<void> => {
  const file = join(pkg, 'schemas', 'weather.forecast.json');
  const bundle = JSON.parse(await readFile(file, 'utf8')) as { $defs: Record<string, unknown> };
  bundle.$defs.request = request;
  await writeFile(file, JSON.stringify(bundle));
};
/** Weather 2.0.0: a new forecast request body, and the alerts tool dropped. */
const weatherV2 = async (): Promise<string> => {
  const pkg = await p.copyFixture('install-schemas', 'weather-v2');
  await editManifest(pkg, (m) => {
    m.version = '2.0.0';
    m.advertised_tools = [tools(m)[0]];
  });
  await withForecastRequest(pkg, NEW_REQUEST);
  return pkg;
};
/** A second plugin whose only tool reuses weather's `weather.forecast` bundle, body for body. */
const climate = async (): Promise<string> => {
  const pkg = await p.copyFixture('install-schemas', 'climate');
  await editManifest(pkg, (m) => {
    m.plugin_id = 'climate';
    m.namespace_owner = 'io.example.climate';
    m.advertised_tools = [tools(m)[0]];
  });
  return pkg;
};

const schemaFiles = async (): Promise<string[]> => (await p.census()).schemaFiles;
const prefixes = (names: readonly string[]): string[] => names.map((n) => n.replace(/\.[0-9a-f]{64}\.json$/, ''));
const pins = (): Promise<string[]> => readdir(p.layout.schemaPinsDir).catch(() => []);

/** Every file the committed catalog references is in the store, with the body its name promises. */
const expectReferencedFilesIntact = async (): Promise<string[]> => {
  const names: string[] = [];
  for (const variant of unwrap(await p.store.snapshot()).contents.variants) {
    for (const [ref, digest] of Object.entries(variant.schema_hashes)) {
      const text = await readFile(p.layout.schemaFile(ref, digest), 'utf8');
      expect(jcsDigest(JSON.parse(text))).toBe(digest);
      names.push(`${ref}.${digest}.json`);
    }
  }
  return [...new Set(names)].sort();
};

const childProcess = (...args: string[]): Helper => startHelper(child.file, [p.layout.root, ...args]);

/** A pid that belonged to a process of this host and is now gone. */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid;

describe('remove and upgrade collect the schema store', () => {
  it('remove deletes the files only the removed plugin referenced and keeps bodies another plugin shares', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    unwrap(await p.installer.install(await climate()));
    expect(prefixes(await schemaFiles())).toEqual(['weather.alerts.request', 'weather.alerts.response', 'weather.forecast.request', 'weather.forecast.response']);

    unwrap(await p.installer.remove('weather'));
    expect(prefixes(await schemaFiles())).toEqual(['weather.forecast.request', 'weather.forecast.response']);
    expect(await schemaFiles()).toEqual(await expectReferencedFilesIntact());

    unwrap(await p.installer.remove('climate'));
    expect(await schemaFiles()).toEqual([]);
  });

  it('an upgrade deletes the bodies it no longer references and keeps the one it still does', async () => {
    p = await testProfile('dev');
    const v1 = unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const keptResponse = `weather.forecast.response.${v1.variants[0]!.schema_hashes['weather.forecast.response']}.json`;
    unwrap(await p.installer.install(await weatherV2()));
    expect(await schemaFiles()).toEqual([newRequestFile, keptResponse]);
    expect(await expectReferencedFilesIntact()).toEqual([newRequestFile, keptResponse]);
    expect(await pins()).toEqual([]);
  });

  it('a failed upgrade keeps every file of the installed version and deletes the new body it stored', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const before = await schemaFiles();
    const failed = await p.installer.install(await weatherV2(), {
      initialStatus: async () => {
        expect(await schemaFiles()).toContain(newRequestFile);
        throw new Error('status unavailable');
      },
    });
    expect(failed.isErr()).toBe(true);
    expect(await schemaFiles()).toEqual(before);
    expect(await pins()).toEqual([]);
  });

  it('collects on demand: dead temporary files and unreferenced bodies go, other names and directories stay', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const store = p.layout.schemaStoreDir;
    const orphan = `weather.forecast.request.${'a'.repeat(64)}.json`;
    const temp = `weather.forecast.request.${'b'.repeat(64)}.json.0123456789ab.tmp`;
    await writeFile(join(store, orphan), '{}');
    await writeFile(join(store, temp), '{');
    await writeFile(join(store, 'README.txt'), 'not a schema');
    await mkdir(join(store, `squatter.${'c'.repeat(64)}.json`));
    expect(unwrap(await p.installer.collectUnreferencedSchemas())).toEqual([orphan, temp]);
    expect(prefixes(await schemaFiles())).toEqual([
      'README.txt',
      'squatter',
      'weather.alerts.request',
      'weather.alerts.response',
      'weather.forecast.request',
      'weather.forecast.response',
    ]);
    expect(unwrap(await p.installer.collectUnreferencedSchemas())).toEqual([]);
  });
});

describe('pins: an install in progress keeps its files', () => {
  it("another process's remove, collecting while this install waits to commit, leaves the files it stored", { timeout: 60_000 }, async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await climate()));
    const shared = await schemaFiles();
    expect(prefixes(shared)).toEqual(['weather.forecast.request', 'weather.forecast.response']);
    const seen: { pinned?: string[]; afterRemove?: string[]; removeOutput?: string } = {};
    const weather = unwrap(
      await p.installer.install(await p.copyFixture('install-schemas'), {
        initialStatus: async () => {
          seen.pinned = await pins();
          // A second host process removes the only plugin that references the shared bodies, and collects.
          const remover = childProcess('remove', 'climate');
          const exit = await remover.exited;
          seen.removeOutput = exit.stdout;
          seen.afterRemove = await schemaFiles();
          return 'installed_pending_restart' as const;
        },
      }),
    );
    expect(seen.removeOutput).toBe('removed');
    expect(seen.pinned).toHaveLength(1);
    expect(await installed(p, 'climate')).toBeUndefined();
    expect(seen.afterRemove).toEqual(expect.arrayContaining(shared));
    expect(await expectReferencedFilesIntact()).toEqual(await schemaFiles());
    expect(weather.variants.map((v) => v.op_id)).toEqual(['plug.weather.forecast', 'plug.weather.alerts']);
    expect(await pins()).toEqual([]);
  });

  it('an old pin of a dead process of this host, an unreadable pin and an old pin of another host stop protecting; live and fresh pins keep protecting', async () => {
    p = await testProfile('dev');
    const dir = p.layout.schemaPinsDir;
    await mkdir(dir, { recursive: true });
    await mkdir(p.layout.schemaStoreDir, { recursive: true });
    const body = (n: string): string => `orphan.request.${n.repeat(64)}.json`;
    const pin = async (name: string, owner: { pid: number; hostname: string; started_at_ms: number }, file: string): Promise<void> => {
      await writeFile(join(p.layout.schemaStoreDir, file), '{}');
      await writeFile(join(dir, `${name}.json`), JSON.stringify({ ...owner, files: [file] }));
    };
    const now = Date.UTC(2026, 0, 15, 12, 0, 0);
    const at = (ms: number): Installer => p.installerWith({ clock: stoppedClock(ms) });
    const minutes = 60 * 1000;
    // A process of this host that looks dead may live in another container sharing the hostname: a fresh pin keeps protecting.
    await pin('01', { pid: deadPid(), hostname: hostname(), started_at_ms: now - 14 * minutes }, body('1'));
    await pin('02', { pid: process.pid, hostname: hostname(), started_at_ms: now }, body('2'));
    await pin('03', { pid: 1, hostname: 'elsewhere.example', started_at_ms: now }, body('3'));
    await pin('04', { pid: 1, hostname: 'elsewhere.example', started_at_ms: now - 25 * 60 * minutes }, body('4'));
    await writeFile(join(dir, '05.json'), '{"pid":');
    await pin('06', { pid: deadPid(), hostname: hostname(), started_at_ms: now - 16 * minutes }, body('6'));

    expect(unwrap(await at(now).collectUnreferencedSchemas())).toEqual([body('4'), body('6')]);
    expect((await readdir(dir)).sort()).toEqual(['01.json', '02.json', '03.json']);

    // Two minutes later the dead process's pin is old enough to be stale.
    expect(unwrap(await at(now + 2 * minutes).collectUnreferencedSchemas())).toEqual([body('1')]);
    expect((await readdir(dir)).sort()).toEqual(['02.json', '03.json']);

    // A day later the other host's pin is stale too; this process's own pin never is while it runs.
    expect(unwrap(await at(now + 25 * 60 * minutes).collectUnreferencedSchemas())).toEqual([body('3')]);
    expect(await readdir(dir)).toEqual(['02.json']);
  });
});

describe('crashes: leftovers are collected by the next install', () => {
  it('an install killed after storing its schema files, before its commit', { timeout: 60_000 }, async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const before = await schemaFiles();
    const upgrader = childProcess('install', await weatherV2());
    await upgrader.waitFor('stored');
    upgrader.child.kill('SIGKILL');
    await upgrader.exited;
    expect(await schemaFiles()).toEqual([...before, newRequestFile].sort());
    expect(await pins()).toHaveLength(1);
    expect((await installed(p, 'weather'))!.lock.version).toBe('1.0.0');

    // Fresh, the dead install's pin still protects its files: that process may live in another container.
    expect(unwrap(await p.installer.collectUnreferencedSchemas())).toEqual([]);
    expect(await pins()).toHaveLength(1);

    const later = Date.now() + DEAD_PIN_MIN_AGE_MS + 60_000;
    unwrap(await p.installerWith({ clock: stoppedClock(later) }).install(await p.copyFixture('install-node')));
    expect(await schemaFiles()).toEqual(before);
    expect(await pins()).toEqual([]);
    expect(await expectReferencedFilesIntact()).toEqual(before);
  });

  it('an upgrade killed after its commit, before its collection, never loses a referenced file', { timeout: 60_000 }, async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    const v1Files = await schemaFiles();
    const upgrader = childProcess('install', await weatherV2());
    await upgrader.waitFor('stored');
    // Holding the store's lock (as a live process) stops the child's collection, which follows its commit.
    const lock = p.layout.schemaStoreLockFile;
    await writeFile(lock, JSON.stringify({ pid: process.pid, hostname: hostname(), started_at: new Date().toISOString(), started_at_ms: Date.now(), token: 'e'.repeat(32) }));
    upgrader.child.stdin.write('go\n');
    for (let i = 0; i < 600 && (await installed(p, 'weather'))?.lock.version !== '2.0.0'; i++) await new Promise((r) => setTimeout(r, 50));
    upgrader.child.kill('SIGKILL');
    await upgrader.exited;
    expect((await installed(p, 'weather'))!.lock.version).toBe('2.0.0');
    const referenced = await expectReferencedFilesIntact();
    expect(referenced).toContain(newRequestFile);
    // Nothing was collected: the files v2 dropped are still there.
    expect(await schemaFiles()).toEqual([...new Set([...v1Files, ...referenced])].sort());
    await rm(lock);

    unwrap(await p.installer.install(await p.copyFixture('install-node')));
    expect(await schemaFiles()).toEqual(referenced);
    expect(await expectReferencedFilesIntact()).toEqual(referenced);
    expect(await exists(lock)).toBe(false);
  });
});
