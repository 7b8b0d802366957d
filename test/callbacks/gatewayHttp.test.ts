/**
 * The same over Streamable HTTP (serveGateway in this process, the SDK's
 * Client on a loopback port): the confirmation elicitation and a plugin's
 * sampling request travel on the calling session's own stream, so each of
 * two clients is asked about its own calls only.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { gatewayTestPools } from '../support/gatewayHarness.js';
import { callbackPackage, op, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 120_000;
const TOKEN = 'callbacks-token-0123456789abcdef';

const { pool, gateways } = gatewayTestPools();
afterAll(() => removeCallbackPackages());

/** An HTTP client that declares sampling and elicitation and answers both with its own name. */
async function namedClient(url: string, name: string, asked: string[]): Promise<Client> {
  const { client } = await gateways.connectHttp(url, TOKEN, name, { sampling: {}, elicitation: {} });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push(`${name}: ${request.params.message.split('\n')[0] ?? ''}`);
    return { action: 'accept', content: { confirm: true } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: `answered by ${name}` }, model: name }));
  return client;
}

const textOf = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');

describe('the gateway asks its HTTP clients', () => {
  it(
    'confirms by elicitation and forwards sampling on the calling session only',
    async () => {
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      (await installer.install(await callbackPackage(), { canary: false }))._unsafeUnwrap();
      await installer.close();
      const url = (await gateways.serve(await pool.open(dir), { policy: { maxRisk: 'write' }, http: { token: TOKEN, port: 0 } })).url ?? '';
      const asked: string[] = [];
      const [alice, bob] = [await namedClient(url, 'alice', asked), await namedClient(url, 'bob', asked)];

      const erased = (await alice.callTool({ name: op('erase_notes'), arguments: {} })) as CallToolResult;
      expect(erased.isError, JSON.stringify(erased)).not.toBe(true);
      expect(asked).toEqual([`alice: ${op('erase_notes')} is a high-stakes write operation of plugin host-callbacks. Run it with these arguments?`]);

      const fromAlice = (await alice.callTool({ name: op('ask_model'), arguments: { question: 'who?' } })) as CallToolResult;
      const fromBob = (await bob.callTool({ name: op('ask_model'), arguments: { question: 'who?' } })) as CallToolResult;
      expect(JSON.parse(textOf(fromAlice))).toMatchObject({ model: 'alice', content: { text: 'answered by alice' } });
      expect(JSON.parse(textOf(fromBob))).toMatchObject({ model: 'bob', content: { text: 'answered by bob' } });
    },
    TIMEOUT_MS,
  );
});
