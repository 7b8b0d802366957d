import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { err, ok, type Result } from 'neverthrow';
import { isJsonObject } from '../../framing/jsonRpcValues.js';
import { repairCallToolResult } from './answerLeniency.js';


/** A `{ "type": "text", "text": "…" }` block and nothing else: the content block most tools answer with. */
function isBareTextBlock(block: unknown): boolean {
  if (!isJsonObject(block) || block.type !== 'text' || typeof block.text !== 'string') return false;
  let keys = 0;
  for (const key in block) {
    if (key !== 'type' && key !== 'text') return false;
    keys++;
  }
  return keys === 2;
}

/**
 * Whether the SDK's `CallToolResultSchema` would accept `value` and give it
 * back unchanged: its members the schema knows are well formed and need no
 * default, and every content block is bare text (the schema strips members
 * it does not know from content blocks, and checks annotations, resources,
 * base64 data and `_meta` in detail).
 */
function isPlainCallToolResult(value: unknown): value is CallToolResult {
  if (!isJsonObject(value) || value._meta !== undefined) return false;
  const { content, structuredContent, isError } = value;
  if (!Array.isArray(content)) return false;
  if (structuredContent !== undefined && !isJsonObject(structuredContent)) return false;
  if (isError !== undefined && typeof isError !== 'boolean') return false;
  for (const block of content) if (!isBareTextBlock(block)) return false;
  return true;
}

/**
 * A `tools/call` result checked as the SDK `Client` checks it: the common
 * shape (bare text blocks, optional `structuredContent` and `isError`) by a
 * walk that accepts exactly what the schema accepts unchanged; anything else
 * by the SDK's own `CallToolResultSchema`, whose verdict and output (defaults
 * filled, unknown members of content blocks stripped) are returned as they are.
 * A result the schema refuses is read again without the null members a
 * server may send for absent ones (`etc/answer-leniency.json`).
 */
export function readCallToolResult(value: unknown): Result<CallToolResult, Error> {
  if (isPlainCallToolResult(value)) return ok(value);
  const parsed = CallToolResultSchema.safeParse(value);
  if (parsed.success) return ok(parsed.data);
  const repaired = repairCallToolResult(value);
  if (repaired === undefined) return err(parsed.error);
  const reparsed = CallToolResultSchema.safeParse(repaired);
  return reparsed.success ? ok(reparsed.data) : err(reparsed.error);
}
