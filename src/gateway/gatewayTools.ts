/**
 * The tools a gateway offers: every operation of every active plugin, under
 * its op id, described as the plugin lists it (schemas, title and annotations
 * passed through), except the two hints that state a tool's risk, which say
 * the host's risk class. Built on demand and kept until the set of active
 * plugins changes.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ResultAsync } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import type { OperationView, PluginRow } from '../host/inventory.js';
import type { PluginHost } from '../host/PluginHost.js';
import type { RiskClass } from '../manifest/model.js';
import type { ToolDescriptor } from '../shapes/PluginSession.js';
import { InvalidatedCache } from './invalidatedCache.js';

/** One tool as the gateway lists it. */
export interface GatewayTool {
  /** The op id it is listed and called by. */
  readonly opId: string;
  /** Its MCP description. */
  readonly tool: Tool;
}

const ANY_OBJECT: Tool['inputSchema'] = { type: 'object' };

function objectSchema(schema: unknown): schema is Tool['inputSchema'] {
  return typeof schema === 'object' && schema !== null && (schema as { type?: unknown }).type === 'object';
}

/**
 * MCP clients approve tools by `readOnlyHint` and `destructiveHint` (some run read-only tools unasked), so those
 * two say the more cautious of the host's risk class (the one its ceilings hold the tool to) and the plugin's own
 * hints, read with MCP's defaults (not read-only; destructive unless said otherwise): a plugin that lists a `write`
 * or `destructive` tool as read-only must not make a client skip its question, nor may a manifest's `read` or
 * `write` make a tool the plugin calls writing or destructive look safer.
 */
function riskAnnotations(risk: RiskClass, listed: Tool['annotations'] | undefined): NonNullable<Tool['annotations']> {
  const readOnly = risk === 'read' && listed?.readOnlyHint !== false && listed?.destructiveHint !== true;
  return { ...listed, readOnlyHint: readOnly, destructiveHint: !readOnly && (risk === 'destructive' || listed?.destructiveHint !== false) };
}

function describe(operation: OperationView, listed: ToolDescriptor | undefined): Tool {
  const description = listed?.description ?? operation.description ?? undefined;
  return {
    name: operation.op_id,
    ...(listed?.title === undefined ? {} : { title: listed.title }),
    ...(description === undefined ? {} : { description }),
    inputSchema: objectSchema(listed?.inputSchema) ? listed.inputSchema : ANY_OBJECT,
    ...(objectSchema(listed?.outputSchema) ? { outputSchema: listed.outputSchema as Tool['outputSchema'] } : {}),
    annotations: riskAnnotations(operation.risk_class, listed?.annotations as Tool['annotations'] | undefined),
  };
}

/** A digest of what makes the tool list differ: which plugins are active, at which version. */
export function activeFingerprint(rows: readonly PluginRow[]): string {
  return JSON.stringify(rows.filter((r) => r.status === 'active').map((r) => [r.name, r.version]));
}

/** The tool list of one host, cached until {@link GatewayTools.invalidate}. */
export class GatewayTools {
  readonly #host: PluginHost;
  readonly #tools = new InvalidatedCache(() => this.#build());

  constructor(host: PluginHost) {
    this.#host = host;
  }

  /** Forgets the cached list; the next {@link GatewayTools.list} builds it again. */
  invalidate(): void {
    this.#tools.invalidate();
  }

  /** Every tool of every active plugin, by op id. */
  list(): ResultAsync<readonly GatewayTool[], HostError> {
    return this.#tools.get();
  }

  #build(): ResultAsync<readonly GatewayTool[], HostError> {
    const host = this.#host;
    return host.list().andThen((rows) =>
      ResultAsync.combine(rows.filter((r) => r.status === 'active').map((row) => this.#pluginTools(row.name))).map((perPlugin) => perPlugin.flat()),
    );
  }

  #pluginTools(pluginId: string): ResultAsync<readonly GatewayTool[], HostError> {
    const host = this.#host;
    return host.info(pluginId).andThen((info) =>
      ResultAsync.fromSafePromise(
        // A plugin that cannot start now still has its tools listed from the catalog; calling one reports why it fails.
        host.tools(pluginId).match(
          (listed) => listed,
          (): readonly ToolDescriptor[] => [],
        ),
      ).map((listed) => {
        const byName = new Map(listed.map((t) => [t.name, t]));
        return info.operations.map((operation): GatewayTool => ({ opId: operation.op_id, tool: describe(operation, byName.get(operation.tool_name)) }));
      }),
    );
  }
}
