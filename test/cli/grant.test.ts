/**
 * The CLI's grant flags on `install`, as a real subprocess: they reach the
 * install as one grant, a grant beyond the manifest is refused with its code,
 * and the JSON output shows what was granted.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
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
