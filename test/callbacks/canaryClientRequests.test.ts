/**
 * A live canary answers none of its plugin's client requests (review R5): the
 * host-callbacks fixture, declaring sampling, elicitation and roots, samples
 * inside its declared canary tool at install, at setup and on demand, and the
 * application's own sampling callback is never called; the plugin gets the
 * JSON-RPC error of a kind without a callback at once. Whether the canary then
 * passes is the plugin's own handling of that error: `ask_model` turns it into
 * an isError result (the canary fails), `ask_model_many` counts it (it passes).
 * A user's call afterwards is still answered by the application's callback.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { ClientRequestReport } from '../../src/shapes/mcp/clientRequests.js';
import type { CallResult } from '../../src/shapes/PluginSession.js';
import { HostPool } from '../support/hostHarness.js';
import { answerOf, callbackPackage, op, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 180_000;
const METHOD_NOT_FOUND = -32601;

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removeCallbackPackages());

const modelAnswer = (text: string): CreateMessageResult => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-model', stopReason: 'endTurn' });

/** The fixture package under `pluginId`, declaring `tool` with `args` as its canary. */
async function canaryPackage(pluginId: string, tool: string, args: Record<string, unknown>): Promise<string> {
  const dir = await callbackPackage('declared');
  const path = join(dir, 'manifest.json');
  const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  await writeFile(path, JSON.stringify({ ...manifest, plugin_id: pluginId, namespace_owner: `io.example.${pluginId}`, requirements: { canary: { tool, args } } }));
  return dir;
}

/** The application's callbacks, each counting its calls. */
function appCallbacks() {
  return {
    sampling: vi.fn(() => modelAnswer('spent the application model')),
    elicitation: vi.fn(() => ({ action: 'accept' as const, content: { answer: 'asked the user' } })),
    roots: vi.fn(() => ({ roots: [{ uri: 'file:///srv/app', name: 'app' }] })),
  };
}

describe('client requests during a canary', () => {
  it(
    'refuses a sampling request inside the canary at install, setup and on demand without calling the application callback; a plugin that reports the refusal as an error fails its canary',
    async () => {
      const dir = await pool.profile();
      const callbacks = appCallbacks();
      const host = await pool.open(dir, { clientRequests: callbacks });
      const reports: ClientRequestReport[] = [];
      host.events.on('client_request', (report) => reports.push(report));

      const installed = (await host.install(await canaryPackage('canary-asks', 'ask_model', { question: 'Spend your tokens?' })))._unsafeUnwrap();
      const expectRefusedCanary = (outcome: { status: string; mode: string; error?: { code: string; details: Record<string, unknown> } } | undefined): void => {
        expect(outcome).toMatchObject({ plugin_id: 'canary-asks', mode: 'live', status: 'failed', error: { code: 'PLUGIN_TOOL_ERROR' } });
        const refusal = answerOf({ shape: 'mcp-plugin', value: outcome?.error?.details.result, isError: true } as CallResult);
        expect(refusal).toMatchObject({ error: { code: METHOD_NOT_FOUND, message: expect.stringMatching(/sampling\/createMessage is not answered here: the request in flight brings no sampling callback$/) } });
      };
      expectRefusedCanary(installed.canary);

      expectRefusedCanary((await host.setup('canary-asks', {}))._unsafeUnwrap());
      expectRefusedCanary((await host.canary('canary-asks', { live: true }))._unsafeUnwrap());

      expect(callbacks.sampling).not.toHaveBeenCalled();
      expect(callbacks.elicitation).not.toHaveBeenCalled();
      expect(callbacks.roots).not.toHaveBeenCalled();
      // Each refusal is the host's to report, as one of a kind without a callback: at once, attributed to the canary tool.
      expect(reports).toHaveLength(3);
      for (const report of reports) {
        expect(report).toMatchObject({ plugin_id: 'canary-asks', method: 'sampling/createMessage', op_id: op('ask_model', 'canary-asks'), outcome: 'refused', error_code: METHOD_NOT_FOUND });
      }
      // The failed canary holds the plugin, as any failed canary does.
      expect((await host.call(op('ask_model', 'canary-asks'), { question: 'now?' }))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');
    },
    TIMEOUT_MS,
  );

  it(
    'passes the canary of a plugin that handles the refusal itself, and still answers a user call with the application callback afterwards',
    async () => {
      const dir = await pool.profile();
      const first = appCallbacks();
      const installer = await pool.open(dir, { clientRequests: first });
      const installed = (await installer.install(await canaryPackage('canary-counts', 'ask_model_many', { count: 2 })))._unsafeUnwrap();
      expect(installed.canary).toMatchObject({ plugin_id: 'canary-counts', mode: 'live', status: 'passed' });
      expect(answerOf({ shape: 'mcp-plugin', value: installed.canary?.result, isError: false } as CallResult)).toEqual({ answered: 0, refused: 2 });
      await installer.close();
      expect(first.sampling).not.toHaveBeenCalled();

      const callbacks = appCallbacks();
      const host = await pool.open(dir, { clientRequests: callbacks });
      const onDemand = (await host.canary('canary-counts', { live: true }))._unsafeUnwrap();
      expect(onDemand.status).toBe('passed');
      expect(answerOf({ shape: 'mcp-plugin', value: onDemand.result, isError: false } as CallResult)).toEqual({ answered: 0, refused: 2 });
      expect(callbacks.sampling).not.toHaveBeenCalled();

      // The same tool called by the application, on the same plugin process: its callback answers.
      const called = (await host.call(op('ask_model_many', 'canary-counts'), { count: 2 }))._unsafeUnwrap();
      expect(answerOf(called)).toEqual({ answered: 2, refused: 0 });
      expect(callbacks.sampling).toHaveBeenCalledTimes(2);
    },
    TIMEOUT_MS,
  );
});
