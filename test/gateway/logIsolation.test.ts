/**
 * A plugin's log messages and the gateway's clients over HTTP (attack review
 * S): what a plugin logs while serving one client's request goes to that
 * client, not to the other sessions, whichever token they hold. Real SDK
 * clients, a real sandboxed SDK server plugin (fixtures/plugins/host-surface).
 */
import { LoggingMessageNotificationSchema, type LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools, type HttpClient } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const FLOOD = 'plug.host-surface.flood';
const TOKEN_A = 'log-isolation-token-a-0123456789';
const TOKEN_B = 'log-isolation-token-b-0123456789';
const { pool, gateways } = gatewayTestPools();

async function listening(url: string, token: string, name: string): Promise<HttpClient & { readonly logs: string[] }> {
  const connected = await gateways.connectHttp(url, token, name);
  const logs: string[] = [];
  connected.client.setNotificationHandler(LoggingMessageNotificationSchema, (n: LoggingMessageNotification) => void logs.push(String(n.params.data)));
  return { ...connected, logs };
}

describe('gateway log messages', () => {
  it(
    'go to the client whose call the plugin logged during, not to another session of the same or another token',
    async () => {
      const dir = await pool.profile();
      await pool.install(dir, ['surface']);
      const host = await pool.open(dir, { idleTimeoutMs: 0 });
      const served = await gateways.serve(host, { http: { token: TOKEN_A, port: 0, clients: [{ name: 'b', token: TOKEN_B, policy: {} }] } });
      const url = served.url!;
      const alice = await listening(url, TOKEN_A, 'alice');
      const sameToken = await listening(url, TOKEN_A, 'alice-2');
      const bob = await listening(url, TOKEN_B, 'bob');

      // The fixture logs `<i> <bytes x's>`; the sizes tell the calls apart. First each client hears its own call's
      // log, so that its stream for notifications is open before Alice's call (without one they would be dropped).
      const ownCall = async (client: HttpClient & { readonly logs: string[] }, count: number, bytes: number): Promise<void> => {
        expect((await client.client.callTool({ name: FLOOD, arguments: { count, bytes } })).isError).not.toBe(true);
        await waitUntil(() => client.logs.includes(`${count - 1} ${'x'.repeat(bytes)}`));
      };
      for (const [client, bytes] of [
        [alice, 1],
        [sameToken, 2],
        [bob, 4],
      ] as const) {
        await ownCall(client, 1, bytes);
        expect(client.logs).toEqual([`0 ${'x'.repeat(bytes)}`]);
      }
      await ownCall(alice, 2, 3);
      expect(alice.logs).toEqual(['0 x', '0 xxx', '1 xxx']);
      // Then each other client makes another call: its log comes after anything the gateway sent it before.
      for (const [other, first, bytes] of [
        [bob, 4, 5],
        [sameToken, 2, 7],
      ] as const) {
        await ownCall(other, 1, bytes);
        expect(other.logs).toEqual([`0 ${'x'.repeat(first)}`, `0 ${'x'.repeat(bytes)}`]);
      }
      expect(alice.logs).toEqual(['0 x', '0 xxx', '1 xxx']);
    },
    TIMEOUT_MS,
  );

  it(
    "go to the client whose call is at the plugin while another client's call waits for a slot there",
    async () => {
      const dir = await pool.profile();
      await pool.install(dir, ['surface']);
      // One in-flight slot: while Bob's call holds it, Alice's call waits in the plugin's queue, not at the plugin.
      const host = await pool.open(dir, { idleTimeoutMs: 0, maxInFlight: 1 });
      const served = await gateways.serve(host, { http: { token: TOKEN_A, port: 0, clients: [{ name: 'b', token: TOKEN_B, policy: {} }] } });
      const alice = await listening(served.url!, TOKEN_A, 'alice');
      const bob = await listening(served.url!, TOKEN_B, 'bob');
      for (const [client, bytes] of [
        [alice, 1],
        [bob, 2],
      ] as const) {
        expect((await client.client.callTool({ name: FLOOD, arguments: { count: 1, bytes } })).isError).not.toBe(true);
        await waitUntil(() => client.logs.includes(`0 ${'x'.repeat(bytes)}`));
      }

      let starts = 0;
      let aliceQueued: () => void = () => undefined;
      const queued = new Promise<void>((resolve) => (aliceQueued = resolve));
      const off = host.events.on('call:start', () => {
        if (++starts === 2) aliceQueued();
      });
      // Bob's call holds the slot until the test puts the gate file in the plugin's data directory, then logs.
      const bobsCall = bob.client.callTool({ name: FLOOD, arguments: { count: 2, bytes: 3, gate: 'go' } }, undefined, { timeout: TIMEOUT_MS });
      await waitUntil(() => starts === 1);
      const alicesCall = alice.client.callTool({ name: FLOOD, arguments: { count: 1, bytes: 4 } }, undefined, { timeout: TIMEOUT_MS });
      await queued;
      off();
      await writeFile(join(dir, 'data', 'host-surface', 'go'), '');

      expect((await bobsCall).isError).not.toBe(true);
      expect((await alicesCall).isError).not.toBe(true);
      await waitUntil(() => alice.logs.includes('0 xxxx'));
      await waitUntil(() => bob.logs.includes('1 xxx'));
      expect(bob.logs).toEqual(['0 xx', '0 xxx', '1 xxx']);
      expect(alice.logs).toEqual(['0 x', '0 xxxx']);
    },
    TIMEOUT_MS,
  );
});
