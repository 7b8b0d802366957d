/**
 * A plugin whose tools/call answer nests JSON deeper than a recursive walk
 * can go (JSON.parse reads it; JSON.stringify of it overflows the stack):
 * the host refuses it as PLUGIN_MALFORMED_RESPONSE, so the gateway answers
 * its client with an error result instead of failing to send the answer and
 * leaving the client waiting for its own timeout.
 */
import { describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TIMEOUT_MS = 120_000;
const TOKEN = 'deep-token-0123456789abcdef';
const { pool, gateways } = gatewayTestPools();

describe('a plugin answering with JSON nested too deep to walk', () => {
  it(
    'fails the call with PLUGIN_MALFORMED_RESPONSE, and the gateway client gets an error result rather than no answer',
    async () => {
      const installed = async () => pool.installed(await pool.profile(), ['deep']);
      const host = await installed();
      const within = await host.call('plug.host-deep.deep', { depth: pluginAnswerLimits.maxNestingDepth - 2 });
      expect(within.isOk() ? 'ok' : within.error.message).toBe('ok');
      // Checked by code only: any recursive walk of an accepted answer (toEqual, printing it) would overflow here too.
      const deep = await host.call('plug.host-deep.deep', { depth: 100_000 });
      expect(deep.isErr() ? deep.error.code : 'accepted').toBe('PLUGIN_MALFORMED_RESPONSE');
      expect(deep.isErr() && deep.error.details.max_nesting_depth).toBe(pluginAnswerLimits.maxNestingDepth);
      // The same bound on the other requests' answers (resources, prompts, completions), on a fresh profile:
      // a malformed answer to any request counts as a crash, so the first one has quarantined the plugin.
      const read = await (await installed()).readResource('host-deep', 'deep://x');
      expect(read.isErr() ? read.error.code : 'accepted').toBe('PLUGIN_MALFORMED_RESPONSE');

      // A fresh profile: a malformed answer quarantines the plugin, as for any other.
      const gateway = await gateways.serve(await installed(), { http: { token: TOKEN, port: 0 } });
      const { client } = await gateways.connectHttp(gateway.url ?? '', TOKEN, 'deep-test');
      // The client's own timeout is the only bound on a request the gateway never answers.
      const viaGateway = await client.callTool({ name: 'plug.host-deep.deep', arguments: { depth: 100_000 } }, undefined, { timeout: 30_000 }).then(
        (result) => (result.isError === true ? 'error result' : 'accepted'),
        (error: unknown) => `no answer: ${(error as Error).message}`,
      );
      expect(viaGateway).toBe('error result');
    },
    TIMEOUT_MS,
  );

  it(
    'hands a log message whose data nests too deep to its listeners as a marker, so a listener can print the event',
    async () => {
      const host = await pool.installed(await pool.profile(), ['deep']);
      const logged: unknown[] = [];
      host.events.on('log', (event) => logged.push(event));
      const call = await host.call('plug.host-deep.deep', { as: 'log' });
      expect(call.isOk() ? 'ok' : call.error.code).toBe('ok');
      expect(logged).toHaveLength(1);
      expect(() => JSON.stringify(logged[0])).not.toThrow();
      expect(logged[0]).toMatchObject({ plugin_id: 'host-deep', level: 'error', logger: 'deep', data: expect.stringContaining(`deeper than ${pluginAnswerLimits.maxNestingDepth} levels`) });
    },
    TIMEOUT_MS,
  );
});
