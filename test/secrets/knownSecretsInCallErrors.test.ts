/**
 * A plugin whose tool error quotes its credential (as server-google-maps
 * quotes the request URL with its API key): the PLUGIN_TOOL_ERROR the host
 * returns, and the error result a gateway client gets, carry it redacted.
 * A real sandboxed plugin, a real secret store, a real stdio gateway.
 */
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { serveGateway, type GatewayHandle } from '../../src/index.js';
import { HostPool, packaged, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
const closing: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close();
  await pool.cleanup();
});
afterAll(() => removePackages());

const ARGS = { from: '2026-04-01', to: '2026-04-02', city: 'refuse-quoting-token' };

describe('secret values the host knows, in the error a plugin returns', { timeout: 120_000 }, () => {
  it('are redacted from the PLUGIN_TOOL_ERROR and from the gateway error result', async () => {
    const token = 'good-6f1d0b9e4c2a7358';
    const host = await pool.open(await pool.profile(), { activation: 'immediate' });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const failed = (await host.call('plug.host-canary.lookup', ARGS))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_TOOL_ERROR');
    expect(JSON.stringify(failed)).toContain('key=[redacted] was denied');
    expect(JSON.stringify([failed, failed.message])).not.toContain(token);

    const toGateway = new PassThrough();
    const fromGateway = new PassThrough();
    const served = await serveGateway(host, { stdio: { stdin: toGateway, stdout: fromGateway } });
    const gateway: GatewayHandle = served._unsafeUnwrap();
    closing.push(gateway);
    const client = new Client({ name: 'call-error-test', version: '1.0.0' });
    await client.connect(new StdioServerTransport(fromGateway, toGateway));
    closing.push(client);
    const tools = await client.listTools();
    const lookup = tools.tools.find((t) => t.name.includes('lookup'));
    expect(lookup).toBeDefined();
    const result = await client.callTool({ name: lookup!.name, arguments: ARGS });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result)).toContain('[redacted]');
    expect(JSON.stringify(result)).not.toContain(token);
  });
});
