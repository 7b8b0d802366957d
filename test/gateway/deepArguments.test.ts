/**
 * A caller's arguments nested deeper than a recursive walk can go (attack
 * review): a gateway client can send them in one frame (JSON.parse reads
 * any depth), and JSON.stringify of them on the way to the plugin
 * overflowed the stack, so host.call rejected instead of returning a
 * Result, and the client got a bare -32603. They are refused as
 * INVALID_ARGS before the plugin is started or called. A client's answer to
 * no request, nested as deep, is reported without ending the gateway.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { waitUntil } from '../support/eventually.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const ERROR_META = 'io.github.mcp-plugin-host/error';
const { pool, gateways } = gatewayTestPools();

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe('arguments nested too deep to walk', () => {
  it(
    'are INVALID_ARGS from host.call and through the stdio gateway, and a stray deep answer does not end the gateway',
    async () => {
      const host = await pool.installed(await pool.profile(), ['deep']);

      const args = JSON.parse(`{"depth":2,"x":${nested(100_000)}}`) as Record<string, unknown>;
      const refused = await host.call('plug.host-deep.deep', args).then(
        (result) => (result.isErr() ? result.error.code : 'accepted'),
        (error: unknown) => `rejected: ${String(error)}`,
      );
      expect(refused).toBe('INVALID_ARGS');
      const within = await host.call('plug.host-deep.deep', JSON.parse(`{"depth":2,"x":${nested(pluginAnswerLimits.maxArgumentNestingDepth - 2)}}`) as Record<string, unknown>);
      expect(within.isOk() ? 'ok' : within.error.code).toBe('ok');

      const toGateway = new PassThrough();
      const fromGateway = new PassThrough();
      await gateways.serve(host, { stdio: { stdin: toGateway, stdout: fromGateway } });
      const answers: Record<string, unknown>[] = [];
      let pending = '';
      fromGateway.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
          answers.push(JSON.parse(pending.slice(0, nl)) as Record<string, unknown>);
          pending = pending.slice(nl + 1);
        }
      });
      const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'deep-args', version: '1' } } };
      toGateway.write(`${JSON.stringify(initialize)}\n`);
      await waitUntil(() => answers.some((a) => a.id === 0), 30_000);
      toGateway.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plug.host-deep.deep","arguments":{"depth":2,"x":${nested(100_000)}}}}\n`);
      await waitUntil(() => answers.some((a) => a.id === 1), 30_000);
      const answer = answers.find((a) => a.id === 1) as { result?: { isError?: boolean; _meta?: Record<string, { code?: string }> }; error?: unknown };
      expect(answer.error).toBeUndefined();
      expect(answer.result?._meta?.[ERROR_META]?.code).toBe('INVALID_ARGS');

      // An answer to no request of the gateway's, nested as deep: the SDK server reports it, the gateway goes on.
      toGateway.write(`{"jsonrpc":"2.0","id":424242,"result":{"x":${nested(100_000)}}}\n`);
      toGateway.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'plug.host-deep.deep', arguments: { depth: 2 } } })}\n`);
      await waitUntil(() => answers.some((a) => a.id === 2), 30_000);
      expect((answers.find((a) => a.id === 2) as { result?: { isError?: boolean } }).result?.isError).not.toBe(true);
    },
    TIMEOUT_MS,
  );
});
