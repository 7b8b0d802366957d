/**
 * Which manifest an npm package is installed with: the package's own plugin
 * manifest, else the caller's, else a generated one. A package's own
 * manifest never silently replaces the one a caller reviewed, and a
 * `manifest.json` of some other tool (a web app manifest) is named as the
 * conflict it is instead of failing as a broken plugin manifest.
 */
import { execFileSync } from 'node:child_process';
import { readdir, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { openNpmSource } from '../../src/installer/openNpmSource.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-shipped-manifest-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

const CALLER_MANIFEST = { manifest_schema_version: 1, plugin_id: 'reviewed' };

/** Packs a package whose root holds `manifest.json` with `manifest` as its content. */
async function packWithManifest(name: string, manifest: unknown): Promise<string> {
  const dir = await mkdtemp(join(base, `${name}-`));
  const pkg = join(dir, name);
  await mkdir(pkg);
  await writeFile(join(pkg, 'index.js'), '#!/usr/bin/env node\n');
  await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version: '1.0.0', bin: { [name]: 'index.js' } }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${name}-1.0.0.tgz`);
}

describe('the manifest of an npm package', { timeout: 120_000 }, () => {
  it('refuses a package whose manifest.json is some other tool\'s, naming the file, and leaves no staging behind', async () => {
    const tarball = await packWithManifest('web-app', { name: 'Web App', start_url: '/', icons: [] });
    const stagingRoot = await mkdtemp(join(base, 'staging-'));
    const error = (await openNpmSource(`npm:${tarball}`, { stagingRoot, manifest: CALLER_MANIFEST }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'manifest_conflict', file: 'manifest.json' } });
    expect(error.message).toContain('not a plugin manifest');
    expect(await readdir(stagingRoot)).toEqual([]);
  });

  it('does not let the package\'s own plugin manifest replace the caller\'s', async () => {
    const tarball = await packWithManifest('ships-gum', { manifest_schema_version: 1, plugin_id: 'ships-gum' });
    const stagingRoot = await mkdtemp(join(base, 'staging-'));
    const error = (await openNpmSource(`npm:${tarball}`, { stagingRoot, manifest: CALLER_MANIFEST }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'manifest_conflict', file: 'manifest.json' } });
  });

  it('takes the package\'s own plugin manifest (GUM or MCP Bundle) when the caller gives none', async () => {
    for (const [name, manifest] of [
      ['ships-gum-alone', { manifest_schema_version: 1, plugin_id: 'ships-gum-alone' }],
      ['ships-bundle', { manifest_version: '0.3', name: 'ships-bundle', server: { type: 'node', entry_point: 'index.js' } }],
    ] as const) {
      const staged = (await openNpmSource(`npm:${await packWithManifest(name, manifest)}`, { stagingRoot: await mkdtemp(join(base, 'staging-')) }))._unsafeUnwrap();
      expect(staged).toMatchObject({ manifestOrigin: 'package', manifestFile: 'manifest.json' });
      await staged.discard();
    }
  });
});
