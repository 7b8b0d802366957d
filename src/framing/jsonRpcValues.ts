/**
 * The shapes of parsed JSON-RPC values that every transport of the host
 * checks before trusting a frame: an object member, and a request id as
 * MCP defines it (a string or an integer).
 */
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/** Whether a parsed JSON value is an object (not an array, not null). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a parsed JSON value is a request id: a string or a safe integer, as the SDK's own schema has it (past 2^53 two ids can parse to one number). */
export function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || Number.isSafeInteger(value);
}
