/**
 * Credentials, canaries and inventory output through PluginHost, with the
 * TOML-form canary plugin (needs_user_creds + credential descriptors) and
 * the probe plugin reporting what it can see from inside its sandbox.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { okAsync, type ResultAsync } from 'neverthrow';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostError } from '../../src/errors/HostError.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import type { SecretStore } from '../../src/secrets/SecretStore.js';
import { CREDENTIALS_ORIGIN_KEY } from '../../src/host/credentials.js';
import { pluginSearchPath } from '../../src/env/pluginPath.js';
import { FakeClock, HostPool, jsonOf, packaged, removePackages } from '../support/hostHarness.js';
import { readStateRow } from '../support/pluginState.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const DAY = 86_400_000;
const LOOKUP = 'plug.host-canary.lookup';
const GOOD = 'good-4f1e8d0c';
const BAD = 'bad-77aa';

/** Everything a host application could show or serve about the inventory, as one string. */
async function inventoryText(host: PluginHost): Promise<string> {
  const parts = [
    JSON.stringify((await host.list())._unsafeUnwrap()),
    ...(await Promise.all(['host-canary', 'host-probe'].map(async (id) => JSON.stringify((await host.info(id)).unwrapOr(null))))),
    (await host.resource('mcp-plugin-host://plugins'))._unsafeUnwrap().text,
    (await host.resource('mcp-plugin-host://plugin/host-canary'))._unsafeUnwrap().text,
  ];
  return parts.join('\n');
}

describe('needs_configuration and setup', () => {
  it('installs a credentialed plugin as needs_configuration, skips its canary, and clears it only after a live canary passes', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.open(dir, { clock });
    const installed = (await host.install(await packaged('canary')))._unsafeUnwrap();
    // needs_configuration outranks installed_pending_restart.
    expect(installed.plugin.status).toBe('needs_configuration');
    expect(installed.canary).toMatchObject({ mode: 'live', status: 'skipped', error: { code: 'PLUGIN_NEEDS_CONFIGURATION', details: { missing_aliases: ['booking-token'] } } });
    expect(await readStateRow(dir, 'host-canary')).toMatchObject({ status: 'needs_configuration', needs_configuration: true, canary: { status: 'skipped' } });
    expect(installed.plugin.credential_descriptors).toEqual([
      { alias: 'booking-token', kind: 'api_key', display_name: 'Booking API token', setup_hint: 'Create a token in the booking service settings' },
    ]);

    // A host opened later still refuses the plugin until setup.
    const later = await pool.open(dir, { clock });
    const refused = (await later.call(LOOKUP, { from: 'a', to: 'b', city: 'c' }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_NEEDS_CONFIGURATION', details: { credential_aliases: ['booking-token'] } });

    // Credentials the upstream refuses: the live canary fails, the plugin is held, and still needs configuration.
    const failed = (await later.setup('host-canary', { 'booking-token': BAD }))._unsafeUnwrap();
    expect(failed).toMatchObject({ mode: 'live', status: 'failed', error: { code: 'AUTH_REQUIRED' } });
    expect(await readStateRow(dir, 'host-canary')).toMatchObject({ status: 'quarantined', needs_configuration: true, quarantine_reason: 'canary_failed' });
    expect((await later.call(LOOKUP, {}))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');
    await later.unquarantine('host-canary');
    expect((await later.info('host-canary'))._unsafeUnwrap().status).toBe('needs_configuration');

    // Good credentials: the canary passes with its relative dates resolved by the host clock.
    const passed = (await later.setup('host-canary', { HOST_CANARY_TOKEN: GOOD }))._unsafeUnwrap();
    expect(passed).toMatchObject({ plugin_id: 'host-canary', mode: 'live', status: 'passed' });
    const iso = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
    expect(jsonOf({ value: passed.result, isError: false })).toMatchObject({
      data: { received: { from: iso(clock.now() + 7 * DAY), to: iso(clock.now() + 14 * DAY), city: 'Lisbon' } },
    });
    expect(await readStateRow(dir, 'host-canary')).toMatchObject({ status: 'active', needs_configuration: false, canary: { status: 'passed' } });
    expect((await later.call(LOOKUP, { from: '2026-02-01', to: '2026-02-03', city: 'Porto' })).isOk()).toBe(true);
    // The host that saw the install still treats it as pending a restart.
    expect((await host.info('host-canary'))._unsafeUnwrap().status).toBe('installed_pending_restart');
  });

  it('runs the install canary live when the credentials are already stored, and overrides canary arguments on request', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.open(dir, { clock, activation: 'immediate' });
    expect((await host.install(await packaged('canary'))).isOk()).toBe(true);
    expect((await host.setup('host-canary', { 'booking-token': GOOD }))._unsafeUnwrap().status).toBe('passed');
    // Removed without forgetting its secrets, then reinstalled: configured at once.
    expect((await host.remove('host-canary')).isOk()).toBe(true);
    const again = (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect(again.canary).toMatchObject({ mode: 'live', status: 'passed' });
    expect(again.plugin.status).toBe('active');

    const custom = (await host.canary('host-canary', { live: true, args: { from: '+1w', to: '+3d', city: 'Faro' } }))._unsafeUnwrap();
    expect(jsonOf({ value: custom.result, isError: false })).toMatchObject({
      data: { received: { from: new Date(clock.now() + 7 * DAY).toISOString().slice(0, 10), to: new Date(clock.now() + 3 * DAY).toISOString().slice(0, 10), city: 'Faro' } },
    });

    // Forgetting the secrets on remove brings needs_configuration back on reinstall.
    expect((await host.remove('host-canary', { forgetSecrets: true })).isOk()).toBe(true);
    expect((await host.install(await packaged('canary')))._unsafeUnwrap().plugin.status).toBe('needs_configuration');
    const skipped = (await host.canary('host-canary', { live: true }))._unsafeUnwrap();
    expect(skipped).toMatchObject({ status: 'skipped', error: { code: 'PLUGIN_NEEDS_CONFIGURATION' } });
  });

  it('accepts only declared credentials, by alias or env name, and never empty ones', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['canary']);
    for (const values of [{ OTHER_TOKEN: 'x' }, { 'booking-token': '' }, { 'booking-token': GOOD, extra: 'y' }]) {
      const refused = (await host.setup('host-canary', values))._unsafeUnwrapErr();
      expect(refused.code).toBe('HOST_INVALID_OPTIONS');
      expect(refused.message).not.toContain('OTHER_TOKEN');
      expect(JSON.stringify(refused.details)).not.toContain(GOOD);
    }
    expect((await host.setup('nobody', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
    expect((await host.info('host-canary'))._unsafeUnwrap().status).toBe('needs_configuration');
  });
});

describe('secrets stay secret', () => {
  it('keeps the file store at 0600 in a 0700 directory that the sandbox hides from every plugin', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['canary', 'probe']);
    expect((await host.setup('host-canary', { 'booking-token': GOOD }))._unsafeUnwrap().status).toBe('passed');
    const file = join(dir, 'secrets', 'host-canary.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'secrets'))).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ HOST_CANARY_TOKEN: GOOD, [CREDENTIALS_ORIGIN_KEY]: expect.any(String) });

    const read = jsonOf<{ data: { content?: string; error?: string } }>((await host.call('plug.host-probe.read_path', { path: file }))._unsafeUnwrap());
    expect(read.data.content).toBeUndefined();
    expect(['ENOENT', 'EACCES']).toContain(read.data.error);
  });

  it('never shows secret values or raw env names in list, info or the inventory resources', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['canary', 'probe']);
    const before = await inventoryText(host);
    expect((await host.setup('host-canary', { 'booking-token': GOOD }))._unsafeUnwrap().status).toBe('passed');
    const after = await inventoryText(host);
    for (const text of [before, after]) {
      expect(text).not.toContain(GOOD);
      expect(text).not.toContain('HOST_CANARY_TOKEN');
    }
    expect(after).toContain('booking-token');
    expect(after).toContain('Booking API token');
  });

  it('passes only the allowlist, the declared env_allow names and the declared credentials to a plugin', async () => {
    const dir = await pool.profile();
    const parentEnv = {
      PATH: '/usr/bin:/bin',
      LANG: 'C.UTF-8',
      // A locale category with a locale name passes; what an ssh client may send under other LC_ names, or as a path, does not.
      LC_MESSAGES: 'en_US.UTF-8',
      LC_CTYPE: '/tmp/a-locale-of-its-own',
      LC_SSH_SESSION: 'sent-by-an-ssh-client',
      PROBE_GREETING: 'hello',
      UNRELATED_SECRET: 'do-not-pass',
      ANTHROPIC_API_KEY: 'sk-never',
      HOST_CANARY_TOKEN: 'from-the-parent-environment',
    };
    const host = await pool.installed(dir, ['canary', 'probe'], { env: parentEnv });
    expect((await host.setup('host-canary', { 'booking-token': GOOD }))._unsafeUnwrap().status).toBe('passed');

    const canaryEnv = jsonOf<{ data: { env: Record<string, string> } }>((await host.call('plug.host-canary.env', {}))._unsafeUnwrap()).data.env;
    expect(canaryEnv).toMatchObject({ HOST_CANARY_TOKEN: GOOD, HOME: join(dir, 'data', 'host-canary'), PATH: pluginSearchPath('/usr/bin/node'), LANG: 'C.UTF-8' });
    expect(Object.keys(canaryEnv)).not.toContain('UNRELATED_SECRET');
    expect(Object.keys(canaryEnv)).not.toContain('ANTHROPIC_API_KEY');
    expect(Object.keys(canaryEnv)).not.toContain('PROBE_GREETING');

    const probeEnv = jsonOf<{ data: { env: Record<string, string> } }>((await host.call('plug.host-probe.env', {}))._unsafeUnwrap()).data.env;
    expect(probeEnv).toMatchObject({ PROBE_GREETING: 'hello', HOME: join(dir, 'data', 'host-probe'), LC_MESSAGES: 'en_US.UTF-8' });
    for (const name of ['LC_CTYPE', 'LC_SSH_SESSION']) expect(Object.keys(probeEnv)).not.toContain(name);
    for (const name of ['HOST_CANARY_TOKEN', 'UNRELATED_SECRET', 'ANTHROPIC_API_KEY']) expect(Object.keys(probeEnv)).not.toContain(name);
  });

  it('uses an injected SecretStore port instead of the file store, and passes it only declared names', async () => {
    const dir = await pool.profile();
    const saved = new Map<string, Record<string, string>>();
    const memory: SecretStore = {
      get: (id): ResultAsync<Readonly<Record<string, string>>, HostError> => okAsync({ ...saved.get(id) }),
      set: (id, values): ResultAsync<void, HostError> => okAsync(void saved.set(id, { ...saved.get(id), ...values })),
      delete: (id): ResultAsync<void, HostError> => okAsync(void saved.delete(id)),
    };
    const host = await pool.installed(dir, ['canary'], { secretStore: memory });
    expect((await host.setup('host-canary', { 'booking-token': GOOD }))._unsafeUnwrap().status).toBe('passed');
    // Declared names, and the origin of the package they were stored for, under a member no env name can be.
    expect(saved.get('host-canary')).toEqual({ HOST_CANARY_TOKEN: GOOD, [CREDENTIALS_ORIGIN_KEY]: expect.any(String) });
    await expect(stat(join(dir, 'secrets'))).rejects.toThrow();
    // A name stored behind the host's back is not declared, so the plugin never sees it.
    saved.set('host-canary', { ...saved.get('host-canary'), SMUGGLED: 'x' });
    await host.reload('host-canary');
    const env = jsonOf<{ data: { env: Record<string, string> } }>((await host.call('plug.host-canary.env', {}))._unsafeUnwrap()).data.env;
    expect(env.HOST_CANARY_TOKEN).toBe(GOOD);
    expect(Object.keys(env)).not.toContain('SMUGGLED');
  });
});

describe('inventory resources', () => {
  it('serves plugins rows sorted by name and plugin/{name} as MCP resource payloads', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe', 'canary'], { appName: 'agent' });
    expect(host.resourceDescriptors()).toEqual({
      resources: [{ uri: 'agent://plugins', name: 'plugins', description: expect.any(String), mimeType: 'application/json' }],
      resourceTemplates: [{ uriTemplate: 'agent://plugin/{name}', name: 'plugin', description: expect.any(String), mimeType: 'application/json' }],
    });
    const rows = (await host.resource('agent://plugins'))._unsafeUnwrap();
    expect(rows.mimeType).toBe('application/json');
    expect(JSON.parse(rows.text)).toEqual({
      plugins: [
        { name: 'host-canary', display_name: 'Host Canary', version: '1.2.0', shape: 'mcp-plugin', status: 'needs_configuration', tos: 'user-accepted', risk: 'Reads bookings through the service API', variant_count: 2 },
        { name: 'host-probe', display_name: 'Host Probe', version: '1.0.0', shape: 'mcp-plugin', status: 'active', tos: 'test-fixture', risk: 'Writes notes into its own data directory', variant_count: 8 },
      ],
    });
    const one = JSON.parse((await host.resource('agent://plugin/host-canary'))._unsafeUnwrap().text) as Record<string, unknown>;
    expect(one).toMatchObject({
      name: 'host-canary',
      status: 'needs_configuration',
      reason: 'credentials_missing',
      namespace_owner: 'io.example.host-canary',
      variant_ids: ['host-canary.lookup.v1', 'host-canary.env.v1'],
      operations: [
        { op_id: 'plug.host-canary.lookup', tool_name: 'lookup', risk_class: 'read', confirmation_policy: 'none' },
        { op_id: 'plug.host-canary.env', tool_name: 'report_env', risk_class: 'read', confirmation_policy: 'none' },
      ],
      enforced_capabilities: { backend: expect.stringMatching(/^(landlock|bubblewrap)$/), enforced: true, network: false, writablePaths: [join(dir, 'data', 'host-canary')] },
    });
    expect(one.metadata_warning).toBeUndefined();
    expect((await host.resource('agent://plugin/nobody'))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
    expect((await host.resource('agent://elsewhere'))._unsafeUnwrapErr().code).toBe('VARIANT_NOT_FOUND');
  });
});
