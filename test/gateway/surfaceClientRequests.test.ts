/**
 * A plugin's sampling and elicitation while the gateway serves a client's
 * `prompts/get`, `resources/read` or `completion/complete` go to that client,
 * as during its tool calls: the SDK's own Client over stdio (serveGateway in
 * this process on a pair of streams) and over Streamable HTTP (two sessions),
 * the host-callbacks fixture (an SDK McpServer in bubblewrap) sampling while
 * it fills in its summarize prompt, completes its topic and reads
 * notes://drafted, and eliciting while it reads notes://today.
 */
import { PassThrough } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Client as SdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type CallToolResult,
  type ClientCapabilities,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { ClientRequestContext, ClientRequestHandlers, PluginHost, PluginHostOptions } from '../../src/index.js';
import { callbackPackage, op, removeCallbackPackages } from '../callbacks/callbackPlugin.js';
import { gatewayTestPools, requestErrorCode } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const TOKEN = 'surface-requests-token-0123456789';
const INVALID_REQUEST = -32600;
const SUMMARIZE = 'plug.host-callbacks.summarize';

const { pool, gateways } = gatewayTestPools();
afterAll(() => removeCallbackPackages());

async function hostWith(variant: 'declared' | 'undeclared' = 'declared', options: PluginHostOptions = {}): Promise<PluginHost> {
  const dir = await pool.profile();
  const installer = await pool.open(dir);
  (await installer.install(await callbackPackage(variant), { canary: false }))._unsafeUnwrap();
  await installer.close();
  return pool.open(dir, options);
}

/** What one client was asked: each sampling request's first text and each elicitation's message. */
interface Asked {
  readonly sampled: string[];
  readonly elicited: string[];
}

const firstText = (params: CreateMessageRequest['params']): string => {
  const content = params.messages[0]?.content;
  return content !== undefined && !Array.isArray(content) && content.type === 'text' ? content.text : '';
};

/**
 * Answers, of the kinds `capabilities` declares, sampling with `<name>: <the
 * request's text>` (model `name`) and elicitation with `{ answer: name }`.
 */
function answersAs(client: Client, name: string, capabilities: ClientCapabilities): Asked {
  const asked: Asked = { sampled: [], elicited: [] };
  if (capabilities.sampling !== undefined) {
    client.setRequestHandler(CreateMessageRequestSchema, (request): CreateMessageResult => {
      asked.sampled.push(firstText(request.params));
      return { role: 'assistant', content: { type: 'text', text: `${name}: ${firstText(request.params)}` }, model: name };
    });
  }
  if (capabilities.elicitation !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, (request: ElicitRequest) => {
      asked.elicited.push(request.params.message);
      return { action: 'accept', content: { answer: name } };
    });
  }
  return asked;
}

/** An HTTP session named `name` on the gateway at `url`, declaring `capabilities` and answering as {@link answersAs}. */
async function httpClient(url: string, name: string, capabilities: ClientCapabilities): Promise<{ client: Client; asked: Asked }> {
  const { client } = await gateways.connectHttp(url, TOKEN, name, capabilities);
  return { client, asked: answersAs(client, name, capabilities) };
}

/** The SDK's Client on a stdio gateway of `host`, in this process. */
async function stdioClient(host: PluginHost, capabilities: ClientCapabilities, setUp: (client: Client) => void = () => undefined): Promise<Client> {
  const toGateway = new PassThrough();
  const fromGateway = new PassThrough();
  await gateways.serve(host, { stdio: { stdin: toGateway, stdout: fromGateway } });
  const client = new SdkClient({ name: 'surface-requests', version: '1.0.0' }, { capabilities });
  setUp(client);
  await client.connect(new StdioServerTransport(fromGateway, toGateway));
  return gateways.keep(client);
}

const promptText = async (client: Client, topic: string): Promise<string> => {
  const prompt = await client.getPrompt({ name: SUMMARIZE, arguments: { topic } });
  const content = prompt.messages[0]?.content;
  return content?.type === 'text' ? content.text : '';
};

const resourceText = async (client: Client, uri: string): Promise<string> => {
  const read = await client.readResource({ uri });
  const first = read.contents[0];
  return first !== undefined && 'text' in first ? first.text : '';
};

const textOf = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');

describe('a plugin asks the gateway client whose prompts/get, resources/read or completion it answers', () => {
  it(
    'over stdio: the client samples for a prompt, a completion and a resource and is elicited for another; the host callbacks are not asked',
    async () => {
      const hostSampling = vi.fn(() => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'host model' }, model: 'host' }));
      const host = await hostWith('declared', { clientRequests: { sampling: hostSampling } });
      const reports: Record<string, unknown>[] = [];
      host.events.on('client_request', (report) => reports.push(report as unknown as Record<string, unknown>));
      let asked: Asked = { sampled: [], elicited: [] };
      const client = await stdioClient(host, { sampling: {}, elicitation: {} }, (c) => {
        asked = answersAs(c, 'stdio-client', { sampling: {}, elicitation: {} });
      });

      expect(await promptText(client, 'the notes')).toBe('stdio-client: Summarize the notes');
      const completion = await client.complete({ ref: { type: 'ref/prompt', name: SUMMARIZE }, argument: { name: 'topic', value: 'no' } });
      expect(completion.completion.values).toEqual(['stdio-client: Suggest topics starting with no']);
      expect(await resourceText(client, 'notes://drafted')).toBe('stdio-client: Draft the notes');
      expect(await resourceText(client, 'notes://today')).toBe('stdio-client');

      expect(asked).toEqual({ sampled: ['Summarize the notes', 'Suggest topics starting with no', 'Draft the notes'], elicited: ['What is on today?'] });
      expect(hostSampling).not.toHaveBeenCalled();
      expect(reports.map((r) => [r.method, r.outcome])).toEqual([
        ['sampling/createMessage', 'answered'],
        ['sampling/createMessage', 'answered'],
        ['sampling/createMessage', 'answered'],
        ['elicitation/create', 'answered'],
      ]);
    },
    TIMEOUT_MS,
  );

  it(
    'over stdio: a client that declared no sampling is not asked and neither are the host callbacks; a plugin that did not declare it is refused',
    async () => {
      const hostSampling = vi.fn(() => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'host model' }, model: 'host' }));
      const host = await hostWith('declared', { clientRequests: { sampling: hostSampling } });
      const reports: Record<string, unknown>[] = [];
      host.events.on('client_request', (report) => reports.push(report as unknown as Record<string, unknown>));
      let asked: Asked = { sampled: [], elicited: [] };
      // Elicitation only: the plugin's sampling has no one to answer it at this client.
      const client = await stdioClient(host, { elicitation: {} }, (c) => {
        asked = answersAs(c, 'eliciting-client', { elicitation: {} });
      });

      // The prompt handler throws the refusal (-32601) on; the plugin's error is the client's answer.
      expect(await requestErrorCode(client.getPrompt({ name: SUMMARIZE, arguments: { topic: 'x' } }))).toBe('PLUGIN_METHOD_NOT_FOUND');
      expect(await resourceText(client, 'notes://today')).toBe('eliciting-client');
      expect(hostSampling).not.toHaveBeenCalled();
      expect(asked).toEqual({ sampled: [], elicited: ['What is on today?'] });
      expect(reports.map((r) => [r.method, r.outcome, r.error_code])).toEqual([
        ['sampling/createMessage', 'refused', -32601],
        ['elicitation/create', 'answered', undefined],
      ]);

      // The same code installed without client_requests: the host announces no sampling to it and answers none.
      const undeclared = await hostWith('undeclared');
      let askedUndeclared: Asked = { sampled: [], elicited: [] };
      const able = await stdioClient(undeclared, { sampling: {}, elicitation: {} }, (c) => {
        askedUndeclared = answersAs(c, 'able-client', { sampling: {}, elicitation: {} });
      });
      expect(await requestErrorCode(able.getPrompt({ name: 'plug.host-callbacks-undeclared.summarize', arguments: { topic: 'x' } }))).toBe('PLUGIN_METHOD_NOT_FOUND');
      expect(askedUndeclared).toEqual({ sampled: [], elicited: [] });
    },
    TIMEOUT_MS,
  );

  it(
    "over stdio: the client's answer counts against the prompts/get that caused it: when that times out the client's request is cancelled",
    async () => {
      // Short enough that the test does not wait long.
      const host = await hostWith('declared', { callTimeoutMs: 3000 });
      let started = false;
      let cancelled = false;
      const client = await stdioClient(host, { sampling: {} }, (c) => {
        // The first request the gateway sends this client: its id is 1, as the SDK's Client ignores a cancellation of id 0.
        c.setRequestHandler(CreateMessageRequestSchema, (_request, extra) => {
          started = true;
          return new Promise<CreateMessageResult>((_resolve, reject) => {
            extra.signal.addEventListener('abort', () => {
              cancelled = true;
              reject(new Error('cancelled'));
            });
          });
        });
      });

      expect(await requestErrorCode(client.getPrompt({ name: SUMMARIZE, arguments: { topic: 'slowly' } }))).toBe('PLUGIN_TIMEOUT');
      expect(started).toBe(true);
      await vi.waitFor(() => expect(cancelled).toBe(true), { timeout: 10_000 });
    },
    TIMEOUT_MS,
  );

  it(
    'over HTTP: each of two sessions is asked for its own prompts/get, completion and resources/read only, and with its own tool call as one party',
    async () => {
      const host = await hostWith();
      const url = (await gateways.serve(host, { http: { token: TOKEN, port: 0 } })).url ?? '';
      const { client: alice, asked: aliceAsked } = await httpClient(url, 'alice', { sampling: {}, elicitation: {} });
      const { client: bob, asked: bobAsked } = await httpClient(url, 'bob', { sampling: {}, elicitation: {} });

      expect(await promptText(alice, 'apples')).toBe('alice: Summarize apples');
      expect(await promptText(bob, 'bananas')).toBe('bob: Summarize bananas');
      const completed = await bob.complete({ ref: { type: 'ref/prompt', name: SUMMARIZE }, argument: { name: 'topic', value: 'b' } });
      expect(completed.completion.values).toEqual(['bob: Suggest topics starting with b']);
      expect(await resourceText(alice, 'notes://drafted')).toBe('alice: Draft the notes');
      expect(await resourceText(bob, 'notes://today')).toBe('bob');

      expect(aliceAsked).toEqual({ sampled: ['Summarize apples', 'Draft the notes'], elicited: [] });
      expect(bobAsked).toEqual({ sampled: ['Summarize bananas', 'Suggest topics starting with b'], elicited: ['What is on today?'] });

      // A session's tool call and its own prompts/get at the plugin are one party: the call's sampling is its to answer.
      const held = alice.getPrompt({ name: 'plug.host-callbacks.held' });
      const sampled = (await alice.callTool({ name: op('ask_model_while_held'), arguments: { question: 'mine?' } })) as CallToolResult;
      expect(JSON.parse(textOf(sampled))).toMatchObject({ model: 'alice', content: { text: 'alice: mine?' } });
      expect((await held).messages).toEqual([{ role: 'user', content: { type: 'text', text: 'released' } }]);
      expect(aliceAsked.sampled.at(-1)).toBe('mine?');
      expect(bobAsked.sampled).toHaveLength(2);
    },
    TIMEOUT_MS,
  );

  it(
    "over HTTP: a sampling request while one session's prompts/get and another's tool call are at the plugin is refused, asking neither",
    async () => {
      const host = await hostWith();
      const url = (await gateways.serve(host, { http: { token: TOKEN, port: 0 } })).url ?? '';
      const { client: alice, asked: aliceAsked } = await httpClient(url, 'alice', { sampling: {} });
      const { client: bob, asked: bobAsked } = await httpClient(url, 'bob', { sampling: {} });

      // The held prompt stays at the plugin until bob's tool call has sampled: the plugin cannot say whose the
      // request is, and handing it to bob would show him what alice's prompt might have asked.
      const held = alice.getPrompt({ name: 'plug.host-callbacks.held' });
      const sampled = (await bob.callTool({ name: op('ask_model_while_held'), arguments: { question: 'whose?' } })) as CallToolResult;
      expect(sampled.isError).toBe(true);
      expect(JSON.parse(textOf(sampled))).toMatchObject({ error: { code: INVALID_REQUEST, message: expect.stringContaining('several callers') as unknown } });
      expect((await held).messages).toEqual([{ role: 'user', content: { type: 'text', text: 'released' } }]);
      expect(aliceAsked.sampled).toEqual([]);
      expect(bobAsked.sampled).toEqual([]);
    },
    TIMEOUT_MS,
  );
});

describe('PluginHost.getPrompt, readResource and complete with their own clientRequests', () => {
  it(
    "answer the plugin's requests with the request's own callbacks (cause set), not the host's; bad options are HOST_INVALID_OPTIONS",
    async () => {
      const hostSampling = vi.fn(() => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'host model' }, model: 'host' }));
      const host = await hostWith('declared', { clientRequests: { sampling: hostSampling } });
      const contexts: ClientRequestContext[] = [];
      const own: ClientRequestHandlers = {
        sampling: (params, context) => {
          contexts.push(context);
          return { role: 'assistant', content: { type: 'text', text: `own: ${firstText(params)}` }, model: 'own' };
        },
      };

      const prompt = (await host.getPrompt('host-callbacks', 'summarize', { topic: 'pears' }, { clientRequests: own }))._unsafeUnwrap();
      expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'own: Summarize pears' });
      const read = (await host.readResource('host-callbacks', 'notes://drafted', { clientRequests: own }))._unsafeUnwrap();
      expect(read.contents).toEqual([{ uri: 'notes://drafted', text: 'own: Draft the notes' }]);
      const completed = (await host.complete('host-callbacks', { type: 'ref/prompt', name: 'summarize' }, { argument: { name: 'topic', value: 'p' } }, { clientRequests: own }))._unsafeUnwrap();
      expect(completed.values).toEqual(['own: Suggest topics starting with p']);
      expect(contexts.map((c) => c.cause)).toEqual([
        { method: 'prompts/get', name: 'summarize' },
        { method: 'resources/read', uri: 'notes://drafted' },
        { method: 'completion/complete', name: 'summarize' },
      ]);
      expect(hostSampling).not.toHaveBeenCalled();

      const misspelt = await host.getPrompt('host-callbacks', 'summarize', { topic: 'x' }, { clientRequest: own } as never);
      expect(misspelt._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'clientRequest' } });
      const notAFunction = await host.readResource('host-callbacks', 'notes://drafted', { clientRequests: { sampling: 'yes' } } as never);
      expect(notAFunction._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'clientRequests.sampling' } });
      expect(hostSampling).not.toHaveBeenCalled();
    },
    TIMEOUT_MS,
  );
});
