/**
 * The CLI's `run` of a plugin installed with `--grant-env TOKEN`, from a
 * shell where TOKEN is unset: a real npm server that exits 1 at start
 * without it. The error names the variable (hint, details.unset_env), and
 * the plugin is not quarantined: `run` from a shell that sets it answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packServer, TOKEN_SERVER } from '../npm/npmPack.js';
import { cli, json, tempDir } from './cliHarness.js';

const SLOW = 120_000;
let packs: Awaited<ReturnType<typeof tempDir>>;
let tarball: string;

beforeAll(async () => {
  packs = await tempDir('cli-unset-env-pack-');
  tarball = await packServer(packs.path, { name: 'token-server', source: TOKEN_SERVER });
}, SLOW);
afterAll(() => packs.dispose());

describe('run without a granted env variable', () => {
  it('names it, and the plugin answers once the shell sets it', { timeout: SLOW }, async () => {
    const profile = await tempDir('cli-unset-env-');
    try {
      const token = { env: { TOKEN: 'tok-cli-unset-env' } };
      const installed = await cli(['install', `npm:${tarball}`, '--grant-env', 'TOKEN', '--skip-canary', '--yes', '--profile-dir', profile.path, '--json'], token);
      expect(installed.code, installed.stderr).toBe(0);

      const run = ['run', 'token-server', 'whoami', '--max-risk', 'destructive', '--profile-dir', profile.path];
      const failed = await cli([...run, '--json'], { env: { TOKEN: undefined } });
      expect(failed.code).not.toBe(0);
      const error = (json(failed) as { error: { code: string; hint: string; details: Record<string, unknown> } }).error;
      expect(error).toMatchObject({ code: 'PLUGIN_CRASHED', details: { unset_env: ['TOKEN'] } });
      expect(error.hint).toContain('TOKEN was not set in the environment the host started it from');
      const told = await cli(run, { env: { TOKEN: undefined } });
      expect(told.stderr).toContain('TOKEN was not set in the environment the host started it from');

      const listed = json(await cli(['info', 'token-server', '--profile-dir', profile.path, '--json'])) as { plugin?: { status?: string } };
      expect(listed.plugin?.status).toBe('active');
      const answered = await cli(run, token);
      expect(answered.code, answered.stderr).toBe(0);
      expect(answered.stdout).toContain('token of 17 characters');
    } finally {
      await profile.dispose();
    }
  });
});
