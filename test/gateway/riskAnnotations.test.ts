/**
 * The two tool hints MCP clients approve by (`readOnlyHint`, `destructiveHint`) say the more cautious of the host's
 * risk class and the plugin's own hints at the gateway: host-published lists `wipe` as read-only while its manifest
 * rates it destructive, `blob` as not read-only while its manifest rates it read, and `describe` as read-only with a
 * manifest that agrees.
 */
import { describe, expect, it } from 'vitest';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TOKEN = 'risk-annotations-token-0123456789';
const { pool, gateways } = gatewayTestPools();

describe('gateway tool annotations', () => {
  it('state the host risk class, so a plugin cannot list a destructive tool as read-only to clients', async () => {
    const host = await pool.installed(await pool.profile(), ['published']);
    const gateway = await gateways.serve(host, { policy: { maxRisk: 'destructive' }, http: { token: TOKEN, port: 0 } });
    const { client } = await gateways.connectHttp(gateway.url ?? '', TOKEN, 'risk-annotations-test');
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));

    // What the plugin itself lists, through the host: the claim the gateway must not forward.
    const listed = (await host.tools('host-published'))._unsafeUnwrap().find((t) => t.name === 'wipe');
    expect(listed?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });

    expect(byName.get('plug.host-published.wipe')?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
    expect(byName.get('plug.host-published.describe')?.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    // A tool the plugin lists without annotations gets the host's class too (the manifest rates echo read).
    expect(byName.get('plug.host-published.echo')?.annotations).toEqual({ readOnlyHint: true, destructiveHint: false });
    // The more cautious of both: the manifest rates blob read, its server says it is not read-only (and, by MCP's
    // default, destructive), so the client is not told it only reads.
    expect(byName.get('plug.host-published.blob')?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true });
  }, 180_000);
});
