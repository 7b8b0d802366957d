/**
 * A plugin that floods its client with requests of a declared kind: the host
 * application's callback (its model, its user) is asked at most
 * `etc/client-requests.json`'s `maxInFlightPerProcess` at once for one plugin
 * process; the requests past that are refused at once on the wire.
 */
import type { CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import clientRequestLimits from '../../etc/client-requests.json' with { type: 'json' };
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';
import { answerOf, callbackPackage, op, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 120_000;
const FLOOD = 60;

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removeCallbackPackages());

describe('a plugin flooding its client with sampling requests', () => {
  it(
    'reaches the host callback with at most maxInFlightPerProcess of them at once; the rest are refused',
    async () => {
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      (await installer.install(await callbackPackage('declared'), { canary: false }))._unsafeUnwrap();
      await installer.close();

      // Every callback is held until the test has seen the whole flood arrive (answered or refused).
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let entered = 0;
      const sampling = async (): Promise<CreateMessageResult> => {
        entered += 1;
        await released;
        return { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'test-model' };
      };
      const host = await pool.open(dir, { clientRequests: { sampling } });
      let refused = 0;
      host.events.on('client_request', (report) => {
        if (report.outcome === 'refused') refused += 1;
      });

      const call = host.call(op('ask_model_many'), { count: FLOOD });
      await waitUntil(() => entered + refused === FLOOD, 60_000);
      expect(entered).toBeLessThanOrEqual(clientRequestLimits.maxInFlightPerProcess);
      release();
      const answer = answerOf((await call)._unsafeUnwrap());
      expect(answer).toEqual({ answered: entered, refused: FLOOD - entered });
    },
    TIMEOUT_MS,
  );
});
