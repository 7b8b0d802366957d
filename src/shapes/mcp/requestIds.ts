/**
 * The ids of the requests the host's SDK peers send: the gateway's `Server`
 * to each client (a confirmation, a plugin's forwarded sampling, elicitation
 * or roots request), stdio and HTTP alike, and the ESM runner's `McpServer`
 * to the host's `Client`. The SDK numbers them from 0 unless told otherwise.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';

/** The SDK `Protocol`'s counter of the next request id it sends (a TypeScript-private field, a plain property at run time). */
interface RequestCounter {
  _requestMessageId?: unknown;
}

/**
 * Makes `server` number its requests to its peer from 1. The SDK's
 * `Client` (as its `Server`) drops a `notifications/cancelled` whose
 * `requestId` is falsy (it tests the id for truth), so the first request a
 * server sent an SDK client, id 0, could not be cancelled there: a gateway
 * client whose plugin call or prompt ended kept sampling or asking its user
 * for it, and the host kept running an ESM plugin's first withdrawn request.
 * Call before the server sends anything. The SDK (1.32) offers no public way to
 * choose the first id (no `ProtocolOptions` key, no method), hence the private
 * counter; an SDK that renames it leaves the numbering as it is, which
 * test/shapes/mcp/requestIds.test.ts (no sandbox) and
 * test/gateway/clientCancellation.test.ts catch.
 */
export function numberRequestsFromOne(server: Server): void {
  const counter = server as unknown as RequestCounter;
  if (counter._requestMessageId === 0) counter._requestMessageId = 1;
}
