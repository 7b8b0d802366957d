/**
 * A launch verifies the pinned code while its other checks run (the plugin's
 * user and directories, its credentials, its environment), and releases what
 * one half holds when the other fails. Real PluginHost, real canary plugin in
 * bubblewrap; the secret store is held back to catch the launch between the two.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hostError, type HostError } from '../../src/errors/HostError.js';
import type { SecretStore } from '../../src/secrets/SecretStore.js';
import { eventually } from '../support/eventually.js';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { FIXTURES, HostPool, jsonOf } from '../support/hostHarness.js';

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
});
