/**
 * A plugin whose install grants an env name from the host's environment
 * (env_allow, --grant-env), started by a host whose environment lacks it: a
 * real npm server that exits 1 at start without its TOKEN (as airtable and
 * lara-mcp do without their API keys). The failure names the variable and the
 * remedy, lists it in details.unset_env, and is not counted toward quarantine:
 * the next host given the variable calls it at once.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packServer, TOKEN_SERVER } from '../npm/npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const SLOW = { timeout: 120_000 };
const withToken = { ...process.env, TOKEN: 'tok-unset-env-test' };
const withoutToken = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'TOKEN'));

/** A profile with the token server installed, granted TOKEN, by a host whose environment set it. */
async function installedTokenServer(): Promise<string> {
  const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
  const dir = await pool.profile();
  const installer = await pool.open(dir, { profileKind: 'standard', env: withToken });
  const installed = await installer.install(`npm:${tarball}`, { canary: false, grant: { network: false, fs_write_dir: '', env_allow: ['TOKEN'] } });
  expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
  await installer.close();
  return dir;
}

describe('a start without a granted env variable', SLOW, () => {
  it('names the unset variable in the hint and details.unset_env, and does not quarantine the plugin', async () => {
    const dir = await installedTokenServer();
    const bare = await pool.open(dir, { profileKind: 'standard', env: withoutToken });
    const error = (await bare.call('plug.token-server.whoami', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_CRASHED', details: { unset_env: ['TOKEN'], stderr_tail: 'TOKEN is not set\n' } });
    expect(error.hint).toContain('TOKEN was not set in the environment the host started it from');
    expect(error.hint).toContain('export TOKEN=');
    // Still the crash's own advice after it.
    expect(error.hint).toContain('details.stderr_tail');

    // A configuration problem, not the plugin's crash: no backoff.
    const info = (await bare.info('token-server'))._unsafeUnwrap();
    expect(info.status).not.toBe('quarantined');
    expect(info.quarantined_at).toBeNull();
    // The same host asked again fails the same diagnosed way, not VARIANT_QUARANTINED.
    const again = (await bare.call('plug.token-server.whoami', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(again).toMatchObject({ code: 'PLUGIN_CRASHED', details: { unset_env: ['TOKEN'] } });
    await bare.close();

    const given = await pool.open(dir, { profileKind: 'standard', env: withToken });
    const called = await given.call('plug.token-server.whoami', {}, { maxRisk: 'destructive' });
    expect(textOf(called._unsafeUnwrap())).toBe(`token of ${withToken.TOKEN.length} characters`);
  });

  it('names it when tools() starts the plugin, which is not quarantined either', async () => {
    const dir = await installedTokenServer();
    const bare = await pool.open(dir, { profileKind: 'standard', env: withoutToken });
    const error = (await bare.tools('token-server'))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_CRASHED', details: { unset_env: ['TOKEN'] } });
    expect(error.hint).toContain('TOKEN was not set in the environment the host started it from');
    expect((await bare.info('token-server'))._unsafeUnwrap().quarantined_at).toBeNull();
  });
});
