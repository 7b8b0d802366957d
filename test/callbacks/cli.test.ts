/**
 * The CLI as a real subprocess: `install --grant-client-request` narrows what
 * the host-callbacks fixture declares, `info` shows what it got, and an
 * unknown kind fails the install with PLUGIN_CLIENT_REQUESTS_INVALID.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cli, tempDir } from '../cli/cliHarness.js';
import { callbackPackage, removeCallbackPackages } from './callbackPlugin.js';

const SLOW = 120_000;

afterAll(() => removeCallbackPackages());

describe('client requests on the command line', () => {
  it('installs with a narrowed list, shows it in info, and refuses an unknown kind', { timeout: SLOW }, async () => {
    const profile = await tempDir('cli-client-requests-');
    try {
      const plugin = await callbackPackage();
      const unknown = await cli(['install', plugin, '--dev', '--skip-canary', '--profile-dir', profile.path, '--grant-client-request', 'telepathy']);
      expect(unknown.code).not.toBe(0);
      expect(unknown.stderr + unknown.stdout).toContain('PLUGIN_CLIENT_REQUESTS_INVALID');
      const installed = await cli(['install', plugin, '--dev', '--skip-canary', '--profile-dir', profile.path, '--grant-client-request', 'roots', '--grant-client-request', 'sampling']);
      expect(installed.code, installed.stderr).toBe(0);
      const info = await cli(['info', 'host-callbacks', '--dev', '--profile-dir', profile.path]);
      expect(info.code).toBe(0);
      expect(info.stdout).toMatch(/client requests\s+roots, sampling \(answered by the host application\)/);
    } finally {
      await profile.dispose();
    }
  });
});
