/**
 * A launch verifies the pinned code while its other checks run (the plugin's
 * user and directories, its credentials, its environment), and releases what
 * one half holds when the other fails; the catalog checks run beside the
 * launcher's own start and hold the plugin back until they passed. Real
 * PluginHost, real probe plugin in the default sandbox; the secret store is
 * held back to catch the launch between the two halves.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hostError, type HostError } from '../../src/errors/HostError.js';
import type { SecretStore } from '../../src/secrets/SecretStore.js';
import { eventually } from '../support/eventually.js';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { FIXTURES, HostPool, jsonOf, packaged } from '../support/hostHarness.js';

const pool = new HostPool();
const packages: string[] = [];
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(packages.map((dir) => rm(dir, { recursive: true, force: true }))));

const TOKEN = 'token-4f1e8d0c';

/** The probe plugin, declaring one credential (read from the secret store at each launch). */
async function credentialedProbe(): Promise<string> {
  const dir = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins', FIXTURES.probe.dir), { bundle: FIXTURES.probe.bundle });
  packages.push(dir);
  const manifest = join(dir, 'manifest.json');
  await writeFile(manifest, JSON.stringify({ ...(JSON.parse(await readFile(manifest, 'utf8')) as object), requirements: {
        needs_user_creds: ['PROBE_TOKEN'],
        credential_descriptors: [{ alias: 'probe-token', env: 'PROBE_TOKEN', kind: 'api_key', display_name: 'Probe token', setup_hint: 'Any value' }],
      },
    }));
  return dir;
}

/** The host's open descriptors on verified copies (unlinked files in the profile's exec directory). */
function verifiedCopiesHeld(): string[] {
  return readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    })
    .filter((target) => target.includes('/.verified-') && target.endsWith(' (deleted)'));
}

/** A secret store whose reads can be held until the test lets them go, with the outcome it chooses. */
function heldStore(): { store: SecretStore; hold: () => void; reading: () => boolean; release: (failure?: HostError) => void } {
  const saved = new Map<string, Record<string, string>>();
  let held = false;
  let waiting: ((failure: HostError | undefined) => void) | undefined;
  const store: SecretStore = {
    get: (id) => {
      const values = { ...saved.get(id) };
      if (!held) return okAsync(values);
      const released = new Promise<HostError | undefined>((resolve) => (waiting = resolve));
      return ResultAsync.fromSafePromise(released).andThen((failure) => (failure === undefined ? okAsync(values) : errAsync(failure)));
    },
    set: (id, values) => okAsync(void saved.set(id, { ...saved.get(id), ...values })),
    delete: (id) => okAsync(void saved.delete(id)),
  };
  return {
    store,
    hold: () => {
      held = true;
    },
    reading: () => waiting !== undefined,
    release: (failure) => {
      held = false;
      const resolve = waiting;
      waiting = undefined;
      resolve?.(failure);
    },
  };
}

describe('launch', () => {
  it('verifies the pinned code while the credentials are read, and releases the verified copy when a check then fails', async () => {
    const secrets = heldStore();
    const dir = await pool.profile();
    const installer = await pool.open(dir, { secretStore: secrets.store });
    const installed = await installer.install(await credentialedProbe(), { canary: false });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    const set = await installer.setup('host-probe', { PROBE_TOKEN: TOKEN });
    expect(set.isOk(), JSON.stringify(set)).toBe(true);
    const host = await pool.open(dir, { secretStore: secrets.store });

    secrets.hold();
    const failing = host.call('plug.host-probe.env', {});
    expect(await eventually(secrets.reading)).toBe(true);
    // The credentials are still being read, and the main module is already hashed and copied.
    expect(await eventually(() => verifiedCopiesHeld().length > 0)).toBe(true);
    secrets.release(hostError('HOST_IO_ERROR', 'the secret store is unreachable'));
    expect((await failing)._unsafeUnwrapErr().code).toBe('HOST_IO_ERROR');
    expect(verifiedCopiesHeld()).toEqual([]);

    // Both halves passing: the plugin runs with its credential.
    const answer = JSON.stringify(jsonOf((await host.call('plug.host-probe.env', {}))._unsafeUnwrap()));
    expect(answer).toContain(TOKEN);
    expect(verifiedCopiesHeld()).toEqual([]);
  });

  it('starts the launcher beside the catalog checks, and a failed check stops it before the plugin runs any code', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir);
    (await installer.install(await packaged('probe'), { canary: false }))._unsafeUnwrap();
    await installer.close();
    const home = join(dir, 'data', 'host-probe');
    await mkdir(home, { recursive: true });
    await writeFile(join(home, 'mode'), 'mark-start');
    const starts = async (): Promise<string[]> => (await readFile(join(home, 'starts'), 'utf8').catch(() => '')).split('\n').filter(Boolean);

    const host = await pool.open(dir);
    expect((await host.call('plug.host-probe.echo', { message: 'as installed' })).isOk()).toBe(true);
    expect(await starts()).toHaveLength(1);
    await host.close();

    const catalogFile = join(dir, 'plugin-catalog.json');
    const catalog = JSON.parse(await readFile(catalogFile, 'utf8')) as { plugins: Record<string, { capabilities: { env_allow: string[] } }> };
    catalog.plugins['host-probe']!.capabilities.env_allow.push('AWS_SECRET_ACCESS_KEY');
    await writeFile(catalogFile, JSON.stringify(catalog, null, 2));
    const logged: string[] = [];
    const record = (_fields: Record<string, unknown>, message: string): void => void logged.push(message);
    const edited = await pool.open(dir, { logger: { debug: record, info: record, warn: record, error: record } });
    const spawns: number[] = [];
    edited.events.on('spawn', (e) => spawns.push(e.pid));
    expect((await edited.call('plug.host-probe.echo', { message: 'widened' }))._unsafeUnwrapErr().code).toBe('PLUGIN_CAPABILITIES_MISMATCH');
    // The launcher was started before the check refused, and was stopped (its tree gone) before the plugin ran.
    expect(logged).toContain('spawning sandboxed plugin');
    expect(logged).not.toContain('plugin process started');
    expect(spawns).toEqual([]);
    expect(await starts()).toHaveLength(1);
  });
});
