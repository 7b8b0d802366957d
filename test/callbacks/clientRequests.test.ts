/**
 * A plugin's requests to its client (sampling/createMessage, elicitation/create,
 * roots/list) through PluginHost: a real plugin process (an SDK McpServer in
 * the sandbox) asks during a tool call, the host application's callback
 * answers. Only kinds the manifest declares (as the install grant left them)
 * are answered; everything else is refused at once on the wire.
 */
import type { CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { HostError } from '../../src/errors/HostError.js';
import type { ClientRequestContext } from '../../src/host/PluginHost.js';
import type { CallResult } from '../../src/shapes/PluginSession.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';
import { answerOf, callbackPackage, op, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 120_000;
const METHOD_NOT_FOUND = -32601;

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removeCallbackPackages());

/** The answer a tool reported as an isError result (PLUGIN_TOOL_ERROR keeps it in details.result). */
function refusalOf(error: HostError): Record<string, unknown> {
  expect(error.code).toBe('PLUGIN_TOOL_ERROR');
  return answerOf({ shape: 'mcp-plugin', value: error.details.result, isError: true } as CallResult);
}

const modelAnswer = (text: string): CreateMessageResult => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-model', stopReason: 'endTurn' });

async function installed(variants: readonly ('declared' | 'undeclared')[], grant?: Record<string, unknown>): Promise<string> {
  const dir = await pool.profile();
  const installer = await pool.open(dir);
  for (const variant of variants) {
    const outcome = await installer.install(await callbackPackage(variant), { canary: false, ...(grant === undefined ? {} : { grant }) });
    if (outcome.isErr()) throw outcome.error;
  }
  await installer.close();
  return dir;
}

describe('requests from plugins to the client', () => {
  it(
    'answers a declared sampling request with the host callback (plugin id, op id and the request), and refuses it at once from an undeclared plugin',
    async () => {
      const dir = await installed(['declared', 'undeclared']);
      const sampling = vi.fn((_params: unknown, context: ClientRequestContext) => modelAnswer(`sampled for ${context.plugin_id}`));
      const host = await pool.open(dir, { clientRequests: { sampling } });
      const reports: unknown[] = [];
      host.events.on('client_request', (report) => reports.push(report));

      const answered = await host.call(op('ask_model'), { question: 'What is 2 + 2?' });
      expect(answered._unsafeUnwrap().isError).toBe(false);
      expect(answerOf(answered._unsafeUnwrap())).toMatchObject({ role: 'assistant', model: 'test-model', content: { type: 'text', text: 'sampled for host-callbacks' } });
      expect(sampling).toHaveBeenCalledTimes(1);
      const [params, context] = sampling.mock.calls[0] ?? [];
      expect(params).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: 'What is 2 + 2?' } }], maxTokens: 100 });
      expect(context).toMatchObject({ plugin_id: 'host-callbacks', op_id: op('ask_model'), timeoutMs: 60_000 });

      const refused = await host.call(op('ask_model', 'host-callbacks-undeclared'), { question: 'What is 2 + 2?' });
      expect(refusalOf(refused._unsafeUnwrapErr())).toMatchObject({ error: { code: METHOD_NOT_FOUND } });
      expect(sampling).toHaveBeenCalledTimes(1);
      // Only requests of a declared kind are the host's to report; the undeclared one never reached it.
      expect(reports).toEqual([{ plugin_id: 'host-callbacks', method: 'sampling/createMessage', op_id: op('ask_model'), outcome: 'answered', duration_ms: expect.any(Number) }]);

      expect((await host.info('host-callbacks'))._unsafeUnwrap().granted_capabilities?.client_requests).toEqual(['sampling', 'elicitation', 'roots']);
      expect((await host.info('host-callbacks-undeclared'))._unsafeUnwrap().granted_capabilities?.client_requests).toBeUndefined();
    },
    TIMEOUT_MS,
  );

  it(
    'answers roots/list and elicitation/create, and refuses a declared kind the host has no callback for',
    async () => {
      const dir = await installed(['declared']);
      const roots = vi.fn(() => ({ roots: [{ uri: 'file:///srv/notes', name: 'notes' }] }));
      const elicitation = vi.fn((_params: unknown) => ({ action: 'accept' as const, content: { answer: 'blue' } }));
      const host = await pool.open(dir, { clientRequests: { roots, elicitation } });
      const reports: { outcome: string; error_code?: number }[] = [];
      host.events.on('client_request', (report) => reports.push(report));

      expect(answerOf((await host.call(op('list_roots'), {}))._unsafeUnwrap())).toEqual({ roots: [{ uri: 'file:///srv/notes', name: 'notes' }] });
      expect(answerOf((await host.call(op('ask_user'), { question: 'Favourite colour?' }))._unsafeUnwrap())).toEqual({ action: 'accept', content: { answer: 'blue' } });
      expect(elicitation.mock.calls[0]?.[0]).toMatchObject({ message: 'Favourite colour?', requestedSchema: { type: 'object' } });

      const noSampling = await host.call(op('ask_model'), { question: 'hi' });
      expect(refusalOf(noSampling._unsafeUnwrapErr())).toMatchObject({ error: { code: METHOD_NOT_FOUND } });
      expect(reports.map((r) => [r.outcome, r.error_code])).toEqual([
        ['answered', undefined],
        ['answered', undefined],
        ['refused', METHOD_NOT_FOUND],
      ]);
    },
    TIMEOUT_MS,
  );

  it(
    "counts the callback's time against the call: when the call times out, the callback's signal aborts",
    async () => {
      const dir = await installed(['declared']);
      let seen: AbortSignal | undefined;
      const host = await pool.open(dir, {
        // The callback's own limit is far beyond the call's: only the call's timeout can end the callback here.
        clientRequestTimeoutMs: 600_000,
        clientRequests: {
          sampling: (_params, context) => {
            seen = context.signal;
            return new Promise<CreateMessageResult>(() => undefined);
          },
        },
      });
      const reports: { outcome: string; error_code?: number }[] = [];
      host.events.on('client_request', (report) => reports.push(report));
      // A call's timeout also counts its wait for the plugin to start: started first (a tool that answers at once),
      // the timed call spends its budget on the plugin's round trip to the callback and then on the callback alone.
      // Under load a 1 s budget ran out before the plugin had asked, and the callback was never called.
      expect((await host.call(op('later_outcomes'), { count: 0 }))._unsafeUnwrap().isError).toBe(false);
      const outcome = await host.call(op('ask_model'), { question: 'never answered' }, { timeoutMs: 10_000 });
      expect(outcome._unsafeUnwrapErr().code).toBe('PLUGIN_TIMEOUT');
      // The callback was called within the call and never answered: the call's timeout is what ended it.
      expect(seen).toBeDefined();
      await waitUntil(() => seen?.aborted === true);
      await waitUntil(() => reports.length === 1);
      expect(reports[0]).toMatchObject({ outcome: 'abandoned', error_code: -32001 });
    },
    TIMEOUT_MS,
  );

  it(
    'a per-call callback wins over the host one; a failing callback refuses without telling the plugin why',
    async () => {
      const dir = await installed(['declared']);
      const hostSampling = vi.fn(() => modelAnswer('from the host'));
      const host = await pool.open(dir, { clientRequests: { sampling: hostSampling } });

      const own = await host.call(op('ask_model'), { question: 'q' }, { clientRequests: { sampling: () => modelAnswer('from the call') } });
      expect(answerOf(own._unsafeUnwrap())).toMatchObject({ content: { text: 'from the call' } });
      expect(hostSampling).not.toHaveBeenCalled();

      const failing = await host.call(op('ask_model'), { question: 'q' }, {
        clientRequests: {
          sampling: () => {
            throw new Error('secret-internal-detail');
          },
        },
      });
      const refusal = refusalOf(failing._unsafeUnwrapErr());
      expect(refusal).toMatchObject({ error: { code: -32603 } });
      expect(JSON.stringify(refusal)).not.toContain('secret-internal-detail');
    },
    TIMEOUT_MS,
  );

  it(
    'refuses a request it cannot attribute (calls of two callers in flight) and answers one whose calls name the same caller',
    async () => {
      const dir = await installed(['declared']);
      const host = await pool.open(dir);
      let release: (() => void) | undefined;
      const first = host.call(op('ask_model'), { question: 'first' }, {
        clientRequests: {
          sampling: () =>
            new Promise<CreateMessageResult>((resolve) => {
              release = () => resolve(modelAnswer('first answered'));
            }),
        },
      });
      await waitUntil(() => release !== undefined);
      // The first call's request is still open when the second call's request arrives: two callers, no way to tell whose.
      const second = await host.call(op('ask_model'), { question: 'second' }, { clientRequests: { sampling: () => modelAnswer('second answered') } });
      expect(refusalOf(second._unsafeUnwrapErr())).toMatchObject({ error: { code: -32600 } });
      release?.();
      expect(answerOf((await first)._unsafeUnwrap())).toMatchObject({ content: { text: 'first answered' } });

      // One caller's calls are one party: the request is answered by the newest call's handlers.
      let releaseOwn: (() => void) | undefined;
      const own = (text: string) => ({
        caller: 'one-client',
        sampling: () =>
          new Promise<CreateMessageResult>((resolve) => {
            if (releaseOwn === undefined) releaseOwn = () => resolve(modelAnswer(text));
            else resolve(modelAnswer(text));
          }),
      });
      const third = host.call(op('ask_model'), { question: 'third' }, { clientRequests: own('third answered') });
      await waitUntil(() => releaseOwn !== undefined);
      const fourth = await host.call(op('ask_model'), { question: 'fourth' }, { clientRequests: own('fourth answered') });
      expect(answerOf(fourth._unsafeUnwrap())).toMatchObject({ content: { text: 'fourth answered' } });
      releaseOwn?.();
      expect(answerOf((await third)._unsafeUnwrap())).toMatchObject({ content: { text: 'third answered' } });
    },
    TIMEOUT_MS,
  );

  it(
    'an install grant narrows the declared kinds, and may not add one',
    async () => {
      const dir = await installed(['declared'], { client_requests: ['roots'] });
      const host = await pool.open(dir, { clientRequests: { sampling: () => modelAnswer('unused'), roots: () => ({ roots: [] }) } });
      expect((await host.info('host-callbacks'))._unsafeUnwrap().granted_capabilities?.client_requests).toEqual(['roots']);
      expect(answerOf((await host.call(op('list_roots'), {}))._unsafeUnwrap())).toEqual({ roots: [] });
      expect(refusalOf((await host.call(op('ask_model'), { question: 'q' }))._unsafeUnwrapErr())).toMatchObject({ error: { code: METHOD_NOT_FOUND } });

      const refused = await host.install(await callbackPackage('undeclared'), { canary: false, grant: { client_requests: ['sampling'] } });
      expect(refused._unsafeUnwrapErr()).toMatchObject({
        code: 'PLUGIN_GRANT_EXCEEDS_DECLARATION',
        details: { violations: [expect.objectContaining({ code: 'PLUGIN_GRANT_EXCEEDS_DECLARATION', pointer: '/grant/client_requests' })] },
      });
    },
    TIMEOUT_MS,
  );
});
