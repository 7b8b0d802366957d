/**
 * The keychain store against a real Secret Service (GNOME Keyring on a
 * private session bus): names that look like options to `secret-tool`.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, expect, it } from 'vitest';
import { KeychainSecretStore } from '../../src/secrets/KeychainSecretStore.js';
import { startKeyring, type KeyringSession } from '../support/keyring.js';

let keyring: KeyringSession | undefined;
afterEach(async () => {
  await keyring?.stop();
  keyring = undefined;
});

it('stores, reads and deletes the item of a plugin id and a profile that start with "-" (attribute values, never secret-tool options)', async () => {
  keyring = await startKeyring();
  const store = new KeychainSecretStore({ profileDir: '-profile', appName: 'mcp-plugin-host-test', env: keyring.env });
  (await store.set('-plugin', { TOKEN: 'dash-1' }))._unsafeUnwrap();
  expect((await store.get('-plugin'))._unsafeUnwrap()).toEqual({ TOKEN: 'dash-1' });
  (await store.delete('-plugin'))._unsafeUnwrap();
  expect((await store.get('-plugin'))._unsafeUnwrap()).toEqual({});
});

it('says an item that is not JSON is unreadable without quoting it (stored there by another program)', async () => {
  keyring = await startKeyring();
  const store = new KeychainSecretStore({ profileDir: '/profile', appName: 'mcp-plugin-host-test', env: keyring.env });
  const stored = spawnSync('secret-tool', ['store', '--label', 'raw', 'service', 'mcp-plugin-host-test', 'profile', '/profile', 'plugin', 'raw'], {
    env: keyring.env,
    input: 'sk-live-abcdef123456',
  });
  expect(stored.status).toBe(0);
  const failure = (await store.get('raw'))._unsafeUnwrapErr();
  expect(failure.code).toBe('HOST_IO_ERROR');
  expect([failure.message, failure.hint, JSON.stringify(failure.details), String((failure.cause as Error | undefined)?.message)].join('\n')).not.toContain('sk-live');
  expect(failure.message).toContain('is not a JSON object');
});
