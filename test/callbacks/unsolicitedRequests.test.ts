/**
 * Requests a plugin sends to its client when no request of the host is in
 * flight at it (review R3 F2): a real plugin process (an SDK McpServer in the
 * sandbox) sends them on a timer after a tool call ended. Sampling and
 * elicitation are refused at once without reaching the host's callbacks;
 * roots/list is still answered. A request sent while the host's prompts/get or
 * resources/read is in flight is the host's, answered and attributed to it; one
 * sent while the host re-lists prompts because the plugin said they changed is
 * not (review R4 F2); a tool call's own sampling while the host's prompts/get is
 * in flight is the call's (review R4 F6).
 */
import type { CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { ClientRequestContext } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';
import { answerOf, callbackPackage, op, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 120_000;
const INVALID_REQUEST = -32600;
// How long after its call the plugin sends its request: long enough that the host has seen the call end.
const LATER_MS = 300;

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removeCallbackPackages());

const modelAnswer = (text: string): CreateMessageResult => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-model', stopReason: 'endTurn' });

async function installed(): Promise<string> {
  const dir = await pool.profile();
  const installer = await pool.open(dir);
  const outcome = await installer.install(await callbackPackage(), { canary: false });
  if (outcome.isErr()) throw outcome.error;
  await installer.close();
  return dir;
}

describe('requests from a plugin with no request of the host in flight', () => {
  it(
    'refuses sampling and elicitation at once (-32600, outcome refused) without calling the callbacks, and answers roots/list',
    async () => {
      const dir = await installed();
      const sampling = vi.fn(() => modelAnswer('spent the application model'));
      const elicitation = vi.fn(() => ({ action: 'accept' as const, content: { answer: 'hunter2' } }));
      const roots = vi.fn((_params: unknown, _context: ClientRequestContext) => ({ roots: [{ uri: 'file:///srv/notes', name: 'notes' }] }));
      const host = await pool.open(dir, { clientRequests: { sampling, elicitation, roots } });
      const reports: Record<string, unknown>[] = [];
      host.events.on('client_request', (report) => reports.push(report as unknown as Record<string, unknown>));

      for (const kind of ['sampling', 'elicitation', 'roots'] as const) {
        const seen = reports.length;
        expect(answerOf((await host.call(op('ask_later'), { kind, delay_ms: LATER_MS }))._unsafeUnwrap())).toEqual({ scheduled: kind });
        // Nothing else is called meanwhile: the request arrives with no call in flight.
        await waitUntil(() => reports.length > seen);
      }

      expect(sampling).not.toHaveBeenCalled();
      expect(elicitation).not.toHaveBeenCalled();
      expect(roots).toHaveBeenCalledTimes(1);
      const [, context] = roots.mock.calls[0] ?? [];
      expect(context?.plugin_id).toBe('host-callbacks');
      expect(context?.op_id).toBeUndefined();
      expect(context?.cause).toBeUndefined();
      expect(reports).toEqual([
        { plugin_id: 'host-callbacks', method: 'sampling/createMessage', outcome: 'refused', error_code: INVALID_REQUEST, duration_ms: expect.any(Number) },
        { plugin_id: 'host-callbacks', method: 'elicitation/create', outcome: 'refused', error_code: INVALID_REQUEST, duration_ms: expect.any(Number) },
        { plugin_id: 'host-callbacks', method: 'roots/list', outcome: 'answered', duration_ms: expect.any(Number) },
      ]);

      // What the plugin got: the JSON-RPC refusals with their reason, and the roots.
      const outcomes = answerOf((await host.call(op('later_outcomes'), { count: 3 }))._unsafeUnwrap()).outcomes;
      expect(outcomes).toEqual([
        { kind: 'sampling', error: { code: INVALID_REQUEST, message: expect.stringMatching(/no request of the host is in flight/) } },
        { kind: 'elicitation', error: { code: INVALID_REQUEST, message: expect.stringMatching(/no request of the host is in flight/) } },
        { kind: 'roots', answer: { roots: [{ uri: 'file:///srv/notes', name: 'notes' }] } },
      ]);
    },
    TIMEOUT_MS,
  );

  it(
    'answers sampling sent while the host gets a prompt and elicitation while it reads a resource, attributed to that request',
    async () => {
      const dir = await installed();
      const sampling = vi.fn((_params: unknown, context: ClientRequestContext) => modelAnswer(`summary for ${context.plugin_id}`));
      const elicitation = vi.fn((_params: unknown, _context: ClientRequestContext) => ({ action: 'accept' as const, content: { answer: 'the review' } }));
      const host = await pool.open(dir, { clientRequests: { sampling, elicitation } });
      const reports: unknown[] = [];
      host.events.on('client_request', (report) => reports.push(report));

      const prompt = (await host.getPrompt('host-callbacks', 'summarize', { topic: 'the notes' }))._unsafeUnwrap();
      expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'summary for host-callbacks' } }]);
      expect(sampling).toHaveBeenCalledTimes(1);
      const [params, context] = sampling.mock.calls[0] ?? [];
      expect(params).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: 'Summarize the notes' } }] });
      expect(context?.op_id).toBeUndefined();
      expect(context?.cause).toEqual({ method: 'prompts/get', name: 'summarize' });

      const read = (await host.readResource('host-callbacks', 'notes://today'))._unsafeUnwrap();
      expect(read.contents).toEqual([{ uri: 'notes://today', text: 'the review' }]);
      expect(elicitation).toHaveBeenCalledTimes(1);
      expect(elicitation.mock.calls[0]?.[1].cause).toEqual({ method: 'resources/read', uri: 'notes://today' });
      expect(reports).toEqual([
        { plugin_id: 'host-callbacks', method: 'sampling/createMessage', outcome: 'answered', duration_ms: expect.any(Number) },
        { plugin_id: 'host-callbacks', method: 'elicitation/create', outcome: 'answered', duration_ms: expect.any(Number) },
      ]);
    },
    TIMEOUT_MS,
  );

  it(
    'refuses an elicitation the plugin sends while the host re-lists prompts on its list_changed, without calling the callback',
    async () => {
      const dir = await installed();
      const elicitation = vi.fn(() => ({ action: 'accept' as const, content: { answer: 'hunter2' } }));
      const host = await pool.open(dir, { clientRequests: { elicitation } });
      const reports: Record<string, unknown>[] = [];
      host.events.on('client_request', (report) => reports.push(report as unknown as Record<string, unknown>));
      // What an application naturally does: re-list what changed.
      const relisted: unknown[] = [];
      host.events.on('list_changed', (change) => {
        if (change.list !== 'prompts') return;
        void host.prompts(change.plugin_id).then((listed) => relisted.push(listed.map((prompts) => prompts.map((p) => p.name))._unsafeUnwrap()));
      });

      expect(answerOf((await host.call(op('provoke'), { delay_ms: LATER_MS }))._unsafeUnwrap())).toEqual({ scheduled: 'list_changed' });
      await waitUntil(() => reports.length > 0 && relisted.length > 0);

      expect(elicitation).not.toHaveBeenCalled();
      expect(relisted[0]).toEqual(['summarize', 'held']);
      expect(reports).toEqual([{ plugin_id: 'host-callbacks', method: 'elicitation/create', outcome: 'refused', error_code: INVALID_REQUEST, duration_ms: expect.any(Number) }]);
      const outcomes = answerOf((await host.call(op('later_outcomes'), { count: 1 }))._unsafeUnwrap()).outcomes;
      expect(outcomes).toEqual([{ kind: 'elicitation', error: { code: INVALID_REQUEST, message: expect.stringMatching(/no request of the host is in flight/) } }]);
    },
    TIMEOUT_MS,
  );

  it(
    "answers a tool call's sampling by the call's own handlers while the host's prompts/get is in flight",
    async () => {
      const dir = await installed();
      const hostSampling = vi.fn(() => modelAnswer('the host model'));
      const host = await pool.open(dir, { clientRequests: { sampling: hostSampling } });
      const clientSampling = vi.fn((_params: unknown, _context: ClientRequestContext) => modelAnswer('client A model'));

      // The plugin holds the prompt until the call below has its answer: both are in flight when it samples.
      const prompt = host.getPrompt('host-callbacks', 'held');
      const outcome = await host.call(op('ask_model_while_held'), { question: 'q' }, { clientRequests: { caller: 'client-A', sampling: clientSampling } });
      // Before R4 F6's fix: PLUGIN_TOOL_ERROR, the plugin's sampling refused as "several callers".
      if (outcome.isErr()) throw outcome.error;
      const called = outcome.value;

      expect(answerOf(called)).toMatchObject({ content: { type: 'text', text: 'client A model' } });
      expect(hostSampling).not.toHaveBeenCalled();
      expect(clientSampling).toHaveBeenCalledTimes(1);
      const context = clientSampling.mock.calls[0]?.[1];
      expect(context?.op_id).toBe(op('ask_model_while_held'));
      expect(context?.cause).toBeUndefined();
      expect((await prompt)._unsafeUnwrap().messages).toEqual([{ role: 'user', content: { type: 'text', text: 'released' } }]);
    },
    TIMEOUT_MS,
  );
});
