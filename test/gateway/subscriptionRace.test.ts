/**
 * A gateway session that ends while its resources/subscribe is still at the
 * plugin (attack review): the subscription must not outlive the session.
 * A client that subscribes and closes its session at once, again and again,
 * would otherwise leave behind a route holding each closed session's
 * server, and a plugin subscription no client holds that is never ended.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const TOKEN = 'subscription-race-token-0123456789';
const { pool, gateways } = gatewayTestPools();

/** A gateway over HTTP on a host with the surface plugin installed: the plugin's stderr lines, and its first spawn. */
async function servedSurface(mode?: string): Promise<{ served: Awaited<ReturnType<typeof gateways.serve>>; stderr: string[]; spawn: Promise<void> }> {
  const dir = await pool.profile();
  await pool.install(dir, ['surface']);
  if (mode !== undefined) {
    await mkdir(join(dir, 'data', 'host-surface'), { recursive: true });
    await writeFile(join(dir, 'data', 'host-surface', 'mode'), mode);
  }
  const host = await pool.open(dir, { idleTimeoutMs: 0 });
  const stderr: string[] = [];
  host.events.on('stderr', (e) => stderr.push(e.line));
  const spawn = new Promise<void>((resolve) => host.events.on('spawn', () => resolve()));
  return { served: await gateways.serve(host, { http: { token: TOKEN, port: 0 } }), stderr, spawn };
}

describe('a session that ends while its subscribe is in flight', () => {
  it(
    'leaves no subscription behind: the plugin is unsubscribed once its answer comes',
    async () => {
      const { served, stderr, spawn } = await servedSurface();

      const { client, transport } = await gateways.connectHttp(served.url!, TOKEN, 'leaver');
      // The first subscribe starts the plugin; the session ends while that start and the subscribe are under way.
      const pending = client.subscribeResource({ uri: 'surface://note' }).then(
        () => 'answered',
        () => 'failed',
      );
      await spawn;
      await transport.terminateSession();
      await pending;
      await client.close();
      expect(served.sessions).toBe(0);

      await waitUntil(() => stderr.includes('subscribed surface://note'), 30_000);
      await waitUntil(() => stderr.includes('unsubscribed surface://note'), 30_000);
    },
    TIMEOUT_MS,
  );

  it(
    'keeps the plugin subscribed for another client whose subscribe to the same resource was in flight too',
    async () => {
      const { served, stderr, spawn } = await servedSurface('slow-second-subscribe');

      const leaver = await gateways.connectHttp(served.url!, TOKEN, 'leaver');
      const stayer = await gateways.connectHttp(served.url!, TOKEN, 'stayer');
      const updates: string[] = [];
      stayer.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
      // Both subscribes are at the plugin (its start holds them) when the leaver's session ends.
      const leaving = leaver.client.subscribeResource({ uri: 'surface://note' }).then(
        () => 'answered',
        () => 'failed',
      );
      const staying = stayer.client.subscribeResource({ uri: 'surface://note' });
      await spawn;
      // The session ends while the stayer's subscribe is still at the plugin (it answers a second subscribe 1.5 s late)
      // and the leaver's was taken too. Waiting for both keeps the race this case is about whatever the load: without
      // the wait the stayer's POST could reach the gateway only after the session ended, when no one holds or asks.
      await waitUntil(() => stderr.filter((line) => line === 'subscribed surface://note').length >= 2, 30_000);
      await leaver.transport.terminateSession();
      await leaving;
      await leaver.client.close();
      await staying;

      await stayer.client.callTool({ name: 'plug.host-surface.touch', arguments: {} });
      await waitUntil(() => updates.includes('surface://note'), 30_000);
      expect(stderr.filter((line) => line === 'unsubscribed surface://note')).toEqual([]);
    },
    TIMEOUT_MS,
  );
});
