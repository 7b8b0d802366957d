/**
 * The CLI's grant flags and --setting on `install`, as a real subprocess:
 * the flags reach the install as one grant, a grant beyond the manifest is
 * refused with its code, settings reach an MCP Bundle, and the JSON output
 * shows what was granted and set.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { bundledServer } from '../support/mcpbBundles.js';
import { cli, json, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;
let probe: string;

beforeAll(async () => {
  probe = await packageFixturePlugin(join(REPO, 'fixtures/plugins/host-probe'), { bundle: ['bin/probe.mjs'] });
}, SLOW);
afterAll(() => rm(probe, { recursive: true, force: true }));

describe('install --grant-*', () => {
  it('refuses a grant beyond the declaration and records one within it', { timeout: SLOW }, async () => {
    const profile = await tempDir('cli-grant-');
    try {
      const base = ['install', probe, '--dev', '--skip-canary', '--profile-dir', profile.path, '--json'];
      const refused = await cli([...base, '--grant-network']);
      expect(refused.code).toBe(3);
      expect(json(refused)).toMatchObject({ ok: false, error: { code: 'PLUGIN_GRANT_EXCEEDS_DECLARATION' } });

      const installed = await cli([...base, '--grant-env', 'PROBE_GREETING']);
      expect(installed.code).toBe(0);
      expect(json(installed)).toMatchObject({
        ok: true,
        plugin: { granted_capabilities: { env_allow: ['PROBE_GREETING'], basis: 'declared', grant: { network: false, fs_write_dir: '', env_allow: ['PROBE_GREETING'] } } },
      });
    } finally {
      await profile.dispose();
    }
  });
});

describe('install --setting', () => {
  it('passes settings to an MCP Bundle, and refuses a malformed pair as a usage error', { timeout: SLOW }, async () => {
    const [profile, bundle] = [await tempDir('cli-setting-'), await tempDir('cli-bundle-')];
    try {
      await mkdir(join(bundle.path, 'server'));
      await bundledServer(join(REPO, 'fixtures/plugins/host-probe/bin/probe.mjs'), join(bundle.path, 'server/probe.mjs'));
      const tools = ['echo', 'crash', 'env', 'read_path', 'fail', 'write_note', 'rename_note', 'wipe'].map((name) => ({ name }));
      await writeFile(
        join(bundle.path, 'manifest.json'),
        JSON.stringify({
          manifest_version: '0.3',
          name: 'cli-bundle',
          version: '1.0.0',
          description: 'probe',
          author: { name: 'Tests' },
          server: { type: 'node', entry_point: 'server/probe.mjs', mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs'], env: { TAGS: '${user_config.tags}' } } },
          tools,
          user_config: { tags: { type: 'string', title: 'Tags', description: 'a list', multiple: true, required: true } },
        }),
      );
      const base = ['install', bundle.path, '--dev', '--skip-canary', '--profile-dir', profile.path, '--json'];
      expect((await cli([...base, '--setting', 'tags'])).code).toBe(2);
      const installed = await cli([...base, '--setting', 'tags=a', '--setting', 'tags=b']);
      expect(installed.code).toBe(0);
      expect(json(installed)).toMatchObject({ ok: true, plugin: { name: 'cli-bundle', settings: { tags: ['a', 'b'] }, missing_settings: [] } });
      const info = await cli(['info', 'cli-bundle', '--dev', '--profile-dir', profile.path, '--no-color']);
      expect(info.stdout).toMatch(/setting +tags = \["a","b"\]/);
    } finally {
      await profile.dispose();
      await bundle.dispose();
    }
  });
});
