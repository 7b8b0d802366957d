/**
 * ClientAsks on its own (no gateway, no sandbox): the places and bytes of
 * the plugin requests waiting for one client come back however a request
 * settles (answered, refused by the client, timed out, cancelled), and a
 * request past the count or the byte budget is refused before it is sent,
 * taking nothing. test/gateway/pendingClientRequests.test.ts shows the bound
 * through a real gateway.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { ClientAsks } from '../../src/gateway/clientAsks.js';
import type { BodyBudget } from '../../src/gateway/streamableHttpTransport.js';

/** A budget of `limit` bytes that tells how many it holds. */
function budgetOf(limit: number): BodyBudget & { held: () => number } {
  let held = 0;
  return {
    take: (bytes) => (held + bytes > limit ? false : ((held += bytes), true)),
    give: (bytes) => void (held -= bytes),
    held: () => held,
  };
}

/** A send that settles when told to. */
function heldSend(): { send: () => Promise<string>; answer: () => void; fail: () => void; sent: () => number } {
  let sent = 0;
  const settles: { resolve: (v: string) => void; reject: (e: Error) => void }[] = [];
  return {
    send: () => {
      sent += 1;
      return new Promise<string>((resolve, reject) => settles.push({ resolve, reject }));
    },
    answer: () => settles.shift()?.resolve('answered'),
    fail: () => settles.shift()?.reject(new McpError(ErrorCode.RequestTimeout, 'Request timed out')),
    sent: () => sent,
  };
}

const refusal = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => 'sent',
    (error: unknown) => (error instanceof McpError ? error.code : error),
  );

describe('ClientAsks', () => {
  it('refuses the request past the count before sending it, and gives each place back however its request settled', async () => {
    const asks = new ClientAsks(2);
    const held = heldSend();
    const first = asks.ask('sampling/createMessage', {}, held.send);
    const second = refusal(asks.ask('roots/list', undefined, held.send));
    expect(await refusal(asks.ask('elicitation/create', {}, held.send))).toBe(ErrorCode.InvalidRequest);
    expect(held.sent()).toBe(2);

    held.answer();
    expect(await first).toBe('answered');
    held.fail();
    expect(await second).toBe(ErrorCode.RequestTimeout);
    // Both places are free again: two more are sent.
    const again = [asks.ask('sampling/createMessage', {}, held.send), asks.ask('sampling/createMessage', {}, held.send)];
    expect(held.sent()).toBe(4);
    held.answer();
    held.answer();
    expect(await Promise.all(again)).toEqual(['answered', 'answered']);
  });

  it('holds the bytes of each request against the budget while it waits, refusing one that does not fit', async () => {
    const budget = budgetOf(100);
    const asks = new ClientAsks(16, budget);
    const held = heldSend();
    const params = { text: 'x'.repeat(50) }; // 61 bytes as JSON: a second one does not fit in 100
    const waiting = asks.ask('sampling/createMessage', params, held.send);
    expect(budget.held()).toBe(JSON.stringify(params).length);
    const refused = await refusal(asks.ask('sampling/createMessage', params, held.send));
    expect({ refused, sent: held.sent(), held: budget.held() }).toEqual({ refused: ErrorCode.InvalidRequest, sent: 1, held: 61 });
    held.fail();
    await refusal(waiting);
    expect(budget.held()).toBe(0);
  });
});
