import { z } from 'zod';
import { isRecord } from '../../manifest/access.js';

/**
 * What a tool's `inputSchema`/`outputSchema` is. McpServer (SDK 1.x) takes
 * zod only; Open Discovery plugins may also hand a JSON Schema object, which
 * the loader converts to zod before registering.
 */
export type SchemaKind = 'absent' | 'zod-raw-shape' | 'zod-object' | 'json-schema' | 'unsupported';

/** Whether a value is a zod 3 or zod 4 schema (by its internals, since the plugin may bundle its own zod). */
export function isZodSchema(value: unknown): boolean {
  return isRecord(value) && ('_zod' in value || '_def' in value);
}

function isZodObjectSchema(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const v4 = value['_zod'];
  if (isRecord(v4) && isRecord(v4['def'])) return v4['def']['type'] === 'object';
  const v3 = value['_def'];
  return isRecord(v3) && v3['typeName'] === 'ZodObject';
}

/** Classifies a schema value; an empty object is a raw shape with no fields, as the SDK reads it. */
export function schemaKind(value: unknown): SchemaKind {
  if (value === undefined) return 'absent';
  if (isZodSchema(value)) return isZodObjectSchema(value) ? 'zod-object' : 'unsupported';
  if (!isRecord(value)) return 'unsupported';
  const fields = Object.values(value);
  if (fields.length === 0 || fields.every(isZodSchema)) return 'zod-raw-shape';
  return value['type'] === 'object' ? 'json-schema' : 'unsupported';
}

/** A zod object schema equivalent to a JSON Schema, or the reason it has none. */
export function zodFromJsonSchema(schema: Record<string, unknown>): { readonly schema: z.ZodType } | { readonly error: string } {
  try {
    const converted = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    return isZodObjectSchema(converted) ? { schema: converted } : { error: 'does not describe an object' };
  } catch (cause) {
    return { error: cause instanceof Error ? cause.message : String(cause) };
  }
}
