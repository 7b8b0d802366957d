/**
 * What plugins may make the gateway hold for a client that does not answer:
 * the plugins' sampling requests forwarded to a client wait for its answer,
 * at most `maxPendingRequestsPerClient` of them per client, and over HTTP
 * their bytes count against the client's share of `http.maxBodyBytesInFlight`
 * with its bodies and answers. One more is refused at once with a JSON-RPC
 * Invalid Request error that the plugin gets; the client never sees it.
 *
 * The SDK Client over Streamable HTTP on a real gateway, the host-callbacks
 * fixture (an SDK McpServer in bubblewrap) asking the client's model.
 */
import { CreateMessageRequestSchema, type CallToolResult, type CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { serveGateway, type PluginHost } from '../../src/index.js';
import { callbackPackage, op, removeCallbackPackages } from '../callbacks/callbackPlugin.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TOKEN = 'pending-requests-token-0123456789';
const TIMEOUT_MS = 120_000;
const NEVER_MS = 600_000;
const MiB = 1024 * 1024;

const { pool, gateways } = gatewayTestPools();
afterAll(() => removeCallbackPackages());

async function callbacksHost(options: { maxFrameBytes?: number } = {}): Promise<PluginHost> {
  const dir = await pool.profile();
  const installer = await pool.open(dir);
  (await installer.install(await callbackPackage(), { canary: false }))._unsafeUnwrap();
  await installer.close();
  return pool.open(dir, { callTimeoutMs: NEVER_MS, clientRequestTimeoutMs: NEVER_MS, ...options });
}

/** The JSON text of a host-callbacks tool result. */
function answerOf(result: CallToolResult): Record<string, unknown> {
  const first = result.content[0];
  return JSON.parse(first?.type === 'text' ? first.text : '{}') as Record<string, unknown>;
}

const MODEL_ANSWER: CreateMessageResult = { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'test-model' };

describe('HTTP gateway: plugin requests waiting for a client', () => {
  it(
    'are at most maxPendingRequestsPerClient at once; the rest are refused to the plugin, and places come back once answered',
    async () => {
      const host = await callbacksHost();
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0 }, maxPendingRequestsPerClient: 3 });
      const { client } = await gateways.connectHttp(served.url ?? '', TOKEN, 'slow-to-answer', { sampling: {} });
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let entered = 0;
      client.setRequestHandler(CreateMessageRequestSchema, async () => {
        entered += 1;
        await released;
        return MODEL_ANSWER;
      });
      const refused: (number | undefined)[] = [];
      host.events.on('client_request', (report) => {
        if (report.outcome !== 'answered') refused.push(report.error_code);
      });

      // Six at once, within the host's own bound of eight per plugin process: the gateway lets three reach the client.
      const flood = client.callTool({ name: op('ask_model_many'), arguments: { count: 6 } });
      await vi.waitFor(() => expect(entered + refused.length).toBe(6), { timeout: 60_000, interval: 20 });
      expect({ entered, refused }).toEqual({ entered: 3, refused: [-32600, -32600, -32600] });
      release();
      expect(answerOf((await flood) as CallToolResult)).toEqual({ answered: 3, refused: 3 });

      // Answered, they hold nothing: three more all reach the client.
      const again = (await client.callTool({ name: op('ask_model_many'), arguments: { count: 3 } })) as CallToolResult;
      expect(answerOf(again)).toEqual({ answered: 3, refused: 0 });
      expect(entered).toBe(6);
    },
    TIMEOUT_MS,
  );

  it(
    "count their bytes against the client's share of http.maxBodyBytesInFlight",
    async () => {
      const host = await callbacksHost({ maxFrameBytes: 8 * MiB });
      // One client: its share is the whole bound, 4 MiB (the least share, one largest body).
      const served = await gateways.serve(host, { http: { token: TOKEN, port: 0, maxBodyBytesInFlight: 4 * MiB } });
      const { client } = await gateways.connectHttp(served.url ?? '', TOKEN, 'large-prompts', { sampling: {} });
      const asked: number[] = [];
      client.setRequestHandler(CreateMessageRequestSchema, (request) => {
        const content = request.params.messages[0]?.content;
        asked.push(content !== undefined && !Array.isArray(content) && content.type === 'text' ? content.text.length : -1);
        return MODEL_ANSWER;
      });

      // A small question is asked and answered.
      const small = (await client.callTool({ name: op('ask_model'), arguments: { question: 'short' } })) as CallToolResult;
      expect(small.isError).toBeFalsy();
      expect(asked).toEqual([5]);

      // A 2.5 MiB question: its POST body (held while the call runs) and the sampling request repeating it pass 4 MiB.
      const question = 'q'.repeat(2.5 * MiB);
      const large = (await client.callTool({ name: op('ask_model'), arguments: { question } })) as CallToolResult;
      expect(large.isError).toBe(true);
      expect(answerOf(large)).toMatchObject({ error: { code: -32600, message: expect.stringContaining('http.maxBodyBytesInFlight') } });
      expect(asked).toEqual([5]);
    },
    TIMEOUT_MS,
  );

  it('refuses a maxPendingRequestsPerClient that is not a positive integer', async () => {
    const host = await pool.open(await pool.profile());
    const refused = await serveGateway(host, { http: { token: TOKEN, port: 0 }, maxPendingRequestsPerClient: 0 });
    expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'maxPendingRequestsPerClient' } });
  });
});
