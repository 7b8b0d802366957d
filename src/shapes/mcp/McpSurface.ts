/**
 * The MCP requests beyond tools that the host forwards to an MCP-speaking
 * plugin (resources, prompts, completions, logging), and the notifications
 * it passes back. One table ties each method to its result schema and to
 * the server capability it needs, so the connection sends nothing the
 * plugin did not announce.
 */
import {
  CompleteResultSchema,
  EmptyResultSchema,
  GetPromptResultSchema,
  ListPromptsResultSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesResultSchema,
  ReadResourceResultSchema,
  type CompleteRequest,
  type CompleteResult,
  type GetPromptRequest,
  type GetPromptResult,
  type ListPromptsResult,
  type ListResourcesResult,
  type ListResourceTemplatesResult,
  type LoggingLevel,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { ResultAsync } from 'neverthrow';
import type { OffThreadVerdict } from '../../manifest/answerValidation.js';
import type { HostError } from '../../errors/HostError.js';
import type { SchemaBound } from '../../manifest/schemaLimits.js';
import type { ClientRequestHandlers } from './clientRequests.js';

/** Params and result of every request an {@link McpSurface} sends, by method. */
export interface McpSurfaceMethods {
  'resources/list': { params: { cursor?: string }; result: ListResourcesResult };
  'resources/templates/list': { params: { cursor?: string }; result: ListResourceTemplatesResult };
  'resources/read': { params: { uri: string }; result: ReadResourceResult };
  'resources/subscribe': { params: { uri: string }; result: Record<string, never> };
  'resources/unsubscribe': { params: { uri: string }; result: Record<string, never> };
  'prompts/list': { params: { cursor?: string }; result: ListPromptsResult };
  'prompts/get': { params: GetPromptRequest['params']; result: GetPromptResult };
  'completion/complete': { params: CompleteRequest['params']; result: CompleteResult };
  'logging/setLevel': { params: { level: LoggingLevel }; result: Record<string, never> };
}

/** A method an {@link McpSurface} sends. */
export type McpSurfaceMethod = keyof McpSurfaceMethods;

interface MethodRow {
  readonly schema: { parse(value: unknown): unknown };
  /** Whether the plugin's capabilities allow the method. */
  readonly allowed: (capabilities: ServerCapabilities) => boolean;
  /** The capability named when it does not. */
  readonly capability: string;
}

const resources = (c: ServerCapabilities): boolean => c.resources !== undefined;

/** Result schema and required capability of each surface method. */
export const SURFACE_METHODS: Readonly<Record<McpSurfaceMethod, MethodRow>> = {
  'resources/list': { schema: ListResourcesResultSchema, allowed: resources, capability: 'resources' },
  'resources/templates/list': { schema: ListResourceTemplatesResultSchema, allowed: resources, capability: 'resources' },
  'resources/read': { schema: ReadResourceResultSchema, allowed: resources, capability: 'resources' },
  'resources/subscribe': { schema: EmptyResultSchema, allowed: (c) => c.resources?.subscribe === true, capability: 'resources.subscribe' },
  'resources/unsubscribe': { schema: EmptyResultSchema, allowed: (c) => c.resources?.subscribe === true, capability: 'resources.subscribe' },
  'prompts/list': { schema: ListPromptsResultSchema, allowed: (c) => c.prompts !== undefined, capability: 'prompts' },
  'prompts/get': { schema: GetPromptResultSchema, allowed: (c) => c.prompts !== undefined, capability: 'prompts' },
  'completion/complete': { schema: CompleteResultSchema, allowed: (c) => c.completions !== undefined, capability: 'completions' },
  'logging/setLevel': { schema: EmptyResultSchema, allowed: (c) => c.logging !== undefined, capability: 'logging' },
};

/**
 * Why a listed output schema is not compiled: a bound of schemaLimits.ts it
 * is past, or `process_budget` when it is new after the plugin's process
 * had maxCompiledSchemaBytes of schemas compiled.
 */
export type OutputSchemaBound = SchemaBound | 'process_budget';

/**
 * A notification an MCP-speaking plugin sent that the host passes on. A
 * tools list_changed carries `mismatch` when the new list breaks the
 * manifest (tool calls are then refused with it). Two come from the host
 * itself: `subscription_lost`, a subscription a new process refused, and
 * `output_schema_unchecked`, a listed tool whose output schema is past a
 * bound of the host's compile (`bound`), so its results' structuredContent
 * is passed on unchecked against it (once per tool per process), and
 * `answer_validation`, a result's structuredContent over
 * offThreadValidationBytes handed to a validation worker (`start`) and its
 * verdict (`end`). A `log` with `suppressed` is the host's summary of the
 * messages past the budget of etc/plugin-line-events.json, not the plugin's.
 */
export type McpPluginNotice =
  | { readonly kind: 'list_changed'; readonly list: 'tools'; readonly mismatch?: HostError }
  | { readonly kind: 'output_schema_unchecked'; readonly tool: string; readonly bound: OutputSchemaBound; readonly schemaBytes?: number }
  | { readonly kind: 'answer_validation'; readonly tool: string; readonly phase: 'start' }
  | { readonly kind: 'answer_validation'; readonly tool: string; readonly phase: 'end'; readonly outcome: OffThreadVerdict['kind']; readonly durationMs: number }
  | { readonly kind: 'list_changed'; readonly list: 'resources' | 'prompts' }
  | { readonly kind: 'resource_updated'; readonly uri: string }
  | { readonly kind: 'log'; readonly level: LoggingLevel; readonly logger?: string; readonly data: unknown; readonly suppressed?: number }
  | { readonly kind: 'subscription_lost'; readonly uri: string; readonly error: HostError };

/** The subscriptions and log level a session sets on each process it starts. */
export interface SurfaceState {
  /** URIs subscribed. */
  readonly subscriptions: readonly string[];
  /** The log level set, if one was. */
  readonly logLevel?: LoggingLevel;
}

/** Per-request options of the surface. */
export interface SurfaceRequestOptions {
  /** Time allowed for the answer, in ms. Default the session's call timeout. */
  readonly timeoutMs?: number;
  /** Cancels the request. */
  readonly signal?: AbortSignal;
  /**
   * Who answers the plugin's sampling, elicitation and roots requests sent
   * while this one is in flight (prompts/get, resources/read and
   * completion/complete only); absent: the host's callbacks.
   */
  readonly clientRequests?: ClientRequestHandlers;
}

/**
 * What an MCP-speaking session offers besides tools. Lists are read to the
 * end (every page); a subscription and the log level are kept by the
 * session and set again on each new process it starts (the host carries
 * them into its next session with {@link McpSurface.adopt}).
 */
export interface McpSurface {
  /** The capabilities the running plugin announced at `initialize`, starting it if needed. */
  capabilities(): ResultAsync<ServerCapabilities, HostError>;
  /** Every resource the plugin lists. */
  listResources(options?: SurfaceRequestOptions): ResultAsync<readonly Resource[], HostError>;
  /** Every resource template the plugin lists. */
  listResourceTemplates(options?: SurfaceRequestOptions): ResultAsync<readonly ResourceTemplate[], HostError>;
  /** Every prompt the plugin lists. */
  listPrompts(options?: SurfaceRequestOptions): ResultAsync<readonly Prompt[], HostError>;
  /** One request, answered by the plugin. */
  request<M extends McpSurfaceMethod>(method: M, params: McpSurfaceMethods[M]['params'], options?: SurfaceRequestOptions): ResultAsync<McpSurfaceMethods[M]['result'], HostError>;
  /** Subscribes to a resource's updates, now and on every later process of this session. */
  subscribe(uri: string): ResultAsync<void, HostError>;
  /** Ends a subscription. */
  unsubscribe(uri: string): ResultAsync<void, HostError>;
  /** The URIs subscribed now. */
  readonly subscriptions: ReadonlySet<string>;
  /** Sets the lowest level of log messages the plugin sends, now and on every later process of this session. */
  setLogLevel(level: LoggingLevel): ResultAsync<void, HostError>;
  /**
   * Takes over the subscriptions and log level of an earlier session of the
   * same plugin without sending anything: the next process this session
   * starts gets them. A subscription that process refuses, or no longer
   * offers, is dropped and reported as a `subscription_lost` notice.
   */
  adopt(state: SurfaceState): void;
}
