/**
 * The manifest a caller installs an npm package with describes one version (review s33 R9 F7): `wrap npm:foo` made
 * it for 1.0.0, a later `install npm:foo --manifest it.json` fetched 2.0.0 (published meanwhile), installed that
 * code under the reviewed tools and recorded version 1.0.0 for it (`info`: version 1.0.0, package …-2.0.0). A version
 * that differs is refused before anything is staged; the same version installs.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openNpmSource } from '../../src/installer/openNpmSource.js';
import { packServer } from './npmPack.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-reviewed-version-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

const reviewed = (version: string): Record<string, unknown> => ({
  manifest_schema_version: 1,
  plugin_id: 'reviewed-server',
  name: 'reviewed-server',
  version,
  namespace_owner: 'npm:reviewed-server',
  shape: 'mcp-plugin',
  executable: 'bin/server.mjs',
  advertised_tools: [{ name: 'look', description: 'Looks', risk_class: 'read' }],
  declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
});

it('refuses a manifest made for another version than the one npm fetched, and stages the same version', { timeout: 120_000 }, async () => {
  const tarball = await packServer(base, { name: 'reviewed-server', source: '#!/usr/bin/env node\n' });
  const stagingRoot = await mkdtemp(join(base, 'staging-'));
  const error = (await openNpmSource(`npm:${tarball}`, { stagingRoot, manifest: reviewed('0.9.0') }))._unsafeUnwrapErr();
  expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'manifest_conflict', manifest_version: '0.9.0', package_version: '1.0.0' } });
  expect(error.hint).toContain('npm:reviewed-server@0.9.0');
  expect(await readdir(stagingRoot)).toEqual([]);
  const staged = (await openNpmSource(`npm:${tarball}`, { stagingRoot, manifest: reviewed('1.0.0') }))._unsafeUnwrap();
  expect(staged.manifestOrigin).toBe('caller');
  await staged.discard();
});
