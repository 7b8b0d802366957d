/**
 * A gateway session that ends while its resources/subscribe is still at the
 * plugin (attack review): the subscription must not outlive the session.
 * A client that subscribes and closes its session at once, again and again,
 * would otherwise leave behind a route holding each closed session's
 * server, and a plugin subscription no client holds that is never ended.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { serveGateway, type GatewayHandle } from '../../src/index.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';

const TIMEOUT_MS = 120_000;
const ID = 'host-surface';
const TOKEN = 'subscription-race-token-0123456789';
const pool = new HostPool();
const gateways: GatewayHandle[] = [];
let pkg: Promise<string> | undefined;
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  await pool.cleanup();
});
afterAll(async () => {
  if (pkg !== undefined) await rm(await pkg, { recursive: true, force: true });
});

describe('a session that ends while its subscribe is in flight', () => {
  it(
    'leaves no subscription behind: the plugin is unsubscribed once its answer comes',
    async () => {
      pkg ??= packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', ID), { bundle: ['bin/surface.mjs'] });
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      (await installer.install(await pkg, { canary: false }))._unsafeUnwrap();
      await installer.close();
      const host = await pool.open(dir, { idleTimeoutMs: 0 });
      const stderr: string[] = [];
      host.events.on('stderr', (e) => stderr.push(e.line));
      let spawned!: () => void;
      const spawn = new Promise<void>((resolve) => (spawned = resolve));
      host.events.on('spawn', () => spawned());
      const served = (await serveGateway(host, { http: { token: TOKEN, port: 0 } }))._unsafeUnwrap();
      gateways.push(served);

      const client = new Client({ name: 'leaver', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(served.url!), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
      await client.connect(transport);
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
});
