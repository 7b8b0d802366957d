/**
 * A plugin's first request to its client, id 0 in an SDK-based plugin's
 * numbering, withdrawn by the plugin (notifications/cancelled, as its own
 * request timeout or an abort sends it): the host's SDK Client drops a cancel
 * whose requestId is falsy, so before the host swapped the id the
 * application's callback ran on until the call ended or clientRequestTimeoutMs
 * passed. A real plugin process (an SDK McpServer in the sandbox) asks and
 * withdraws; the call stays open meanwhile, so only the cancel can stop the
 * callback.
 */
import type { CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';
import { answerOf, callbackPackage, op, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 120_000;
/** What the fixture's cancel says; the callback's signal carries it only when the plugin's cancel aborted it. */
const PLUGIN_REASON = 'withdrawn by host-callbacks';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removeCallbackPackages());

async function installed(): Promise<string> {
  const dir = await pool.profile();
  const installer = await pool.open(dir);
  const outcome = await installer.install(await callbackPackage(), { canary: false });
  if (outcome.isErr()) throw outcome.error;
  await installer.close();
  return dir;
}

describe("a plugin's withdrawn first request", () => {
  it(
    "aborts the callback's signal with the plugin's reason while the call is still open, and the call goes on",
    async () => {
      const dir = await installed();
      const seen: AbortSignal[] = [];
      const host = await pool.open(dir, {
        // Neither the callback's own limit nor the call's timeout can end the callback within the test: only the cancel.
        clientRequestTimeoutMs: 600_000,
        clientRequests: {
          sampling: (_params, context) => {
            seen.push(context.signal);
            return new Promise<CreateMessageResult>(() => undefined);
          },
        },
      });
      const reports: { method: string; outcome: string }[] = [];
      host.events.on('client_request', (report) => reports.push(report));
      const ending = new AbortController();
      // The plugin's first call, so its sampling request is the first it sends: id 0.
      const call = host.call(op('ask_model_withdrawn'), { abort_ms: 100, hold_ms: 600_000 }, { timeoutMs: 600_000, signal: ending.signal });

      await waitUntil(() => seen[0]?.aborted === true);
      expect(seen).toHaveLength(1);
      expect(seen[0]?.reason).toBe(PLUGIN_REASON);
      await waitUntil(() => reports.length === 1);
      expect(reports[0]).toMatchObject({ method: 'sampling/createMessage', outcome: 'abandoned' });

      // The call was open all along; the plugin's own sendRequest had failed with its abort, not with an answer.
      ending.abort();
      const ended = await call;
      expect(ended.isErr()).toBe(true);
    },
    TIMEOUT_MS,
  );

  it(
    'still answers a first request the plugin keeps, under the id the plugin gave it',
    async () => {
      const dir = await installed();
      const host = await pool.open(dir, {
        clientRequests: {
          sampling: () => ({ role: 'assistant', content: { type: 'text', text: 'kept' }, model: 'test-model', stopReason: 'endTurn' }),
        },
      });
      // With the answer's id swapped wrongly the plugin's SDK would not match it and the call would time out instead.
      const outcome = await host.call(op('ask_model'), { question: 'first' }, { timeoutMs: 60_000 });
      expect(answerOf(outcome._unsafeUnwrap())).toMatchObject({ content: { type: 'text', text: 'kept' } });
    },
    TIMEOUT_MS,
  );
});
