/**
 * Host call outcomes as MCP `CallToolResult`s. A failure is a result with
 * `isError: true` (never a JSON-RPC error) so that the model sees it, with
 * the host's stable code in its text and under a `_meta` key. Not in
 * `structuredContent`: SDK clients check any structured content against the
 * tool's output schema, error or not, and would reject the result.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import type { CallResult } from '../shapes/PluginSession.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';

/** What an error result says about the host failure behind it. */
export interface GatewayErrorPayload {
  /** The stable host error code. */
  readonly code: string;
  /** What went wrong. */
  readonly message: string;
  /** What to do about it. */
  readonly hint: string;
  /** A delay before retrying, when the host knows one. */
  readonly retry_after_ms?: number;
}

function errorPayload(error: HostError): GatewayErrorPayload {
  return {
    code: error.code,
    message: error.message,
    hint: error.hint,
    ...(error.retry_after_ms === undefined ? {} : { retry_after_ms: error.retry_after_ms }),
  };
}

function isCallToolResult(value: unknown): value is CallToolResult {
  return typeof value === 'object' && value !== null && Array.isArray((value as { content?: unknown }).content);
}

/** The MCP result of a host failure. */
export function errorResult(error: HostError): CallToolResult {
  const payload = errorPayload(error);
  const meta = { [GATEWAY_DEFAULTS.errorMetaKey]: payload };
  // The tool's own failure goes to the client as the tool wrote it; the code rides along.
  const own = error.code === 'PLUGIN_TOOL_ERROR' ? error.details.result : undefined;
  if (isCallToolResult(own)) return { ...own, isError: true, _meta: { ...own._meta, ...meta } };
  return {
    content: [{ type: 'text', text: `${payload.code}: ${payload.message}\nhint: ${payload.hint}` }],
    isError: true,
    _meta: meta,
  };
}

/** The MCP result of a host call: an MCP plugin's result unchanged, another protocol's payload as JSON text. */
export function toolResult(outcome: Result<CallResult, HostError>): CallToolResult {
  if (outcome.isErr()) return errorResult(outcome.error);
  const result = outcome.value;
  if (result.shape === 'mcp-plugin' || result.shape === 'esm-module') return result.value;
  return { content: [{ type: 'text', text: JSON.stringify(result.value) }], isError: result.isError };
}
