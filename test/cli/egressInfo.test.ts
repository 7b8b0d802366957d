/**
 * The CLI with a destination list, as a real subprocess: `install
 * --grant-egress` narrows the host-egress fixture's declared list, and
 * `info` names the destinations as the plugin's only network.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { cli, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;
let plugin: string;

beforeAll(async () => {
  plugin = await packageFixturePlugin(join(REPO, 'fixtures/plugins/host-egress'), { bundle: ['bin/egress.mjs'] });
}, SLOW);
afterAll(() => rm(plugin, { recursive: true, force: true }));

describe('egress destinations on the command line', () => {
  it('installs with a narrowed list and shows it in info', { timeout: SLOW }, async () => {
    const profile = await tempDir('cli-egress-');
    try {
      const installed = await cli(['install', plugin, '--dev', '--skip-canary', '--profile-dir', profile.path, '--grant-egress', 'api.test:80']);
      expect(installed.code).toBe(0);
      const info = await cli(['info', 'host-egress', '--dev', '--profile-dir', profile.path]);
      expect(info.code).toBe(0);
      // The host's backend (auto: the Landlock launcher, built by the tests' setup) runs plugins with a list too.
      expect(info.stdout).toMatch(/sandbox\s+landlock, network only api\.test:80 \(egress proxy\)/);
    } finally {
      await profile.dispose();
    }
  });
});
