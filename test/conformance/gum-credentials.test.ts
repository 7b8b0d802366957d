/**
 * Seed 001 (GUM plugin contract), credentials: `needs_user_creds` passed
 * through from the user's environment, the auth taxonomy, and the OS
 * keychain secret store. Real plugin processes in the real sandbox.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, jsonOf, packaged, removePackages } from '../support/hostHarness.js';
import { readStateRow } from '../support/pluginState.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const GOOD = 'good-env-51c2';
const ENV_OF_CANARY = 'plug.host-canary.env';

describe('seed 001 Manifest ABI, needs_user_creds: passed through from the user environment', () => {
  it('needs_user_creds: a host that opts in takes the declared credential from the environment; the plugin is configured at install and sees it', async () => {
    const dir = await pool.profile();
    const env = { PATH: '/usr/bin:/bin', HOST_CANARY_TOKEN: GOOD, UNDECLARED_TOKEN: 'never' };
    const host = await pool.open(dir, { credentialsFromEnv: true, env, activation: 'immediate' });
    const installed = (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect(installed.plugin.status).toBe('active');
    expect(installed.canary).toMatchObject({ mode: 'live', status: 'passed' });
    expect(await readStateRow(dir, 'host-canary')).toMatchObject({ needs_configuration: false });
    const seen = jsonOf<{ data: { env: Record<string, string> } }>((await host.call(ENV_OF_CANARY, {}))._unsafeUnwrap()).data.env;
    expect(seen.HOST_CANARY_TOKEN).toBe(GOOD);
    expect(Object.keys(seen)).not.toContain('UNDECLARED_TOKEN');

    // Without the opt-in the same environment is not read: the plugin needs configuration.
    const plain = await pool.open(await pool.profile(), { env });
    const unconfigured = (await plain.install(await packaged('canary')))._unsafeUnwrap();
    expect(unconfigured.plugin.status).toBe('needs_configuration');
    expect(unconfigured.canary).toMatchObject({ status: 'skipped', error: { code: 'PLUGIN_NEEDS_CONFIGURATION' } });
  });

  it('needs_user_creds: a value set in the environment wins over the stored one', async () => {
    const dir = await pool.profile();
    const stored = await pool.open(dir, { activation: 'immediate' });
    (await stored.install(await packaged('canary'), { canary: false }))._unsafeUnwrap();
    expect((await stored.setup('host-canary', { 'booking-token': 'good-stored' }))._unsafeUnwrap().status).toBe('passed');
    await stored.close();
    const host = await pool.open(dir, { credentialsFromEnv: true, env: { PATH: '/usr/bin:/bin', HOST_CANARY_TOKEN: GOOD } });
    const seen = jsonOf<{ data: { env: Record<string, string> } }>((await host.call(ENV_OF_CANARY, {}))._unsafeUnwrap()).data.env;
    expect(seen.HOST_CANARY_TOKEN).toBe(GOOD);
  });
});
