/**
 * Cancellation between a gateway client and a plugin, with the SDK's own
 * Client over stdio (serveGateway in this process on a pair of streams) and
 * over Streamable HTTP, and the host-callbacks fixture (an SDK McpServer in
 * bubblewrap) that samples while it answers a tool call, its summarize prompt,
 * a completion of its topic and a read of notes://drafted.
 *
 * The gateway numbers its requests to a client from 1: the SDK's Client drops
 * a `notifications/cancelled` whose requestId is 0, so the first forwarded
 * request could not be cancelled there. A client that cancels its own
 * `prompts/get`, `resources/read` or `completion/complete` cancels it at the
 * plugin, and the plugin's sampling forwarded to it is cancelled in turn.
 *
 * The host's timeouts are set far beyond the test's own, so that only a
 * cancellation ends a request: where the old code let one run on, the test
 * waits for a cancellation that never comes and fails on its timeout.
 */
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CreateMessageRequestSchema, type CallToolResult, type CreateMessageRequest, type CreateMessageResult, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { PluginHost } from '../../src/index.js';
import { callbackPackage, op, removeCallbackPackages } from '../callbacks/callbackPlugin.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
/** Longer than any test here waits: no host timeout ends a request before the test's own does. */
const NEVER_MS = 600_000;
const TOKEN = 'client-cancellation-token-0123456789';
const SUMMARIZE = 'plug.host-callbacks.summarize';

const { pool, gateways } = gatewayTestPools();
afterAll(() => removeCallbackPackages());

async function host(): Promise<PluginHost> {
  const dir = await pool.profile();
  const installer = await pool.open(dir);
  (await installer.install(await callbackPackage(), { canary: false }))._unsafeUnwrap();
  await installer.close();
  return pool.open(dir, { callTimeoutMs: NEVER_MS, clientRequestTimeoutMs: NEVER_MS });
}

const firstText = (params: CreateMessageRequest['params']): string => {
  const content = params.messages[0]?.content;
  return content !== undefined && !Array.isArray(content) && content.type === 'text' ? content.text : '';
};

/** A promise settled from outside, made by whichever side comes first. */
class Moments {
  readonly #waits = new Map<string, { promise: Promise<void>; resolve: () => void }>();

  #of(key: string): { promise: Promise<void>; resolve: () => void } {
    let wait = this.#waits.get(key);
    if (wait === undefined) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      wait = { promise, resolve };
      this.#waits.set(key, wait);
    }
    return wait;
  }

  reached(key: string): void {
    this.#of(key).resolve();
  }

  until(key: string): Promise<void> {
    return this.#of(key).promise;
  }
}

/**
 * A client's sampling handler that answers nothing: each request waits until
 * the gateway cancels it. Records each request's id and text, and the texts
 * whose request was cancelled.
 */
class HeldSampling {
  readonly ids: RequestId[] = [];
  readonly cancelled: string[] = [];
  readonly #entered = new Moments();
  readonly #cancelled = new Moments();

  install(client: Client): void {
    client.setRequestHandler(
      CreateMessageRequestSchema,
      (request, extra) =>
        new Promise<CreateMessageResult>((_resolve, reject) => {
          const text = firstText(request.params);
          this.ids.push(extra.requestId);
          extra.signal.addEventListener(
            'abort',
            () => {
              this.cancelled.push(text);
              this.#cancelled.reached(text);
              reject(new Error('cancelled by the gateway'));
            },
            { once: true },
          );
          this.#entered.reached(text);
        }),
    );
  }

  /** Settles once the sampling request with this text has reached the client. */
  entered(text: string): Promise<void> {
    return this.#entered.until(text);
  }

  /** Settles once the gateway has cancelled the sampling request with this text. */
  cancelledOnce(text: string): Promise<void> {
    return this.#cancelled.until(text);
  }
}

/** The SDK's Client on a stdio gateway of `host`, in this process, sampling as `held` does. */
async function stdioClient(served: PluginHost, held: HeldSampling): Promise<Client> {
  const toGateway = new PassThrough();
  const fromGateway = new PassThrough();
  await gateways.serve(served, { stdio: { stdin: toGateway, stdout: fromGateway } });
  const client = new Client({ name: 'cancelling-client', version: '1.0.0' }, { capabilities: { sampling: {} } });
  held.install(client);
  await client.connect(new StdioServerTransport(fromGateway, toGateway));
  return gateways.keep(client);
}

/** An SDK Client in an HTTP session of a gateway of `host`, sampling as `held` does. */
async function httpClient(served: PluginHost, held: HeldSampling): Promise<Client> {
  const url = (await gateways.serve(served, { http: { token: TOKEN, port: 0 } })).url ?? '';
  const { client } = await gateways.connectHttp(url, TOKEN, 'cancelling-client', { sampling: {} });
  held.install(client);
  return client;
}

/**
 * Sends a request with `send` under a signal of its own and cancels it (the
 * SDK Client sends `notifications/cancelled`) once the plugin's sampling for
 * it, with text `sampled`, has reached the client; settles when the gateway
 * has cancelled that sampling.
 */
async function cancelWhileSampling(held: HeldSampling, sampled: string, send: (signal: AbortSignal) => Promise<unknown>): Promise<unknown> {
  const abort = new AbortController();
  const sent = send(abort.signal).then(
    () => 'answered',
    (error: unknown) => error,
  );
  await held.entered(sampled);
  abort.abort(new Error('the user stopped it'));
  await held.cancelledOnce(sampled);
  return sent;
}

/** What the fixture's withdrawn tool reports: the requests beyond tools whose cancellation reached the plugin. */
async function withdrawnAtPlugin(client: Client, count: number): Promise<unknown> {
  const result = (await client.callTool({ name: op('withdrawn'), arguments: { count } })) as CallToolResult;
  const first = result.content[0];
  return (JSON.parse(first?.type === 'text' ? first.text : '{}') as { withdrawn?: unknown }).withdrawn;
}

const transports = [
  ['stdio', stdioClient],
  ['HTTP', httpClient],
] as const;

describe.each(transports)('over %s', (_transport, connect) => {
  it(
    "the gateway's first request to a client has id 1, and cancelling it reaches the SDK Client",
    async () => {
      const held = new HeldSampling();
      const client = await connect(await host(), held);

      // The client cancels its tool call while the plugin's sampling waits at it: the gateway cancels the sampling.
      await cancelWhileSampling(held, 'first', (signal) => client.callTool({ name: op('ask_model'), arguments: { question: 'first' } }, undefined, { signal }));
      expect(held.ids).toEqual([1]);
      expect(held.cancelled).toEqual(['first']);
    },
    TIMEOUT_MS,
  );

  it(
    "a client cancelling its prompts/get, resources/read or completion cancels it at the plugin and the plugin's sampling forwarded to it",
    async () => {
      const held = new HeldSampling();
      const client = await connect(await host(), held);

      await cancelWhileSampling(held, 'Summarize stopped', (signal) => client.getPrompt({ name: SUMMARIZE, arguments: { topic: 'stopped' } }, { signal }));
      await cancelWhileSampling(held, 'Draft the notes', (signal) => client.readResource({ uri: 'notes://drafted' }, { signal }));
      await cancelWhileSampling(held, 'Suggest topics starting with st', (signal) =>
        client.complete({ ref: { type: 'ref/prompt', name: SUMMARIZE }, argument: { name: 'topic', value: 'st' } }, { signal }),
      );
      expect(held.cancelled).toEqual(['Summarize stopped', 'Draft the notes', 'Suggest topics starting with st']);
      // The prompt and the read saw their cancellation (a completer has no signal to tell it by).
      expect(await withdrawnAtPlugin(client, 2)).toEqual(['prompts/get summarize', 'resources/read notes://drafted']);
    },
    TIMEOUT_MS,
  );
});

describe('PluginHost.getPrompt, readResource and complete with a signal', () => {
  it(
    "cancel the request at the plugin and abandon the plugin's request to the caller's callbacks; PLUGIN_CANCELLED as for a call",
    async () => {
      const served = await host();
      const entered = new Moments();
      const cancelled: string[] = [];
      const clientRequests = {
        sampling: (params: CreateMessageRequest['params'], context: { signal: AbortSignal }) =>
          new Promise<CreateMessageResult>((_resolve, reject) => {
            const text = firstText(params);
            context.signal.addEventListener('abort', () => (cancelled.push(text), reject(new Error('abandoned'))), { once: true });
            entered.reached(text);
          }),
      };
      const cancelledWhile = async <T>(sampled: string, send: (signal: AbortSignal) => PromiseLike<T>): Promise<T> => {
        const abort = new AbortController();
        const sent = send(abort.signal);
        await entered.until(sampled);
        abort.abort(new Error('the application stopped it'));
        return sent;
      };

      const prompt = await cancelledWhile('Summarize pears', (signal) => served.getPrompt('host-callbacks', 'summarize', { topic: 'pears' }, { clientRequests, signal }));
      expect(prompt._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_CANCELLED', details: { phase: 'prompts/get', plugin_id: 'host-callbacks' } });
      const read = await cancelledWhile('Draft the notes', (signal) => served.readResource('host-callbacks', 'notes://drafted', { clientRequests, signal }));
      expect(read._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_CANCELLED', details: { phase: 'resources/read' } });
      const completed = await cancelledWhile('Suggest topics starting with p', (signal) =>
        served.complete('host-callbacks', { type: 'ref/prompt', name: 'summarize' }, { argument: { name: 'topic', value: 'p' } }, { clientRequests, signal }),
      );
      expect(completed._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_CANCELLED', details: { phase: 'completion/complete' } });
      expect(cancelled).toEqual(['Summarize pears', 'Draft the notes', 'Suggest topics starting with p']);

      const withdrawn = (await served.call(op('withdrawn'), { count: 2 }))._unsafeUnwrap();
      const text = (withdrawn.value as CallToolResult).content[0];
      expect(JSON.parse(text?.type === 'text' ? text.text : '{}')).toEqual({ withdrawn: ['prompts/get summarize', 'resources/read notes://drafted'] });

      // A signal aborted before the request is sent fails it the same way; a signal that is not one is refused as an option.
      const aborted = new AbortController();
      aborted.abort();
      const early = await served.getPrompt('host-callbacks', 'summarize', { topic: 'x' }, { clientRequests, signal: aborted.signal });
      expect(early._unsafeUnwrapErr().code).toBe('PLUGIN_CANCELLED');
      const notASignal = await served.readResource('host-callbacks', 'notes://drafted', { signal: 'stop' } as never);
      expect(notASignal._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'signal' } });
    },
    TIMEOUT_MS,
  );
});
