/**
 * A second host process on a test profile, for the schema-collection tests.
 *
 *   node installerChild.mjs <profileDir> install <package>
 *     installs the package; its initial-status hook (which runs after the
 *     schema files are stored and pinned, before the catalog transaction)
 *     prints `stored` and waits for a `go` line on stdin. Prints `committed`
 *     when install() returns.
 *   node installerChild.mjs <profileDir> remove <pluginId>
 *     removes the plugin (which collects the schema store) and prints `removed`.
 *
 * Any failure is printed as `error <code> <message>` with exit code 1.
 */
import { createInterface } from 'node:readline';
import { CatalogStore } from '../../../src/catalog/CatalogStore.js';
import { EnvDenylist } from '../../../src/env/EnvDenylist.js';
import { Installer } from '../../../src/installer/Installer.js';
import { NamespaceLock } from '../../../src/namespace/NamespaceLock.js';
import { ProfileLayout } from '../../../src/profile/ProfileLayout.js';

const [profileDir, command, argument] = process.argv.slice(2);
if (profileDir === undefined || argument === undefined) throw new Error('usage: <profileDir> install|remove <arg>');

const lines = createInterface({ input: process.stdin });
const nextLine = (): Promise<string> => new Promise((resolve) => lines.once('line', resolve));

const fail = (code: string, message: string): never => {
  process.stdout.write(`error ${code} ${message}\n`);
  process.exit(1);
};

const store = await CatalogStore.open({ profileDir, profile: 'test' });
if (store.isErr()) fail(store.error.code, store.error.message);
const installer = new Installer({
  store: store._unsafeUnwrap(),
  layout: new ProfileLayout(profileDir),
  envDenylist: new EnvDenylist({ preset: 'gum' }),
  namespaceLock: new NamespaceLock({ profileKind: 'dev' }),
  profileKind: 'dev',
});

if (command === 'install') {
  const installed = await installer.install(argument, {
    initialStatus: async () => {
      process.stdout.write('stored\n');
      await nextLine();
      return 'installed_pending_restart' as const;
    },
  });
  if (installed.isErr()) fail(installed.error.code, installed.error.message);
  process.stdout.write('committed\n');
} else {
  const removed = await installer.remove(argument);
  if (removed.isErr()) fail(removed.error.code, removed.error.message);
  process.stdout.write('removed\n');
}
lines.close();
