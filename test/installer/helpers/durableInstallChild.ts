/**
 * One install through PluginHost, for the durable-install test to trace:
 *
 *   node durableInstallChild.mjs <profileDir> <package> durable|default
 *
 * opens a dev profile (durableInstall: true for `durable`), installs the
 * package without its canary and prints `root <install root>`; any failure
 * is printed as `error <code> <message>` with exit code 1.
 */
import { readdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { PluginHost } from '../../../src/host/PluginHost.js';

const [profileDir, source, mode] = process.argv.slice(2);
if (profileDir === undefined || source === undefined || (mode !== 'durable' && mode !== 'default')) throw new Error('usage: <profileDir> <package> durable|default');

const host = await PluginHost.open({ profileDir, profileKind: 'dev', durableInstall: mode === 'durable', sandbox: { proveAt: 'first_spawn' } });
if (host.isErr()) {
  process.stdout.write(`error ${host.error.code} ${host.error.message}\n`);
  process.exit(1);
}
const installed = await host.value.install(source, { canary: false });
await host.value.close();
if (installed.isErr()) {
  process.stdout.write(`error ${installed.error.code} ${installed.error.message}\n`);
  process.exit(1);
}
// The plugin's one install root: plugins/<id>/<version>-<nonce>.
const pluginDir = join(profileDir, 'plugins', installed.value.plugin.name);
process.stdout.write(`root ${join(realpathSync(pluginDir), readdirSync(pluginDir)[0] ?? '')}\n`);
