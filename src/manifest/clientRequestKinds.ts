/**
 * The requests a plugin may send to its MCP client (sampling, elicitation,
 * roots): the kinds a manifest can declare, read from the GUM manifest
 * schema so that the list lives in one place, and the check that only
 * MCP-speaking shapes declare them.
 */
import gumV1Schema from '../../etc/schemas/gum-manifest-v1.schema.json' with { type: 'json' };
import { own, ownString } from './access.js';
import type { ClientRequestKind, ManifestForm, ManifestShape } from './model.js';
import { violation, type Violation } from './violations.js';

/** Every kind of client request a manifest may declare, in the schema's order. */
export const CLIENT_REQUEST_KINDS: readonly ClientRequestKind[] = Object.freeze([...gumV1Schema.$defs.clientRequestKind.enum] as ClientRequestKind[]);

/** The shapes whose protocol lets a plugin send requests to its client: the MCP-speaking ones. */
export const CLIENT_REQUEST_SHAPES: readonly ManifestShape[] = Object.freeze(['mcp-plugin', 'esm-module'] as const);

/** Whether `value` names a client request kind. */
export function isClientRequestKind(value: unknown): value is ClientRequestKind {
  return typeof value === 'string' && (CLIENT_REQUEST_KINDS as readonly string[]).includes(value);
}

/** The MCP method each kind answers. */
export const CLIENT_REQUEST_METHODS: Readonly<Record<ClientRequestKind, string>> = Object.freeze({
  sampling: 'sampling/createMessage',
  elicitation: 'elicitation/create',
  roots: 'roots/list',
});

/**
 * declared_capabilities.client_requests of a GUM manifest whose shape cannot
 * send requests to a client (ndjson-rpc, handshake, grpc-subprocess) →
 * PLUGIN_CLIENT_REQUESTS_INVALID. Unknown kinds are the schema's to report.
 */
export function checkClientRequestShape(doc: unknown, form: ManifestForm): Violation[] {
  if (form === 'open-discovery') return [];
  const list = own(own(doc, 'declared_capabilities'), 'client_requests');
  if (!Array.isArray(list) || list.length === 0) return [];
  const shape = form === 'gum-toml' ? ownString(own(doc, 'plugin'), 'shape') : ownString(doc, 'shape');
  if (shape === undefined || (CLIENT_REQUEST_SHAPES as readonly string[]).includes(shape)) return [];
  return [
    violation(
      'structure',
      'PLUGIN_CLIENT_REQUESTS_INVALID',
      '/declared_capabilities/client_requests',
      `a ${shape} plugin cannot send requests to a client; only ${CLIENT_REQUEST_SHAPES.join(' and ')} plugins may declare client_requests`,
    ),
  ];
}
