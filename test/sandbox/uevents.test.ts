/**
 * The kernel's device events (a NETLINK_KOBJECT_UEVENT socket) reach a plugin
 * with network only. Every plugin could open one, and on a host run as root
 * a plugin's own network namespace belongs to the initial user namespace, so
 * an offline plugin received every device event of the host (hotplug of USB,
 * block and input devices), which the /sys and /run it is shown hide. A
 * plugin with network keeps it (libudev's device monitor, as browsers use),
 * and may only receive: a forged event is refused. A real Python plugin in
 * each backend.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { HostPool, textOf } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

async function fixture(network: boolean): Promise<string> {
  const pkg = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/py-sandboxed-calls'));
  const manifest = JSON.parse(await readFile(join(pkg, 'manifest.json'), 'utf8')) as { declared_capabilities: { network: boolean } };
  manifest.declared_capabilities.network = network;
  await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
  return pkg;
}

describe.each(['landlock', 'bubblewrap'] as const)('device events (%s)', (backend) => {
  it('refuses an offline plugin the socket; one with network may open it but not send on it', { timeout: 120_000 }, async () => {
    const offline = await pool.open(await pool.profile(), { activation: 'immediate', sandbox: { backend } });
    const installed = await offline.install(await fixture(false), { canary: false });
    if (installed.isErr()) throw installed.error;
    const refused = (await offline.call('plug.py-sandboxed-calls.uevents', {}))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_TOOL_ERROR');
    expect(refused.message).toBe('[Errno 1] Operation not permitted');

    const networked = await pool.open(await pool.profile(), { activation: 'immediate', sandbox: { backend } });
    const granted = await networked.install(await fixture(true), { canary: false });
    if (granted.isErr()) throw granted.error;
    expect(textOf((await networked.call('plug.py-sandboxed-calls.uevents', {}))._unsafeUnwrap())).toBe('bound; send: [Errno 1] Operation not permitted');
  });
});
