/**
 * A destination list through PluginHost: the host-egress fixture declares
 * `api.test:80` and `*.example.test`; installed, it reaches a listed host
 * through the host's proxy (a loopback origin behind the resolver hook),
 * is refused others, every connection is a host `egress` event, and info()
 * reports the list as the plugin's only way out. An install grant narrows
 * the list.
 */
import { describe, expect, it } from 'vitest';
import type { EgressEvent } from '../../src/egress/EgressProxy.js';
import { egressTestOrigin } from '../support/egressOrigin.js';
import { jsonOf, packaged, type HostPool } from '../support/hostHarness.js';

const { pool, resolver } = egressTestOrigin((name) => name === 'api.test' || name.endsWith('.example.test') || name === 'other.test');

async function get(host: Awaited<ReturnType<HostPool['open']>>, url: string): Promise<Record<string, unknown>> {
  return jsonOf<{ data: Record<string, unknown> }>((await host.call('plug.host-egress.get', { url }))._unsafeUnwrap()).data;
}

// Real sandboxes and subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('egress destinations through PluginHost', { timeout: 120_000 }, () => {
  it('lets the plugin reach its declared destinations only, reports each connection as a host event, and shows the list in info', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['egress'], { sandbox: { egressResolver: resolver } });
    const events: EgressEvent[] = [];
    host.events.on('egress', (event) => events.push(event));

    expect(await get(host, 'http://api.test/status')).toEqual({ status: 200, body: 'origin api.test/status' });
    expect(await get(host, 'http://eu.example.test/x')).toEqual({ status: 200, body: 'origin eu.example.test/x' });
    expect(await get(host, 'http://other.test/')).toEqual({ status: 403, body: '' });
    expect(await get(host, 'http://api.test:8080/')).toEqual({ status: 403, body: '' });
    expect(events).toEqual([
      { plugin_id: 'host-egress', allowed: true, method: 'GET', host: 'api.test', port: 80, address: '203.0.113.30' },
      { plugin_id: 'host-egress', allowed: true, method: 'GET', host: 'eu.example.test', port: 80, address: '203.0.113.30' },
      { plugin_id: 'host-egress', allowed: false, method: 'GET', host: 'other.test', port: 80, reason: 'not_listed' },
      { plugin_id: 'host-egress', allowed: false, method: 'GET', host: 'api.test', port: 8080, reason: 'not_listed' },
    ]);

    const info = (await host.info('host-egress'))._unsafeUnwrap();
    expect(info.enforced_capabilities).toMatchObject({ network: false, unixSocketsBlocked: true, egress: ['api.test:80', '*.example.test'] });
  });

  it('runs the plugin with the narrower list an install grant gives', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir);
    (await installer.install(await packaged('egress'), { canary: false, grant: { egress: ['eu.example.test:80'] } }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(dir, { sandbox: { egressResolver: resolver } });
    expect(await get(host, 'http://eu.example.test/granted')).toEqual({ status: 200, body: 'origin eu.example.test/granted' });
    expect(await get(host, 'http://api.test/declared-only')).toEqual({ status: 403, body: '' });
    const info = (await host.info('host-egress'))._unsafeUnwrap();
    expect(info.enforced_capabilities).toMatchObject({ egress: ['eu.example.test:80'] });
    expect(info.granted_capabilities).toMatchObject({ egress: ['eu.example.test:80'], basis: 'declared', grant: { egress: ['eu.example.test:80'] } });
  });
});
