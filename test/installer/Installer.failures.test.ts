/**
 * Failure injection at each install step, and the adversarial cases of the
 * issue, all through `install()` on real profiles. After every refusal the
 * profile holds exactly what it held before: no rows, no install root, no
 * schema file the install created, nothing in staging. Tampering after
 * install is caught by `verifyExecutableBinding` on the recorded lock.
 */
import { cp, mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyExecutableBinding } from '../../src/binding/ExecutableBinding.js';
import { PROFILE_LOCK_FILE } from '../../src/catalog/CatalogStore.js';
import { digestOf, tgzOf, zipOf, type TarMember } from './craftArchives.js';
import { editManifest, FIXTURES, installed, refusedWith, testProfile, unwrap, violationCodes, type Census, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
let before: Census;
afterEach(async () => {
  await p.dispose();
});

/** A profile with the greeter already installed, so that "nothing behind" also means "nothing else changed". */
const profileWithGreeter = async (...args: Parameters<typeof testProfile>): Promise<void> => {
  p = await testProfile(...args);
  unwrap(await p.installer.install(await p.copyFixture('install-node', 'greeter')));
  before = await p.census();
};
const expectUnchanged = async (): Promise<void> => {
  expect(await p.census()).toEqual(before);
};

/** The files of a fixture as tar members (modes kept), for hand-built hostile archives. */
const membersOf = async (fixture: string): Promise<TarMember[]> => {
  const out: TarMember[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const info = await stat(join(dir, name));
      if (info.isDirectory()) {
        out.push({ path: `${prefix}${name}/`, type: 'Directory' });
        await walk(join(dir, name), `${prefix}${name}/`);
      } else {
        out.push({ path: `${prefix}${name}`, data: await readFile(join(dir, name)), mode: info.mode & 0o777 });
      }
    }
  };
  await walk(join(FIXTURES, fixture), '');
  return out;
};

describe('failure injection: each step leaves nothing behind', () => {
  it('binding fails (a shell wrapper executable) after the schema files were written', async () => {
    await profileWithGreeter('dev');
    const error = refusedWith(await p.installer.install(await p.copyFixture('install-shell')), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(error.details).toMatchObject({ reason: 'shell_interpreter' });
    await expectUnchanged();
  });

  it('the transaction fails (profile lock held by a live foreign owner) after schema files and install root exist', async () => {
    await profileWithGreeter('dev');
    const store = await p.openStore({ lockTimeoutMs: 50 });
    const installer = p.installerWith({}, store);
    const owner = { pid: process.ppid, hostname: hostname(), started_at: new Date().toISOString(), started_at_ms: Date.now(), token: 'f'.repeat(32) };
    await writeFile(join(p.layout.root, PROFILE_LOCK_FILE), JSON.stringify(owner));
    const seen: { schemaFiles?: string[]; roots?: string[] } = {};
    const result = await installer.install(await p.copyFixture('install-schemas'), {
      // Runs just before the transaction: everything but the rows is in place.
      initialStatus: async () => {
        seen.schemaFiles = await readdir(p.layout.schemaStoreDir);
        seen.roots = await readdir(join(p.layout.pluginsDir, 'weather'));
        return 'installed_pending_restart' as const;
      },
    });
    const error = refusedWith(result, 'CATALOG_LOCK_TIMEOUT');
    expect(error.details).toMatchObject({ owner: { pid: process.ppid } });
    expect(seen.schemaFiles).toHaveLength(4);
    expect(seen.roots).toHaveLength(1);
    await rm(join(p.layout.root, PROFILE_LOCK_FILE));
    await expectUnchanged();
  });

  it('a schema file cannot be written: the ones already written are removed', async () => {
    await profileWithGreeter('dev');
    const pkg = await p.copyFixture('install-schemas');
    const schemas = unwrap(await p.installer.inspect(pkg)).report.manifest!.schemas;
    const last = schemas[schemas.length - 1]!;
    // A directory squatting on the last file's name makes its rename fail.
    const squatter = p.layout.schemaFile(last.ref, last.digest);
    await mkdir(squatter, { recursive: true });
    refusedWith(await p.installer.install(pkg), 'HOST_IO_ERROR');
    expect(await p.census()).toEqual({ ...before, schemaFiles: [squatter.split('/').pop()!] });
  });

  it('the initial-status hook throws', async () => {
    await profileWithGreeter('dev');
    const result = await p.installer.install(await p.copyFixture('install-schemas'), {
      initialStatus: () => {
        throw new Error('secret store unavailable');
      },
    });
    expect(refusedWith(result, 'HOST_IO_ERROR').message).toContain('secret store unavailable');
    await expectUnchanged();
  });

  it('the install root cannot be created: a directory already there is not deleted by the undo', async () => {
    p = await testProfile('dev', { random: { bytes: (n) => new Uint8Array(n).fill(7) } });
    const root = p.layout.installRoot('greeter', '1.0.0', '070707070707');
    await mkdir(root, { recursive: true });
    await writeFile(join(root, 'keep.txt'), 'not the installer’s');
    // Named by a live install (this process), so the collection of leftovers after the install keeps it too.
    const stage = join(p.layout.stagingDir, '.stage-other');
    await mkdir(stage, { recursive: true });
    await writeFile(join(stage, 'owner.json'), JSON.stringify({ pid: process.pid, hostname: hostname(), started_at_ms: Date.now(), install_root: root }));
    refusedWith(await p.installer.install(await p.copyFixture('install-node')), 'HOST_IO_ERROR');
    expect(await readFile(join(root, 'keep.txt'), 'utf8')).toBe('not the installer’s');
    expect(await p.census()).toMatchObject({ plugins: [], schemaFiles: [], staging: ['.stage-other'] });
  });

  it('a failed install of a plugin that reuses a schema body keeps the shared file', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-schemas')));
    before = await p.census();
    const pkg = await p.copyFixture('install-schemas', 'climate');
    await editManifest(pkg, (m) => {
      m.plugin_id = 'climate';
      m.namespace_owner = 'io.example.climate';
      m.executable = 'bin/run';
    });
    await writeFile(join(pkg, 'bin', 'run'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    refusedWith(await p.installer.install(pkg), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    await expectUnchanged();
  });
});

describe('adversarial packages through install()', () => {
  it('zip-slip: a traversing entry is refused and nothing is written outside', async () => {
    await profileWithGreeter('dev');
    const members = await membersOf('install-node');
    const zip = await zipOf([...members.filter((m) => m.type !== 'Directory').map((m) => ({ name: m.path, data: m.data ?? '', mode: 0o100000 | (m.mode ?? 0o644) })), { name: '../../evil.txt', data: 'pwned' }]);
    const archive = await p.file('slip.zip', zip);
    const error = refusedWith(await p.installer.install(archive, { checksum: digestOf(zip) }), 'PLUGIN_ARCHIVE_INVALID');
    expect(error.details).toMatchObject({ reason: 'traversal', entry: '../../evil.txt' });
    await expect(stat(join(p.layout.root, 'evil.txt'))).rejects.toThrow();
    await expect(stat(join(p.dir, 'evil.txt'))).rejects.toThrow();
    await expectUnchanged();
  });

  it('link entries: a tar symlink standing in for the executable is refused', async () => {
    await profileWithGreeter('dev');
    const members = (await membersOf('install-node')).filter((m) => m.path !== 'bin/greeter.mjs');
    const tgz = tgzOf([...members, { path: 'bin/greeter.mjs', type: 'SymbolicLink', linkpath: '/usr/bin/node' }]);
    const archive = await p.file('link.tgz', tgz);
    expect(refusedWith(await p.installer.install(archive, { checksum: digestOf(tgz) }), 'PLUGIN_ARCHIVE_INVALID').details).toMatchObject({ reason: 'symlink', entry: 'bin/greeter.mjs' });
    await expectUnchanged();
  });

  it('link entries: a zip entry with the symlink file type is refused', async () => {
    await profileWithGreeter('dev');
    const zip = await zipOf([{ name: 'manifest.json', data: '{}' }, { name: 'bin/greeter.mjs', data: '/usr/bin/node', mode: 0o120777 }]);
    const archive = await p.file('link.zip', zip);
    expect(refusedWith(await p.installer.install(archive, { checksum: digestOf(zip) }), 'PLUGIN_ARCHIVE_INVALID').details).toMatchObject({ reason: 'symlink' });
    await expectUnchanged();
  });

  it('archive bombs: over the extracted-bytes limit and over the entry limit', async () => {
    await profileWithGreeter('dev', { limits: { maxExtractedBytes: 256 * 1024, maxEntries: 32 } });
    const members = await membersOf('install-node');
    const bomb = tgzOf([...members, { path: 'zeros.bin', data: Buffer.alloc(4 * 1024 * 1024) }]);
    expect(bomb.length).toBeLessThan(64 * 1024);
    const bombPath = await p.file('bomb.tgz', bomb);
    expect(refusedWith(await p.installer.install(bombPath, { checksum: digestOf(bomb) }), 'PLUGIN_ARCHIVE_INVALID').details).toMatchObject({ reason: 'limit', limit: 'maxExtractedBytes' });
    const many = tgzOf([...members, ...Array.from({ length: 40 }, (_, i) => ({ path: `data/${i}.txt`, data: 'x' }))]);
    const manyPath = await p.file('many.tgz', many);
    expect(refusedWith(await p.installer.install(manyPath, { checksum: digestOf(many) }), 'PLUGIN_ARCHIVE_INVALID').details).toMatchObject({ reason: 'limit', limit: 'maxEntries' });
    await expectUnchanged();
  });

  it('schema_ref traversal is refused before any path is built from it', async () => {
    await profileWithGreeter('dev');
    const pkg = await p.copyFixture('install-schemas');
    await editManifest(pkg, (m) => {
      (m.advertised_tools as Array<Record<string, unknown>>)[0]!.schema_ref = '../../../etc/passwd';
    });
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_SCHEMA_REF_INVALID');
    expect(violationCodes(error)).toEqual(['PLUGIN_SCHEMA_REF_INVALID']);
    expect(error.details).toMatchObject({ violations: [{ pointer: '/advertised_tools/0/schema_ref' }] });
    await expectUnchanged();
  });
});

describe('tampering after install, caught by verifyExecutableBinding on the lock record', () => {
  it('a rewritten executable is refused with digest_mismatch and marked for quarantine', async () => {
    await profileWithGreeter('dev');
    const { binding } = (await installed(p, 'greeter'))!.lock;
    const copyDir = p.layout.execDir;
    unwrap(await verifyExecutableBinding(binding, { copyDir })).release();
    const file = join(binding.install_root, binding.executable_path);
    await writeFile(file, `${await readFile(file, 'utf8')}\nprocess.stdout.write('tampered');\n`);
    const error = refusedWith(await verifyExecutableBinding(binding, { copyDir }), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(error.details).toMatchObject({ reason: 'digest_mismatch', quarantine: true, expected_sha256: binding.executable_sha256 });
  });

  it('a link swapped in for the executable is refused even when it points at identical bytes', async () => {
    await profileWithGreeter('dev');
    const { binding } = (await installed(p, 'greeter'))!.lock;
    const file = join(binding.install_root, binding.executable_path);
    const elsewhere = join(p.dir, 'greeter-copy.mjs');
    await cp(file, elsewhere);
    await rm(file);
    await symlink(elsewhere, file);
    const error = refusedWith(await verifyExecutableBinding(binding, { copyDir: p.layout.execDir }), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(error.details).toMatchObject({ reason: 'link', quarantine: true });
  });

  it('an install root swapped for a link to a look-alike tree is refused', async () => {
    await profileWithGreeter('dev');
    const { binding } = (await installed(p, 'greeter'))!.lock;
    const lookAlike = join(p.dir, 'look-alike');
    await cp(binding.install_root, lookAlike, { recursive: true });
    await rename(binding.install_root, `${binding.install_root}.moved`);
    await symlink(lookAlike, binding.install_root);
    const error = refusedWith(await verifyExecutableBinding(binding, { copyDir: p.layout.execDir }), 'PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(error.details).toMatchObject({ reason: 'link', quarantine: true });
  });
});
