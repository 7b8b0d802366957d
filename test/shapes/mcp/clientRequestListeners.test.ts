/**
 * A plugin's requests to its client during one long tool call leave nothing
 * behind once each is answered or refused (attack review R5 F4). Each request
 * attributed to the calls in flight listened for their end, and the listener
 * (about 0.9 KB with its AbortController) stayed with the call until the call
 * ended: a plugin that keeps one call alive with progress (up to
 * maxTotalTimeoutMs, 5 minutes by default) and sends roots/list, or a kind
 * the application has no callback for, one request after another made the
 * host's process hold one per request, as many as it could send. The SDK's
 * own Client and Server, linked in memory, carry the requests.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger, systemClock } from '../../../src/ports/ports.js';
import { answerClientRequests, CallsInFlight, clientCapabilities, type ClientRequestReport, type ClientRequestSettings } from '../../../src/shapes/mcp/clientRequests.js';

const REQUESTS = 40;
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

/** A plugin's side (an SDK Server) linked to the host's client answering with `settings`. */
async function linked(settings: ClientRequestSettings, calls: CallsInFlight): Promise<Server> {
  const client = new Client({ name: 'host', version: '1' }, { capabilities: clientCapabilities(settings) });
  answerClientRequests(client, settings, calls, systemClock, silentLogger);
  const server = new Server({ name: 'plugin', version: '1' }, { capabilities: {} });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(clientSide), server.connect(serverSide)]);
  open.push(client, server);
  return server;
}

describe('client requests during one long call', () => {
  it('answered ones, refused ones and withdrawn ones stop listening for the call to end; the call still ends those in flight', async () => {
    const reports: ClientRequestReport[] = [];
    const calls = new CallsInFlight(true);
    let held: ((value: never) => void) | undefined;
    const server = await linked(
      {
        pluginId: 'asker',
        kinds: ['roots', 'sampling', 'elicitation'],
        // No sampling callback: those requests are refused after attribution. An elicitation waits until the call ends.
        handlers: { roots: () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }), elicitation: () => new Promise<never>((resolve) => (held = resolve)) },
        timeoutMs: 60_000,
        onReport: (r) => reports.push(r),
      },
      calls,
    );
    const leave = calls.enter({ opId: 'plug.asker.long' });
    for (let i = 0; i < REQUESTS; i++) {
      expect((await server.listRoots()).roots).toEqual([{ uri: 'file:///work', name: 'work' }]);
      await expect(server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 1 })).rejects.toThrow(/no sampling callback/);
    }
    expect(reports.filter((r) => r.outcome === 'answered')).toHaveLength(REQUESTS);
    expect(reports.filter((r) => r.outcome === 'refused')).toHaveLength(REQUESTS);
    // The call is still in flight; nothing of the answered or refused requests waits for its end.
    expect(calls.listening).toBe(0);

    // One still waiting listens until the call ends, and the end abandons it.
    const pending = server.elicitInput({ message: 'sure?', requestedSchema: { type: 'object', properties: {} } });
    await expect.poll(() => calls.listening).toBe(1);
    expect(held).toBeDefined();
    leave();
    await expect(pending).rejects.toThrow(/the call that caused it ended/);
    expect(calls.listening).toBe(0);
  });
});
