/**
 * One change, one `tools/list_changed`: a gateway hears of a change from its
 * own catalog poll and from the host's events (`catalog:changed` with
 * `hotReload`, `quarantine`), and tells its clients once. Real probe plugin
 * subprocesses, the SDK client over Streamable HTTP.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools, type HttpClient } from '../support/gatewayHarness.js';
import { answered, packaged } from '../support/hostHarness.js';

const TOKEN = 'list-changed-once-token-0123456789';
/** Both the host's watch and the gateway's poll read the catalog this often, so each sees every change. */
const POLL_MS = 20;
/** How long after the first notice a second one would have come: many rounds of both polls. */
const QUIET_MS = 25 * POLL_MS;

const { pool, gateways } = gatewayTestPools();

function countChanges({ client }: HttpClient): { readonly count: () => number } {
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes += 1;
  });
  return { count: () => changes };
}

describe('gateway tools/list_changed', () => {
  it('is sent once when another process installs a plugin on a hotReload host, though both the watch and the gateway poll see it', async () => {
    const dir = await pool.profile();
    const watching = await pool.open(dir, { hotReload: { pollMs: POLL_MS } });
    const served = await gateways.serve(watching, { catalogPollMs: POLL_MS, http: { token: TOKEN, port: 0 } });
    const connected = await gateways.connectHttp(served.url ?? '', TOKEN, 'once-install');
    const changes = countChanges(connected);
    expect((await connected.client.listTools()).tools).toEqual([]);

    answered(await (await pool.open(dir)).install(await packaged('probe'), { canary: false }));
    await waitUntil(() => changes.count() >= 1, 30_000);
    await sleep(QUIET_MS);
    expect(changes.count()).toBe(1);
    expect((await connected.client.listTools()).tools.map((t) => t.name)).toContain('plug.host-probe.echo');
  });

  it('is sent once when a plugin is quarantined, though both the quarantine event and the gateway poll see it', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    await mkdir(join(dir, 'data', 'host-probe'), { recursive: true });
    await writeFile(join(dir, 'data', 'host-probe', 'mode'), 'exit-on-start');
    const served = await gateways.serve(host, { catalogPollMs: POLL_MS, http: { token: TOKEN, port: 0 } });
    const connected = await gateways.connectHttp(served.url ?? '', TOKEN, 'once-quarantine');
    const changes = countChanges(connected);

    const crashed = (await connected.client.callTool({ name: 'plug.host-probe.echo', arguments: {} })) as CallToolResult;
    expect(crashed.isError).toBe(true);
    await waitUntil(() => changes.count() >= 1, 30_000);
    await sleep(QUIET_MS);
    expect(changes.count()).toBe(1);
    expect((await connected.client.listTools()).tools).toEqual([]);
  });
});
