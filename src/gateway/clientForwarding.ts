/**
 * What a gateway client is asked on behalf of its requests: a `high_stakes_write`
 * confirmation becomes an `elicitation/create` to that client, and the
 * plugin's own sampling, elicitation and roots requests during the call (or
 * during the client's `prompts/get`, `resources/read`, `completion/complete`) are
 * forwarded to it. Both go out on the client's own request (its
 * HTTP stream), and only when the client declared the capability; otherwise
 * the confirmation fails with PLUGIN_CONFIRMATION_UNAVAILABLE and the
 * plugin's request is refused with a JSON-RPC error.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { ClientRequestContext, ClientRequestHandlers } from '../host/clientRequests.js';
import type { ConfirmationCallback, ConfirmationRequest } from '../host/admission.js';
import type { ClientAsks } from './clientAsks.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';

/** The context of one `tools/call` the gateway serves. */
export type GatewayRequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What `host.call` is given so that the calling client answers for it. */
export interface ClientAnswers {
  /** Asks the client to confirm a high_stakes_write call. */
  readonly confirm: ConfirmationCallback;
  /** Forwards the plugin's requests to the client. */
  readonly clientRequests: ClientRequestHandlers;
}

const forwardOptions = (context: ClientRequestContext): { signal: AbortSignal; timeout: number } => ({ signal: context.signal, timeout: context.timeoutMs });

function confirmationMessage(request: ConfirmationRequest): string {
  const fields: Readonly<Record<string, string>> = {
    op_id: request.op_id,
    plugin_id: request.plugin_id,
    risk_class: request.risk_class,
    args: JSON.stringify(request.args ?? {}),
  };
  return GATEWAY_DEFAULTS.confirmation.message.replace(/\{(op_id|plugin_id|risk_class|args)\}/g, (_whole, name: string) => fields[name] ?? '');
}

/** Asks the client to confirm through an elicitation: only an accepted form with the confirmation field true runs the call. */
async function confirmByElicitation(server: Server, extra: GatewayRequestExtra, request: ConfirmationRequest): Promise<boolean | HostError> {
  if (server.getClientCapabilities()?.elicitation === undefined) {
    return hostError('PLUGIN_CONFIRMATION_UNAVAILABLE', `${request.op_id} needs confirmation and this MCP client does not support elicitation`, {
      details: { op_id: request.op_id, plugin_id: request.plugin_id },
    });
  }
  const { field, fieldTitle, fieldDescription, timeoutMs } = GATEWAY_DEFAULTS.confirmation;
  const answer = await extra.sendRequest(
    {
      method: 'elicitation/create',
      params: {
        message: confirmationMessage(request),
        requestedSchema: { type: 'object', properties: { [field]: { type: 'boolean', title: fieldTitle, description: fieldDescription } }, required: [field] },
      },
    },
    ElicitResultSchema,
    { signal: extra.signal, timeout: timeoutMs },
  );
  return answer.action === 'accept' && answer.content?.[field] === true;
}

/**
 * The answers of the client behind `server` for one of its `tools/call`
 * requests. `caller` names the client, so that its calls in flight at one
 * plugin count as one party; `asks` bounds the plugin requests waiting for it.
 */
export function clientAnswers(server: Server, extra: GatewayRequestExtra, caller: string, asks: ClientAsks): ClientAnswers {
  return { confirm: (request) => confirmByElicitation(server, extra, request), clientRequests: forwardedRequests(server, extra, caller, asks) };
}

/**
 * The handlers that forward a plugin's sampling, elicitation and roots
 * requests to the client behind `server`, on its request `extra` (a
 * `tools/call`, `prompts/get`, `resources/read` or `completion/complete`):
 * over HTTP they go out on that request's own stream, to the session that
 * asked. Only the kinds the client declared get a handler; the plugin's
 * request of another kind is refused (`Method not found`). `caller` names the
 * client, so that its requests in flight at one plugin count as one party;
 * `asks` holds each request's place among those waiting for the client, and
 * refuses one past its bound before the client sees it.
 */
export function forwardedRequests(server: Server, extra: GatewayRequestExtra, caller: string, asks: ClientAsks): ClientRequestHandlers {
  const capabilities = server.getClientCapabilities() ?? {};
  // One object, handlers added in place: spreads made an object per capability on every call.
  const handlers: { -readonly [K in keyof ClientRequestHandlers]: ClientRequestHandlers[K] } = { caller };
  if (capabilities.sampling !== undefined) {
    handlers.sampling = (params, context) =>
      asks.ask('sampling/createMessage', params, () => extra.sendRequest({ method: 'sampling/createMessage', params }, CreateMessageResultSchema, forwardOptions(context)));
  }
  if (capabilities.elicitation !== undefined) {
    handlers.elicitation = (params, context) =>
      asks.ask('elicitation/create', params, () => extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema, forwardOptions(context)));
  }
  if (capabilities.roots !== undefined) {
    handlers.roots = (params, context) =>
      asks.ask('roots/list', params, () => extra.sendRequest({ method: 'roots/list', ...(params === undefined ? {} : { params }) }, ListRootsResultSchema, forwardOptions(context)));
  }
  return handlers;
}
