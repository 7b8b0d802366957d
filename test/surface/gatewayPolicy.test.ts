/**
 * Per-client filters hold for resources, templates and prompts at the
 * gateway over Streamable HTTP: two concurrent SDK Clients with different
 * allow lists, served by `serveGateway` on a loopback port, with
 * server-everything and server-memory installed and run in the sandbox.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { gatewayTestPools, requestErrorCode as codeOf } from '../support/gatewayHarness.js';

const OWNER_TOKEN = 'owner-token-0123456789abcdef';
const MEMORY_TOKEN = 'memory-token-0123456789abcdef';
const { pool, gateways } = gatewayTestPools();

async function connect(url: string, token: string): Promise<Client> {
  return (await gateways.connectHttp(url, token, 'policy-test')).client;
}

describe('gateway filters for resources and prompts over HTTP', () => {
  it('shows each client only the resources, templates and prompts of the plugins its policy offers', async () => {
    const host = await pool.installed(await pool.profile(), ['everything', 'memory']);
    const served = await gateways.serve(host, {
      policy: { deny: ['plug.host-everything.simple-prompt'] },
      http: { port: 0, token: OWNER_TOKEN, clients: [{ name: 'memory-only', token: MEMORY_TOKEN, policy: { allow: ['host-memory'] } }] },
    });
    const url = served.url ?? '';
    const [owner, memoryOnly] = await Promise.all([connect(url, OWNER_TOKEN), connect(url, MEMORY_TOKEN)]);

    const ownerPrompts = (await owner.listPrompts()).prompts.map((p) => p.name);
    expect(ownerPrompts).toContain('plug.host-everything.args-prompt');
    expect(ownerPrompts).not.toContain('plug.host-everything.simple-prompt');
    expect(await codeOf(owner.getPrompt({ name: 'plug.host-everything.simple-prompt' }))).toBe('GATEWAY_ITEM_NOT_FOUND');
    expect((await owner.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toContain('demo://resource/dynamic/text/{resourceId}');
    expect((await owner.readResource({ uri: 'demo://resource/dynamic/text/2' })).contents[0]?.uri).toBe('demo://resource/dynamic/text/2');

    // server-memory offers no prompts or resources, and everything's are not offered to this client.
    expect((await memoryOnly.listPrompts()).prompts).toEqual([]);
    expect((await memoryOnly.listResourceTemplates()).resourceTemplates).toEqual([]);
    expect(await codeOf(memoryOnly.readResource({ uri: 'demo://resource/dynamic/text/2' }))).toBe('GATEWAY_ITEM_NOT_FOUND');
    expect(await codeOf(memoryOnly.readResource({ uri: 'plug.host-everything:demo://resource/dynamic/text/2' }))).toBe('GATEWAY_ITEM_NOT_FOUND');
    expect(await codeOf(memoryOnly.complete({ ref: { type: 'ref/prompt', name: 'plug.host-everything.completable-prompt' }, argument: { name: 'department', value: 'S' } }))).toBe(
      'GATEWAY_ITEM_NOT_FOUND',
    );
  }, 120_000);
});
