/**
 * One `tools/call` of one gateway client, whichever way it arrived (the
 * SDK server's request handler, or the stdio fast path that parses the
 * frame itself): the client's filter, `host.call` under its risk ceiling
 * with its confirmations, forwarded plugin requests, cancellation and
 * progress, inside the gateway's SERVER span.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { hostError } from '../errors/HostError.js';
import type { PluginHost } from '../host/PluginHost.js';
import type { RiskClass } from '../manifest/model.js';
import type { HostTelemetry } from '../observability/telemetry.js';
import { clientAnswers, type GatewayRequestExtra } from './clientForwarding.js';
import { offeredTo, type GatewayClientPolicy } from './clientPolicy.js';
import { errorResult, toolResult } from './toolResults.js';

/** Who a client server serves, as the audit records and spans name the caller: the HTTP client's name (`default` for the default token) or `stdio`. */
export interface ClientIdentity {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
}

/** Everything fixed about one client's calls. */
export interface ToolCallClient {
  readonly host: PluginHost;
  readonly server: Server;
  readonly policy: GatewayClientPolicy;
  readonly maxRisk: RiskClass;
  /** Names the client to the host, so that its calls in flight at one plugin count as one party. */
  readonly caller: string;
  readonly identity: ClientIdentity;
  readonly telemetry: HostTelemetry;
}

/** What a `tools/call` asks, once its frame is checked. */
export interface ToolCallParams {
  readonly name: string;
  readonly arguments?: Record<string, unknown> | undefined;
  readonly progressToken?: string | number | undefined;
}

/** Runs one `tools/call` of `client`; a failure is an `isError` result carrying the host code, never a rejection. */
export async function callForClient(client: ToolCallClient, params: ToolCallParams, extra: GatewayRequestExtra): Promise<CallToolResult> {
  const opId = params.name;
  if (!offeredTo(client.policy, opId)) {
    return errorResult(hostError('VARIANT_NOT_FOUND', `no operation ${JSON.stringify(opId)} is offered to this client`, { details: { op_id: opId } }));
  }
  const { identity } = client;
  const { progressToken } = params;
  const served = { opId, clientName: identity.name, transport: identity.transport, sessionId: extra.sessionId };
  const outcome = await client.telemetry.served(served, () =>
    client.host.call(opId, params.arguments ?? {}, {
      maxRisk: client.maxRisk,
      ...clientAnswers(client.server, extra, client.caller),
      signal: extra.signal,
      caller: { id: identity.name, transport: identity.transport, ...(extra.sessionId === undefined ? {} : { session: extra.sessionId }) },
      ...(progressToken === undefined
        ? {}
        : {
            onProgress: (p) =>
              void extra
                .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: p.progress, ...(p.total === undefined ? {} : { total: p.total }), ...(p.message === undefined ? {} : { message: p.message }) } })
                .catch(() => undefined),
          }),
    }),
  );
  return toolResult(outcome);
}
