/**
 * numberRequestsFromOne against the installed SDK, without a sandbox: the
 * SDK has no public way to choose the first id of the requests a `Server`
 * sends (1.32: no ProtocolOptions key, no method), so the function sets the
 * `Protocol`'s private counter. When an SDK update renames or reshapes that
 * counter, this test fails at once rather than the gateway's first request to
 * a client silently getting id 0 again, which the SDK's Client cannot cancel.
 * (test/gateway/clientCancellation.test.ts shows the same through a real
 * gateway.)
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CreateMessageRequestSchema, ListRootsRequestSchema, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { numberRequestsFromOne } from '../../../src/shapes/mcp/requestIds.js';

async function connected(renumber: boolean): Promise<{ server: Server; ids: RequestId[] }> {
  const server = new Server({ name: 'numbered', version: '1.0.0' }, { capabilities: {} });
  if (renumber) numberRequestsFromOne(server);
  const client = new Client({ name: 'peer', version: '1.0.0' }, { capabilities: { sampling: {}, roots: {} } });
  const ids: RequestId[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, (_request, extra) => {
    ids.push(extra.requestId);
    return { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'm' };
  });
  client.setRequestHandler(ListRootsRequestSchema, (_request, extra) => {
    ids.push(extra.requestId);
    return { roots: [] };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return { server, ids };
}

describe('numberRequestsFromOne', () => {
  it('makes the first request a Server sends id 1, and the next ones count on from there', async () => {
    const { server, ids } = await connected(true);
    await server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 1 });
    await server.listRoots();
    expect(ids).toEqual([1, 2]);
    await server.close();
  });

  it('has something to change: the SDK numbers from 0 on its own (else the function would be needless, or its field renamed)', async () => {
    const { server, ids } = await connected(false);
    await server.listRoots();
    expect(ids).toEqual([0]);
    await server.close();
  });
});
