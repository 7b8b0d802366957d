/**
 * The repairs the host makes to a plugin's answers before the SDK's strict
 * schemas read them: published servers send shapes the reference clients
 * accept (an input schema without `type`, `null` for a field left out), and a
 * host that refused them would refuse those servers whole. Each repair only
 * narrows or removes, never widens what a tool accepts.
 */
import { isJsonObject } from '../../framing/jsonRpcValues.js';
import leniency from '../../../etc/answer-leniency.json' with { type: 'json' };

/** What was repaired in one `tools/list` answer, for the log. */
export interface ToolListRepairs {
  /** Tools whose input or output schema had no `type` and got `type: "object"`. */
  readonly untypedSchemas: readonly string[];
  /** How many null members were removed. */
  readonly nullsRemoved: number;
}

function withoutNulls(value: Record<string, unknown>, fields: readonly string[]): { value: Record<string, unknown>; removed: number } {
  let removed = 0;
  const kept = { ...value };
  for (const field of fields) {
    if (field in kept && kept[field] === null) {
      delete kept[field];
      removed++;
    }
  }
  return { value: kept, removed };
}

/** `result` without its null `fields`; undefined when it is not an object or has none. */
function resultWithoutNulls(result: unknown, fields: readonly string[]): Record<string, unknown> | undefined {
  if (!isJsonObject(result)) return undefined;
  const repaired = withoutNulls(result, fields);
  return repaired.removed === 0 ? undefined : repaired.value;
}

/** An initialize result without the null members that `etc/answer-leniency.json` lets a server send for absent ones; undefined when it has none. */
export const repairInitializeResult = (result: unknown): Record<string, unknown> | undefined => resultWithoutNulls(result, leniency.nullableInitializeFields);

/** A tools/call result without the null members that `etc/answer-leniency.json` lets a server send for absent ones; undefined when it has none. */
export const repairCallToolResult = (result: unknown): Record<string, unknown> | undefined => resultWithoutNulls(result, leniency.nullableCallResultFields);

// Arguments and structured content are JSON objects by the protocol itself, so `type: "object"` says nothing a schema without a type did not already have to accept from a conforming caller.
const typedSchema = (schema: unknown): { schema: unknown; repaired: boolean } =>
  isJsonObject(schema) && !('type' in schema) ? { schema: { type: 'object', ...schema }, repaired: true } : { schema, repaired: false };

/**
 * The `result` of a `tools/list` answer with the repairs of
 * `etc/answer-leniency.json` made, and what they were; `undefined` when
 * nothing needed one (the answer goes on unchanged). Anything this does not
 * recognise is left as it is, for the SDK's schema to judge.
 */
export function repairToolListResult(result: unknown): { result: Record<string, unknown>; repairs: ToolListRepairs } | undefined {
  if (!isJsonObject(result) || !Array.isArray(result.tools)) return undefined;
  const top = withoutNulls(result, leniency.nullableResultFields);
  let nullsRemoved = top.removed;
  const untypedSchemas: string[] = [];
  const tools = result.tools.map((tool: unknown) => {
    if (!isJsonObject(tool)) return tool;
    const fields = withoutNulls(tool, leniency.nullableToolFields);
    nullsRemoved += fields.removed;
    const repaired = fields.value;
    if (isJsonObject(repaired.annotations)) {
      const annotations = withoutNulls(repaired.annotations, leniency.nullableAnnotationFields);
      nullsRemoved += annotations.removed;
      repaired.annotations = annotations.value;
    }
    const input = typedSchema(repaired.inputSchema);
    const output = typedSchema(repaired.outputSchema);
    if (input.repaired || output.repaired) {
      untypedSchemas.push(String(repaired.name));
      repaired.inputSchema = input.schema;
      if (output.repaired) repaired.outputSchema = output.schema;
    }
    return repaired;
  });
  if (nullsRemoved === 0 && untypedSchemas.length === 0) return undefined;
  return { result: { ...top.value, tools }, repairs: { untypedSchemas, nullsRemoved } };
}
