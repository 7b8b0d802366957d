/**
 * An npm server that fails its introspection start for want of a variable on
 * the env denylist (GITHUB_TOKEN, OPENAI_API_KEY) is not sent to
 * `--grant-env NAME`, which the host refuses for such a name: the hint names
 * the variable and the credential way (`setup <plugin> --set NAME=-` after an
 * install with a manifest declaring it), or says no plugin ever gets it.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// As @modelcontextprotocol/server-github does without its token: say which variable is missing and exit 1.
const needs = (name: string): string => `#!/usr/bin/env node
if (process.env.${name} === undefined) { process.stderr.write('Error: ${name} environment variable is not set\\n'); process.exit(1); }
`;

describe('the introspection hint for a variable the host never passes', { timeout: 120_000 }, () => {
  it('points a storable name at setup --set NAME=-, and the grant it would try is refused', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'needs-github-token', source: needs('GITHUB_TOKEN') });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: { GITHUB_TOKEN: 'ghp_not-passed', PATH: process.env.PATH } });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(error.hint).toMatch(/^Its output names GITHUB_TOKEN, on the host's env denylist: .* --grant-env GITHUB_TOKEN \(env_allow\) is refused\./);
    expect(error.hint).toContain('declares GITHUB_TOKEN under requirements.needs_user_creds');
    expect(error.hint).toContain('`setup needs-github-token --set GITHUB_TOKEN=-`');
    // What the old hint told the user to do is refused, as the new one says.
    const granted = (await host.install(`npm:${tarball}`, { canary: false, grant: { env_allow: ['GITHUB_TOKEN'] } }))._unsafeUnwrapErr();
    expect(granted.code).toBe('PLUGIN_ENV_PROHIBITED');
  });

  it('says a name no plugin ever receives has no way in, and names no setup', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'needs-openai-key', source: needs('OPENAI_API_KEY') });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.wrap(`npm:${tarball}`))._unsafeUnwrapErr();
    expect(error.hint).toMatch(/^Its output names OPENAI_API_KEY, on the host's env denylist/);
    expect(error.hint).toContain('No plugin ever receives OPENAI_API_KEY');
    expect(error.hint).not.toContain('setup needs-openai-key');
  });
});
