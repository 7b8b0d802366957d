/**
 * The ids of the requests the gateway sends a client (a confirmation, a
 * plugin's forwarded sampling, elicitation or roots request), stdio and HTTP
 * alike: each client's SDK `Server` numbers them, from 0 unless told otherwise.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';

/** The SDK `Protocol`'s counter of the next request id it sends (a TypeScript-private field, a plain property at run time). */
interface RequestCounter {
  _requestMessageId?: unknown;
}

/**
 * Makes `server` number its requests to its client from 1. The SDK's
 * `Client` (as its `Server`) drops a `notifications/cancelled` whose
 * `requestId` is falsy (it tests the id for truth), so the first request the
 * gateway sent an SDK client, id 0, could not be cancelled there: a client
 * whose plugin call or prompt ended kept sampling or asking its user for it.
 * Call before the server sends anything. An SDK without the counter leaves the
 * numbering as it is (test/gateway/clientCancellation.test.ts shows it).
 */
export function numberRequestsFromOne(server: Server): void {
  const counter = server as unknown as RequestCounter;
  if (counter._requestMessageId === 0) counter._requestMessageId = 1;
}
