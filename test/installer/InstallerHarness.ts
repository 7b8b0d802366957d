/**
 * Real profiles for the Installer tests: a temporary profile directory with a
 * real CatalogStore, plugin packages copied from fixtures/plugins/install-*
 * (optionally edited), archives of them built with `tar` and `yazl`, and a
 * census of everything an install can leave on disk.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Result } from 'neverthrow';
import * as tar from 'tar';
import yazl from 'yazl';
import { expect } from 'vitest';
import { CatalogStore, type CatalogStoreOptions } from '../../src/catalog/CatalogStore.js';
import type { InstalledPlugin } from '../../src/catalog/catalogContents.js';
import { EnvDenylist } from '../../src/env/EnvDenylist.js';
import type { HostError } from '../../src/errors/HostError.js';
import type { HostErrorCode } from '../../src/errors/registry.js';
import { Installer, type InstallerOptions } from '../../src/installer/Installer.js';
import { NamespaceLock, type ProfileKind } from '../../src/namespace/NamespaceLock.js';
import { ProfileLayout } from '../../src/profile/ProfileLayout.js';
import type { VerifiedExecutable } from '../../src/process/VerifiedExecutable.js';

/** The repository's plugin fixtures. */
export const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins');

/** Policies a test may vary; everything else is the real default. */
export type InstallerOverrides = Partial<Omit<InstallerOptions, 'store' | 'layout' | 'envDenylist' | 'namespaceLock'>>;

/** A temporary profile and an Installer over it. */
export interface TestProfile {
  /** The temporary directory holding the profile and the packages. */
  readonly dir: string;
  readonly layout: ProfileLayout;
  readonly store: CatalogStore;
  readonly installer: Installer;
  /** Another Installer over the same profile (e.g. with other policies or another store). */
  installerWith(overrides: InstallerOverrides, store?: CatalogStore): Installer;
  /** Opens a second CatalogStore on the same profile directory. */
  openStore(options?: Partial<CatalogStoreOptions>): Promise<CatalogStore>;
  /** Copies `fixtures/plugins/<name>` into the temporary directory as `<as>` and returns its path. */
  copyFixture(name: string, as?: string): Promise<string>;
  /** Writes a file under the temporary directory and returns its path. */
  file(name: string, bytes: Buffer | string): Promise<string>;
  /** What is on disk and in the catalog. */
  census(): Promise<Census>;
  dispose(): Promise<void>;
}

/** Everything an install leaves behind. */
export interface Census {
  /** Installed plugin ids (plugins.lock). */
  readonly plugins: string[];
  /** op_ids of every variant, in catalog order (duplicates show up as such). */
  readonly opIds: string[];
  /** Install roots, as `<plugin_id>/<dir>` relative to the plugins directory, and empty plugin directories as `<plugin_id>/`. */
  readonly installRoots: string[];
  /** Files of the schema store. */
  readonly schemaFiles: string[];
  /** Entries left in the staging directory. */
  readonly staging: string[];
  /** Recorded namespace owners by plugin id. */
  readonly owners: Record<string, string | undefined>;
}

const list = (dir: string): Promise<string[]> => readdir(dir).then((names) => names.sort(), () => []);

/** A temporary profile of the given kind. */
export async function testProfile(profileKind: ProfileKind = 'dev', overrides: InstallerOverrides = {}): Promise<TestProfile> {
  const dir = await mkdtemp(join(tmpdir(), 'mph-install-'));
  const layout = new ProfileLayout(join(dir, 'profile'));
  const openStore = async (options: Partial<CatalogStoreOptions> = {}): Promise<CatalogStore> =>
    unwrap(await CatalogStore.open({ profileDir: layout.root, profile: 'test', ...options }));
  const store = await openStore();
  const installerWith = (more: InstallerOverrides, other = store): Installer =>
    new Installer({
      store: other,
      layout,
      envDenylist: new EnvDenylist({ preset: 'gum' }),
      namespaceLock: new NamespaceLock({ profileKind: more.profileKind ?? overrides.profileKind ?? profileKind }),
      profileKind,
      ...overrides,
      ...more,
    });
  return {
    dir,
    layout,
    store,
    installer: installerWith({}),
    installerWith,
    openStore,
    async copyFixture(name, as = name) {
      const target = join(dir, 'packages', as);
      await cp(join(FIXTURES, name), target, { recursive: true });
      return target;
    },
    async file(name, bytes) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      return path;
    },
    async census() {
      const snapshot = unwrap(await store.snapshot());
      const installRoots: string[] = [];
      for (const id of await list(layout.pluginsDir)) {
        const roots = await list(join(layout.pluginsDir, id));
        installRoots.push(...(roots.length === 0 ? [`${id}/`] : roots.map((r) => `${id}/${r}`)));
      }
      return {
        plugins: Object.keys(snapshot.contents.plugins).sort(),
        opIds: snapshot.contents.variants.map((v) => v.op_id),
        installRoots,
        schemaFiles: await list(layout.schemaStoreDir),
        staging: await list(layout.stagingDir),
        owners: Object.fromEntries(Object.entries(snapshot.contents.namespace_owners).map(([id, o]) => [id, o.namespace_owner])),
      };
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Edits the `manifest.json` of a package directory. */
export async function editManifest(pkg: string, edit: (manifest: Record<string, unknown>) => void): Promise<void> {
  const path = join(pkg, 'manifest.json');
  const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  edit(manifest);
  await writeFile(path, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** A gzip-compressed tar of a directory's content (modes kept), as `tar czf` would write it. */
export async function tgzOfDirectory(dir: string, file: string): Promise<Buffer> {
  await tar.c({ gzip: true, file, cwd: dir, portable: true }, await readdir(dir));
  return readFile(file);
}

/** A zip of a directory's content with unix modes, as `zip -r` would write it. */
export async function zipOfDirectory(dir: string, file: string): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const walk = async (at: string): Promise<void> => {
    for (const name of (await readdir(at)).sort()) {
      const path = join(at, name);
      const info = await stat(path);
      const stored = relative(dir, path).split('\\').join('/');
      if (info.isDirectory()) {
        zip.addEmptyDirectory(stored, { mode: info.mode });
        await walk(path);
      } else {
        zip.addBuffer(await readFile(path), stored, { mode: info.mode });
      }
    }
  };
  await walk(dir);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  await writeFile(file, bytes);
  return bytes;
}

/** The value of an ok result, or a test failure naming the error. */
export function unwrap<T>(result: Result<T, HostError>): T {
  if (result.isErr()) expect.fail(`${result.error.code}: ${result.error.message} ${JSON.stringify(result.error.details)}`);
  return result.value;
}

/** The error of a result that must have failed with `code`. */
export function refusedWith<T>(result: Result<T, HostError>, code: HostErrorCode): HostError {
  if (result.isOk()) expect.fail(`expected ${code}, but it succeeded`);
  expect(result.error.code, `${result.error.message} ${JSON.stringify(result.error.details)}`).toBe(code);
  return result.error;
}

/** The codes of `details.violations`, in order. */
export function violationCodes(error: HostError): string[] {
  const violations = (error.details as { violations?: Array<{ code: string }> } | undefined)?.violations ?? [];
  return violations.map((v) => v.code);
}

/** Asserts that a profile holds exactly what `installed` says and nothing a failed install could have left. */
export async function expectNothingBehind(profile: TestProfile, before: Census): Promise<void> {
  const after = await profile.census();
  expect(after).toEqual({ ...before, staging: [] });
}

/** The mode bits of a path. */
export const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

/** Runs a verified plugin, sends it `requests` as JSON lines, and returns its JSON replies once it closes stdout. */
export function converse(exe: VerifiedExecutable, requests: readonly object[]): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const child = spawn(exe.argv[0]!, exe.argv.slice(1), { cwd: exe.installRoot, stdio: ['pipe', 'pipe', 'pipe', ...exe.inheritFds] });
    exe.release();
    let stdout = '';
    let stderr = '';
    const replies: Array<Record<string, unknown>> = [];
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const lines = stdout.split('\n');
      stdout = lines.pop() ?? '';
      for (const line of lines) replies.push(JSON.parse(line) as Record<string, unknown>);
      if (replies.length === requests.length) child.stdin!.end();
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (replies.length === requests.length ? resolve(replies) : reject(new Error(`plugin exited ${code}: ${stderr}`))));
    for (const request of requests) child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', ...request })}\n`);
  });
}

/** The installed plugin's record, looked up in the store. */
export async function installed(profile: TestProfile, pluginId: string): Promise<InstalledPlugin | undefined> {
  return unwrap(await profile.store.lookup({ profile: 'test', plugin_id: pluginId }));
}
