/**
 * npm runs on the staging project alone, whatever lies above it: npm takes a
 * directory above its working directory whose package.json lists
 * workspaces matching it as the project root, reads that directory's
 * `.npmrc` as project configuration and installs there. A package.json
 * planted above a profile (a profile under /tmp, a home directory that is
 * a workspace root) must neither configure npm nor receive the install.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchNpmPackage, parseNpmSpec } from '../../src/installer/npmFetch.js';
import { packGreeterServer } from './npmPack.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-config-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

describe('npm configuration isolation', { timeout: 120_000 }, () => {
  it('installs into the staging project under a workspace root planted above it, reading none of its configuration', async () => {
    const planted = join(base, 'shared');
    await mkdir(planted);
    const rootManifest = JSON.stringify({ name: 'planted-root', private: true, workspaces: ['**'] });
    await writeFile(join(planted, 'package.json'), rootManifest);
    // A project setting npm's command line does not override: read, it would leave nothing installed.
    await writeFile(join(planted, '.npmrc'), 'dry-run=true\n');
    const tarball = await packGreeterServer(base, join(base, 'scripts-ran'));
    const work = join(planted, 'profile', 'staging', 'stage', 'npm');
    await mkdir(work, { recursive: true });
    const fetched = await fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work);
    expect(fetched._unsafeUnwrap()).toMatchObject({ name: 'greeter-npm', version: '1.0.0', dir: join(work, 'project', 'node_modules', 'greeter-npm') });
    expect(await readFile(join(planted, 'package.json'), 'utf8')).toBe(rootManifest);
    expect(existsSync(join(planted, 'node_modules'))).toBe(false);
    expect(existsSync(join(planted, 'package-lock.json'))).toBe(false);
  });
});
