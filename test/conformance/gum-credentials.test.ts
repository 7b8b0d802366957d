/**
 * Seed 001 (GUM plugin contract), credentials: `needs_user_creds` passed
 * through from the user's environment, the auth taxonomy, and the OS
 * keychain secret store. Real plugin processes in the real sandbox.
 */
import { execFile } from 'node:child_process';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { CREDENTIALS_ORIGIN_KEY } from '../../src/host/credentials.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { FileSecretStore } from '../../src/secrets/SecretStore.js';
import { gumTomlText, pairs } from '../manifest/helpers.js';
import { HostPool, jsonOf, packaged, removePackages } from '../support/hostHarness.js';
import { startKeyring, type KeyringSession } from '../support/keyring.js';
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

describe('seed 001 Deterministic Discovery: setup stores secrets in the OS keychain for the active profile', () => {
  let keyring: KeyringSession | undefined;
  afterEach(async () => {
    await keyring?.stop();
    keyring = undefined;
  });

  it('keychain: where a Secret Service answers, setup stores the credential there (no secrets file) and the plugin receives it', async () => {
    keyring = await startKeyring();
    const dir = await pool.profile();
    const host = await pool.open(dir, { env: keyring.env, activation: 'immediate' });
    (await host.install(await packaged('canary'), { canary: false }))._unsafeUnwrap();
    expect((await host.setup('host-canary', { 'booking-token': GOOD }))._unsafeUnwrap().status).toBe('passed');
    await expect(stat(join(dir, 'secrets'))).rejects.toThrow();
    const item = await promisify(execFile)('secret-tool', ['lookup', 'service', 'mcp-plugin-host', 'profile', dir, 'plugin', 'host-canary'], { env: keyring.env });
    // With the origin of the package they were stored for (review R2 F4), under a member no env name can be.
    expect(JSON.parse(item.stdout)).toEqual({ HOST_CANARY_TOKEN: GOOD, [CREDENTIALS_ORIGIN_KEY]: expect.any(String) });
    const seen = jsonOf<{ data: { env: Record<string, string> } }>((await host.call(ENV_OF_CANARY, {}))._unsafeUnwrap()).data.env;
    expect(seen.HOST_CANARY_TOKEN).toBe(GOOD);
  });

  it('keychain: credentials stored in the 0600 file before a keychain was available are still used, and move into the keychain on the next setup', async () => {
    keyring = await startKeyring();
    const dir = await pool.profile();
    const host = await pool.open(dir, { env: keyring.env, activation: 'immediate' });
    (await host.install(await packaged('canary'), { canary: false }))._unsafeUnwrap();
    // Stored by an older host for the plugin installed: values alone, no origin; the installed package keeps them.
    (await new FileSecretStore(dir).set('host-canary', { HOST_CANARY_TOKEN: 'good-from-file' }))._unsafeUnwrap();
    expect((await host.canary('host-canary', { live: true }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    expect((await host.setup('host-canary', {}))._unsafeUnwrap().status).toBe('passed');
    expect((await host.setup('host-canary', { 'booking-token': GOOD }))._unsafeUnwrap().status).toBe('passed');
    await expect(stat(join(dir, 'secrets', 'host-canary.json'))).rejects.toThrow();
  });
});

/** The TOML example with a compound auth declaration: the API key as a secret component, plus an account the user must set up. */
const COMPOUND = `
[[requirements.auth_components]]
id = "api_key"
kind = "secret"
credential = "fli"
display_name = "Flight API key"

[[requirements.auth_components]]
id = "billing"
kind = "external"
display_name = "A billing-enabled flights account"
setup_hint = "Enable billing in the flights console"
`;

function compoundToml(strategy = 'compound'): string {
  return gumTomlText().replace('cache_ttl = 300\n', `cache_ttl = 300\nauth_strategy = "${strategy}"\n`) + COMPOUND;
}

describe('seed 001 Manifest ABI, auth prerequisites: the auth_strategy / auth_components taxonomy', () => {
  const validator = new ManifestValidator({ preset: 'neutral' });

  it('auth_strategy / auth_components: a compound declaration is accepted and normalized, not refused as unknown properties', () => {
    const report = validator.inspectText(compoundToml(), { form: 'gum-toml' })._unsafeUnwrap();
    expect(report.violations).toEqual([]);
    const manifest = validator.validateText(compoundToml(), { form: 'gum-toml' })._unsafeUnwrap();
    expect(manifest.requirements.auth_strategy).toBe('compound');
    expect(manifest.requirements.auth_components).toEqual([
      { id: 'api_key', kind: 'secret', credential: 'fli', display_name: 'Flight API key' },
      { id: 'billing', kind: 'external', display_name: 'A billing-enabled flights account', setup_hint: 'Enable billing in the flights console' },
    ]);
  });

  it('auth_strategy / auth_components: declarations that do not fit together are PLUGIN_AUTH_INVALID', () => {
    const inspect = (text: string): Array<[string, string]> => pairs(validator.inspectText(text, { form: 'gum-toml' })._unsafeUnwrap().violations);
    // Components need the compound (or plugin_managed) strategy.
    expect(inspect(compoundToml('secrets'))).toEqual([['PLUGIN_AUTH_INVALID', '/requirements/auth_components']]);
    // A secret component names a credential descriptor's alias.
    expect(inspect(compoundToml().replace('credential = "fli"', 'credential = "nope"'))).toEqual([
      ['PLUGIN_AUTH_INVALID', '/requirements/auth_components/0/credential'],
      ['PLUGIN_AUTH_INVALID', '/requirements/credential_descriptors'],
    ]);
    // A compound plugin declares the setup canary that proves its credentials reach the accounts.
    const withoutCanary = compoundToml().replace(/\[requirements\.canary\][^[]*/, '');
    expect(inspect(withoutCanary)).toContainEqual(['PLUGIN_AUTH_INVALID', '/requirements/canary']);
  });
});

describe('seed 001 Manifest ABI, auth prerequisites, through PluginHost', () => {
  it('auth_components: an installed compound plugin shows its strategy, its secret components by alias and the external checklist; list and info show its display name', async () => {
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/host-canary'), { bundle: ['bin/canary.mjs'] });
    try {
      const toml = join(pkg, 'plugin.toml');
      const text = (await readFile(toml, 'utf8')).replace('cache_ttl = 60\n', 'cache_ttl = 60\nauth_strategy = "compound"\n');
      await writeFile(
        toml,
        `${text}
[[requirements.auth_components]]
id = "token"
kind = "secret"
credential = "booking-token"
display_name = "Booking API token"

[[requirements.auth_components]]
id = "account"
kind = "external"
display_name = "A booking account with API access"
setup_hint = "Ask the booking service to enable API access"
`,
      );
      const host = await pool.open(await pool.profile());
      const installed = (await host.install(pkg))._unsafeUnwrap();
      expect(installed.plugin).toMatchObject({ status: 'needs_configuration', display_name: 'Host Canary', auth_strategy: 'compound' });
      expect(installed.plugin.auth_components).toEqual([
        { id: 'token', kind: 'secret', credential: 'booking-token', display_name: 'Booking API token' },
        { id: 'account', kind: 'external', display_name: 'A booking account with API access', setup_hint: 'Ask the booking service to enable API access' },
      ]);
      expect(JSON.stringify(installed.plugin)).not.toContain('HOST_CANARY_TOKEN');
      expect((await host.list())._unsafeUnwrap()).toContainEqual(expect.objectContaining({ name: 'host-canary', display_name: 'Host Canary' }));
    } finally {
      await rm(pkg, { recursive: true, force: true });
    }
  });
});
