/**
 * The keychain store against a real Secret Service (GNOME Keyring on a
 * private session bus): names that look like options to `secret-tool`.
 */
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
