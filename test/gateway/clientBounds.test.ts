/**
 * Two of a gateway client's bounds, as the client sees them: the gap notice
 * after dropped notifications respects the log level the client set, and
 * the subscription cap counts plugin resources, not the spellings of their
 * URIs. A real plugin (fixtures/plugins/host-surface) in the sandbox.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GATEWAY_DEFAULTS } from '../../src/gateway/gatewayDefaults.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools, requestErrorCode } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 180_000;
const ID = 'host-surface';
const TOKEN = 'client-bounds-token-0123456789abcd';
/** Resource updates of about 100 bytes each: well over the 1 MiB a client that does not read may leave waiting. */
const UPDATES = 15_000;
const { pool, gateways } = gatewayTestPools();

async function installedHost(): Promise<PluginHost> {
  const dir = await pool.profile();
  await pool.install(dir, ['surface']);
  return pool.open(dir, { idleTimeoutMs: 0 });
}

interface Received {
  readonly id?: number;
  readonly method?: string;
  readonly params?: { readonly logger?: string };
}

describe('a gateway client that set its log level above warning', () => {
  it(
    'gets no gap notice after notifications were dropped for it',
    async () => {
      const host = await installedHost();
      const stdin = new PassThrough();
      const stdout = new PassThrough();
      await gateways.serve(host, { stdio: { stdin, stdout } });
      const send = (message: unknown): boolean => stdin.write(`${JSON.stringify(message)}\n`);
      let received = '';
      stdout.setEncoding('utf8');
      const messages = (): Received[] =>
        received
          .split('\n')
          .slice(0, -1)
          .map((line) => JSON.parse(line) as Received);
      const answered = (id: number): Promise<void> => waitUntil(() => messages().some((m) => m.id === id), 120_000);
      const reading = (chunk: string): void => void (received += chunk);
      stdout.on('data', reading);
      send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'quiet', version: '1.0.0' } } });
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send({ jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'error' } });
      send({ jsonrpc: '2.0', id: 3, method: 'resources/subscribe', params: { uri: 'surface://note' } });
      await answered(3);

      // The client stops reading while the plugin sends an update per round (its info log messages are below the level).
      stdout.off('data', reading);
      stdout.pause();
      const floodEnded = new Promise<void>((resolve) => host.events.on('call:end', (e) => e.op_id === `plug.${ID}.flood` && resolve()));
      send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: `plug.${ID}.flood`, arguments: { count: UPDATES, bytes: 1 } } });
      await floodEnded;
      stdout.on('data', reading);
      stdout.resume();
      await answered(4);
      // One more update, where the gap notice would come, then its call's answer.
      send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: `plug.${ID}.touch`, arguments: {} } });
      await answered(5);

      const updates = messages().filter((m) => m.method === 'notifications/resources/updated').length;
      expect(updates).toBeLessThan(UPDATES);
      expect(messages().filter((m) => m.params?.logger === GATEWAY_DEFAULTS.serverName)).toEqual([]);
    },
    TIMEOUT_MS,
  );
});

describe('the subscription cap of a gateway client', () => {
  it(
    'counts the plain and the qualified URI of one resource as one subscription',
    async () => {
      const host = await installedHost();
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 }, maxSubscriptionsPerClient: 1 });
      const { client } = await gateways.connectHttp(served.url ?? '', TOKEN, 'spellings');
      await client.subscribeResource({ uri: 'surface://note' });
      await client.subscribeResource({ uri: `plug.${ID}:surface://note` });
      expect(await requestErrorCode(client.subscribeResource({ uri: 'surface://item/1' }))).toBe('GATEWAY_SUBSCRIPTION_LIMIT');
      await client.unsubscribeResource({ uri: 'surface://note' });
      // The qualified spelling still holds the resource.
      expect(await requestErrorCode(client.subscribeResource({ uri: 'surface://item/1' }))).toBe('GATEWAY_SUBSCRIPTION_LIMIT');
      await client.unsubscribeResource({ uri: `plug.${ID}:surface://note` });
      await client.subscribeResource({ uri: 'surface://item/1' });
    },
    TIMEOUT_MS,
  );
});
