/**
 * Resource subscriptions through the gateway over HTTP, with the SDK's own
 * Client and a real SDK server plugin (fixtures/plugins/host-surface) in the
 * sandbox: each client holds at most its cap, and when a session ends its
 * subscriptions go with it, the plugin being unsubscribed once no client
 * holds the resource.
 */
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { serveGateway } from '../../src/index.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools, type HttpClient, requestErrorCode } from '../support/gatewayHarness.js';
import { FakeClock } from '../support/hostHarness.js';
import { pluginNodeProcess } from '../support/processes.js';

const TIMEOUT_MS = 120_000;
const ID = 'host-surface';
const TOKEN = 'subscriptions-test-token-0123456789';
const { pool, gateways } = gatewayTestPools();

async function installedHost(clock?: FakeClock): Promise<PluginHost> {
  const dir = await pool.profile();
  await pool.install(dir, ['surface']);
  return pool.open(dir, { idleTimeoutMs: 0, ...(clock === undefined ? {} : { clock }) });
}

/** A subscriber connected over HTTP, with the URIs of the resource updates it has received. */
async function connect(url: string): Promise<HttpClient & { readonly updates: string[] }> {
  const connected = await gateways.connectHttp(url, TOKEN, 'subscriber');
  const updates: string[] = [];
  connected.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  return { ...connected, updates };
}

describe('gateway resource subscriptions', () => {
  it(
    'caps the subscriptions of each client, and unsubscribes the plugin when the last session holding a resource ends',
    async () => {
      const host = await installedHost();
      const stderr: string[] = [];
      host.events.on('stderr', (e) => stderr.push(e.line));
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 }, maxSubscriptionsPerClient: 2 });
      const url = served.url!;
      const first = await connect(url);
      const second = await connect(url);

      await first.client.subscribeResource({ uri: 'surface://note' });
      await first.client.subscribeResource({ uri: 'surface://item/1' });
      // The same subscription again is no new one.
      await first.client.subscribeResource({ uri: 'surface://note' });
      expect(await requestErrorCode(first.client.subscribeResource({ uri: 'surface://item/2' }))).toBe('GATEWAY_SUBSCRIPTION_LIMIT');
      // The cap is each client's: the other client subscribes, and so does the first once it let one go.
      await second.client.subscribeResource({ uri: 'surface://note' });
      await second.client.subscribeResource({ uri: 'surface://item/2' });
      await first.client.unsubscribeResource({ uri: 'surface://item/1' });
      await waitUntil(() => stderr.includes('unsubscribed surface://item/1'));
      await first.client.subscribeResource({ uri: 'surface://item/3' });
      // The gateway refused before asking the plugin.
      expect(stderr.filter((l) => l.startsWith('subscribed '))).toEqual(['subscribed surface://note', 'subscribed surface://item/1', 'subscribed surface://item/2', 'subscribed surface://item/3']);

      // The first session ends: what only it held is unsubscribed at the plugin, what the second holds stays.
      await first.transport.terminateSession();
      await first.client.close();
      await waitUntil(() => stderr.includes('unsubscribed surface://item/3'));
      expect(stderr).not.toContain('unsubscribed surface://note');
      expect((await second.client.callTool({ name: `plug.${ID}.touch`, arguments: {} })).isError).not.toBe(true);
      await waitUntil(() => second.updates.includes('surface://note') && second.updates.includes('surface://item/2'));

      await second.transport.terminateSession();
      await second.client.close();
      await waitUntil(() => stderr.includes('unsubscribed surface://note') && stderr.includes('unsubscribed surface://item/2'));
      expect(served.sessions).toBe(0);
    },
    TIMEOUT_MS,
  );

  it(
    "keeps a client's subscription through a SIGKILL of the plugin: updates reach it again without it asking",
    async () => {
      const clock = new FakeClock();
      const host = await installedHost(clock);
      const stderr: string[] = [];
      host.events.on('stderr', (e) => stderr.push(e.line));
      let crashed = false;
      host.events.on('quarantine', (e) => (crashed ||= e.quarantined));
      const client = await connect((await gateways.serve(host, { http: { token: TOKEN, port: 0 } })).url!);
      await client.client.subscribeResource({ uri: 'surface://note' });

      process.kill(pluginNodeProcess(host.profileDir), 'SIGKILL');
      // The death counts as a crash: the plugin waits its first backoff step, then the host starts it again.
      await waitUntil(() => crashed);
      clock.advance(30_000);
      await waitUntil(() => stderr.filter((l) => l === 'subscribed surface://note').length === 2);
      expect((await client.client.callTool({ name: `plug.${ID}.touch`, arguments: {} })).isError).not.toBe(true);
      await waitUntil(() => client.updates.includes('surface://note'));
    },
    TIMEOUT_MS,
  );

  it('refuses a cap that is not a positive integer', async () => {
    const host = await installedHost();
    const refused = await serveGateway(host, { http: { token: TOKEN, port: 0 }, maxSubscriptionsPerClient: 0 });
    expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'maxSubscriptionsPerClient' } });
  });
});
