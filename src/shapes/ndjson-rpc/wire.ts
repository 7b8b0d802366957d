/**
 * Wire types of the mcptest subprocess plugin protocol v1 (seed 002): one JSON
 * object per line each way, close to JSON-RPC 2.0 but without its envelope.
 */

import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { nestedDeeperThan } from '../../framing/nestingDepth.js';
import { has, isRecord } from '../../manifest/access.js';

/** The protocol version this host speaks; additive changes stay under v1. */
export const NDJSON_PROTOCOL_VERSION = 'v1';

/** A request id: minted by the host, unique for the plugin's lifetime, echoed back. */
export type NdjsonRequestId = string | number;

/** Host to plugin: `{"method": …, "params": …, "id": …}`; `params` is omitted when absent. */
export interface NdjsonRequest {
  /** The plugin-defined method; the host treats it as opaque. */
  readonly method: string;
  /** Any JSON value. */
  readonly params?: unknown;
  /** The request id. */
  readonly id: NdjsonRequestId;
}

/** The error object of a failed response. */
export interface NdjsonErrorObject {
  /** -32700…-32603 for protocol failures (JSON-RPC reserved codes), any other integer for the application. */
  readonly code: number;
  /** What went wrong. */
  readonly message: string;
  /** Anything else the plugin attaches. */
  readonly data?: unknown;
}

/** Plugin to host: exactly one of `result` and `error`. */
export type NdjsonResponse =
  | { readonly id: NdjsonRequestId; readonly result: unknown }
  | { readonly id: NdjsonRequestId; readonly error: NdjsonErrorObject };

/** How one stdout line of an ndjson-rpc plugin reads. */
export type ParsedLine =
  | { readonly kind: 'invalid-json'; readonly reason: string }
  | { readonly kind: 'invalid-response'; readonly id: NdjsonRequestId | undefined; readonly reason: string }
  | { readonly kind: 'response'; readonly response: NdjsonResponse };

function isRequestId(value: unknown): value is NdjsonRequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function errorObjectProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return '"error" is not an object';
  if (!Number.isInteger(value.code)) return '"error.code" is not an integer';
  if (typeof value.message !== 'string') return '"error.message" is not a string';
  return undefined;
}

/** Classifies one line against the response schema. */
export function parseResponseLine(line: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { kind: 'invalid-json', reason: error instanceof Error ? error.message : String(error) };
  }
  if (!isRecord(value)) {
    return { kind: 'invalid-response', id: undefined, reason: 'the line is not a JSON object' };
  }
  const id = isRequestId(value.id) ? value.id : undefined;
  if (id === undefined) return { kind: 'invalid-response', id, reason: '"id" is missing or not a string or number' };
  const limit = pluginAnswerLimits.maxNestingDepth;
  // Each level takes two characters (its brackets): a line that short cannot break the bound, and needs no walk.
  if (line.length > 2 * limit && nestedDeeperThan(value, limit)) return { kind: 'invalid-response', id, reason: `the response nests more than ${limit} levels deep` };
  const hasResult = has(value, 'result');
  const hasError = has(value, 'error');
  if (hasResult === hasError) {
    return { kind: 'invalid-response', id, reason: hasResult ? 'both "result" and "error" are present' : 'neither "result" nor "error" is present' };
  }
  if (hasError) {
    const problem = errorObjectProblem(value.error);
    if (problem !== undefined) return { kind: 'invalid-response', id, reason: problem };
    return { kind: 'response', response: { id, error: value.error as NdjsonErrorObject } };
  }
  return { kind: 'response', response: { id, result: value.result } };
}
