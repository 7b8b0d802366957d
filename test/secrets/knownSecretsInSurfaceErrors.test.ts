/**
 * A plugin whose prompt fails with an error quoting its credential (as a
 * server quoting the request URL it made, key and all): the error
 * PluginHost.getPrompt returns, and the JSON-RPC error a gateway client
 * gets for prompts/get, carry it redacted, as a failed tool call's does.
 * A real sandboxed plugin, a real secret store, a real stdio gateway.
 */
import { randomBytes } from 'node:crypto';
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

describe('secret values the host knows, in the error of a prompt, resource or completion request', { timeout: 120_000 }, () => {
  it('are redacted from the HostError and from the gateway JSON-RPC error', async () => {
    const token = `good-${randomBytes(12).toString('hex')}`;
    const host = await pool.open(await pool.profile(), { activation: 'immediate' });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const failed = (await host.getPrompt('host-canary', 'booking-notes', { city: 'Lisbon' }))._unsafeUnwrapErr();
    expect(JSON.stringify([failed, failed.message])).toContain('key=[redacted] was denied');
    expect(JSON.stringify([failed, failed.message, failed.stack])).not.toContain(token);

    const toGateway = new PassThrough();
    const fromGateway = new PassThrough();
    const gateway: GatewayHandle = (await serveGateway(host, { stdio: { stdin: toGateway, stdout: fromGateway } }))._unsafeUnwrap();
    closing.push(gateway);
    const client = new Client({ name: 'surface-error-test', version: '1.0.0' });
    await client.connect(new StdioServerTransport(fromGateway, toGateway));
    closing.push(client);
    const prompt = (await client.listPrompts()).prompts.find((p) => p.name.includes('booking-notes'));
    expect(prompt).toBeDefined();
    const refused: unknown = await client.getPrompt({ name: prompt!.name, arguments: { city: 'Lisbon' } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(Error);
    const seen = JSON.stringify({ message: (refused as Error).message, data: (refused as { data?: unknown }).data });
    expect(seen).toContain('[redacted]');
    expect(seen).not.toContain(token);
  });

  it('are redacted from a failed canary and tool list that quote a line the plugin printed', async () => {
    // The fixture prints a token starting 'print-at-start-' on stdout before it speaks MCP; strict stdout makes that line the start's error.
    const token = `print-at-start-${randomBytes(12).toString('hex')}`;
    const host = await pool.open(await pool.profile(), { activation: 'immediate', plugins: { 'host-canary': { stdout: 'strict' } } });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    // A live canary that passed first: the plugin is configured, so the tool list below may start it.
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: `good-${randomBytes(8).toString('hex')}` }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const setup = (await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap();
    expect(setup).toMatchObject({ status: 'failed', error: { code: 'PLUGIN_INVALID_JSON' } });
    expect(JSON.stringify(setup.error?.details)).toContain('starting with token=[redacted]');
    (await host.unquarantine('host-canary'))._unsafeUnwrap();
    const listed = (await host.tools('host-canary'))._unsafeUnwrapErr();
    expect(listed.code).toBe('PLUGIN_INVALID_JSON');
    expect(JSON.stringify(listed.details)).toContain('starting with token=[redacted]');
    expect(JSON.stringify([setup, setup.error?.message, listed, listed.message])).not.toContain(token);
  });
});
