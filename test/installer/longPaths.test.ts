/**
 * A package whose paths fit in the staging directory but not below its
 * install root, whose path is longer by as much as the plugin id and the
 * version (the package's own choice) make it. Renamed there, its deepest
 * files could be neither pinned nor deleted (ENAMETOOLONG): the failed
 * install left that root behind, and every later collection of leftovers
 * failed on it. It is refused before anything is moved.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PATH_BYTES } from '../../src/installer/installPath.js';
import { paxHeader, tgzOf, type TarMember } from './craftArchives.js';
import { FIXTURES, refusedWith, testProfile, unwrap, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
afterEach(async () => {
  await p.dispose();
});

const FIXTURE = join(FIXTURES, 'install-node');

/** The install-node fixture as a tgz, at `version`, with one more file named `deep` (a PAX path). */
async function packageWith(version: string, deep: string): Promise<Buffer> {
  const manifest = JSON.parse(await readFile(join(FIXTURE, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  const members: TarMember[] = [{ path: 'manifest.json', data: JSON.stringify({ ...manifest, version }) }];
  for (const dir of ['bin', 'lib']) {
    for (const file of await readdir(join(FIXTURE, dir))) members.push({ path: `${dir}/${file}`, data: await readFile(join(FIXTURE, dir, file), 'utf8'), mode: 0o755 });
  }
  members.push(paxHeader({ path: deep }), { path: 'placeholder', data: 'x' });
  return tgzOf(members);
}

/** A `/`-separated name of about `bytes` bytes, in segments of 100. */
const deepName = (bytes: number): string => {
  const segments: string[] = [];
  while ((segments.length + 1) * 101 < bytes) segments.push('d'.repeat(100));
  return [...segments, 'f'.repeat(Math.max(1, bytes - segments.length * 101))].join('/');
};

describe('install roots that cannot hold the package\'s paths', () => {
  it('are refused before the package is moved there, and leave nothing behind', async () => {
    p = await testProfile('dev');
    // Fits below the staging directory (with room for its .stage-*/tree), not below plugins/greeter/<200-character version>-<nonce>.
    const deep = deepName(MAX_PATH_BYTES - Buffer.byteLength(p.layout.stagingDir) - 80);
    const archive = await p.file('deep.tgz', await packageWith(`1.0.0-${'a'.repeat(200)}`, deep));
    const before = await p.census();
    const refused = refusedWith(await p.installer.install(archive), 'PLUGIN_ARCHIVE_INVALID');
    expect(refused.details).toMatchObject({ reason: 'path_too_long', max: MAX_PATH_BYTES });
    expect(await p.census()).toEqual({ ...before, staging: [] });
    expect(unwrap(await p.installer.collectInstallLeftovers())).toBeDefined();

    // The same tree under a short version fits, and installs.
    const fits = await p.file('fits.tgz', await packageWith('1.0.0', deep));
    unwrap(await p.installer.install(fits));
    expect((await p.census()).plugins).toEqual(['greeter']);
  });
});
