/**
 * Through `mcp-plugin-host serve` over stdio (the CLI as a real subprocess,
 * the SDK's own Client): a high_stakes_write call is confirmed by an
 * elicitation round trip with the connected client, and a plugin's sampling,
 * elicitation and roots requests are forwarded to that client. A client that
 * declared none of these capabilities gets PLUGIN_CONFIRMATION_UNAVAILABLE
 * and refusals.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { CLI_SOURCE, REPO } from '../cli/cliHarness.js';
import { HostPool } from '../support/hostHarness.js';
import { callbackPackage, op, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 180_000;
const ERROR_META = 'io.github.mcp-plugin-host/error';

const pool = new HostPool();
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await pool.cleanup();
});
afterAll(() => removeCallbackPackages());

async function profileWithPlugin(): Promise<string> {
  const dir = await pool.profile();
  const installer = await pool.open(dir);
  (await installer.install(await callbackPackage(), { canary: false }))._unsafeUnwrap();
  await installer.close();
  return dir;
}

function cliEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}

/** An SDK client on `serve --max-risk write` over stdio. */
async function connect(dir: string, client: Client): Promise<Client> {
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', CLI_SOURCE, 'serve', '--profile-dir', dir, '--dev', '--max-risk', 'write'], cwd: REPO, env: cliEnv(), stderr: 'pipe' }),
  );
  clients.push(client);
  return client;
}

const errorCodeOf = (result: CallToolResult): unknown => (result._meta?.[ERROR_META] as { code?: unknown } | undefined)?.code;
const textOf = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');

describe('the gateway asks its client', () => {
  it(
    'confirms a high_stakes_write call by elicitation (accept runs it, decline refuses it) and forwards sampling, elicitation and roots requests',
    async () => {
      const dir = await profileWithPlugin();
      const elicited: ElicitRequest['params'][] = [];
      let confirmAnswer: ElicitResult = { action: 'accept', content: { confirm: true } };
      const client = new Client({ name: 'asking-client', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        elicited.push(request.params);
        return request.params.message.includes('erase_notes') ? confirmAnswer : { action: 'accept', content: { answer: 'green' } };
      });
      client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'from the gateway client' }, model: 'client-model' }));
      client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///client/root', name: 'client root' }] }));
      await connect(dir, client);

      const erased = (await client.callTool({ name: op('erase_notes'), arguments: {} })) as CallToolResult;
      expect(erased.isError, JSON.stringify(erased)).not.toBe(true);
      expect(JSON.parse(textOf(erased))).toEqual({ erased: true });
      expect(elicited).toHaveLength(1);
      expect(elicited[0]?.message).toContain(op('erase_notes'));
      expect(elicited[0]).toMatchObject({ requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } });

      confirmAnswer = { action: 'decline' };
      const declined = (await client.callTool({ name: op('erase_notes'), arguments: {} })) as CallToolResult;
      expect(declined.isError).toBe(true);
      expect(errorCodeOf(declined)).toBe('PLUGIN_CONFIRMATION_DENIED');

      const sampled = (await client.callTool({ name: op('ask_model'), arguments: { question: 'via the gateway?' } })) as CallToolResult;
      expect(JSON.parse(textOf(sampled))).toMatchObject({ model: 'client-model', content: { text: 'from the gateway client' } });
      const asked = (await client.callTool({ name: op('ask_user'), arguments: { question: 'Favourite colour?' } })) as CallToolResult;
      expect(JSON.parse(textOf(asked))).toEqual({ action: 'accept', content: { answer: 'green' } });
      expect(elicited.at(-1)?.message).toBe('Favourite colour?');
      const roots = (await client.callTool({ name: op('list_roots'), arguments: {} })) as CallToolResult;
      expect(JSON.parse(textOf(roots))).toEqual({ roots: [{ uri: 'file:///client/root', name: 'client root' }] });
    },
    TIMEOUT_MS,
  );

  it(
    'refuses a confirmation with PLUGIN_CONFIRMATION_UNAVAILABLE and a plugin request with a JSON-RPC error when the client cannot be asked',
    async () => {
      const dir = await profileWithPlugin();
      const client = await connect(dir, new Client({ name: 'plain-client', version: '1.0.0' }));

      const erase = (await client.callTool({ name: op('erase_notes'), arguments: {} })) as CallToolResult;
      expect(erase.isError).toBe(true);
      expect(errorCodeOf(erase)).toBe('PLUGIN_CONFIRMATION_UNAVAILABLE');

      const sampled = (await client.callTool({ name: op('ask_model'), arguments: { question: 'anyone?' } })) as CallToolResult;
      expect(sampled.isError).toBe(true);
      expect(JSON.parse(textOf(sampled))).toMatchObject({ error: { code: -32601 } });
    },
    TIMEOUT_MS,
  );

  it(
    'does not ask its client to confirm a high_stakes_write call whose arguments are refused: they are INVALID_ARGS',
    async () => {
      const dir = await profileWithPlugin();
      const elicited: ElicitRequest['params'][] = [];
      const client = new Client({ name: 'asking-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        elicited.push(request.params);
        return { action: 'decline' };
      });
      await connect(dir, client);

      const depth = pluginAnswerLimits.maxArgumentNestingDepth + 10;
      const deep = JSON.parse(`{"x":${'['.repeat(depth)}${']'.repeat(depth)}}`) as Record<string, unknown>;
      const erase = (await client.callTool({ name: op('erase_notes'), arguments: deep })) as CallToolResult;
      expect(erase.isError).toBe(true);
      expect(errorCodeOf(erase)).toBe('INVALID_ARGS');
      expect(elicited).toEqual([]);
    },
    TIMEOUT_MS,
  );
});
