import type { CapturedTool } from './CaptureServer.js';
import { schemaKind, zodFromJsonSchema } from './schemaKinds.js';

/**
 * Tool names as the MCP specification recommends them: 1–128 characters of
 * ASCII letters, digits, `_`, `-` and `.`.
 */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** One tool that failed validation, with every reason. */
export interface InvalidTool {
  /** The tool's name as registered. */
  readonly name: string;
  /** Every problem found, for people. */
  readonly problems: readonly string[];
}

function schemaProblems(label: 'inputSchema' | 'outputSchema', value: unknown): string[] {
  switch (schemaKind(value)) {
    case 'absent':
    case 'zod-raw-shape':
    case 'zod-object':
      return [];
    case 'json-schema': {
      const converted = zodFromJsonSchema(value as Record<string, unknown>);
      return 'error' in converted ? [`${label} is a JSON Schema the host cannot use: ${converted.error}`] : [];
    }
    case 'unsupported':
      return [`${label} must be a zod raw shape, a zod object schema or a JSON Schema with type "object"`];
  }
}

/** Every problem of one captured tool; empty when it is valid. */
export function toolProblems(tool: CapturedTool): string[] {
  const problems: string[] = [];
  if (!TOOL_NAME_PATTERN.test(tool.name)) problems.push(`name ${JSON.stringify(tool.name)} must match ${TOOL_NAME_PATTERN.source}`);
  const { description } = tool.config;
  if (typeof description !== 'string' || description.trim() === '') problems.push('description must be a non-empty string');
  problems.push(...schemaProblems('inputSchema', tool.config.inputSchema), ...schemaProblems('outputSchema', tool.config.outputSchema));
  return problems;
}

/** Splits captured tools into valid ones and invalid ones with their problems. */
export function validateTools(tools: readonly CapturedTool[]): { readonly valid: readonly CapturedTool[]; readonly invalid: readonly InvalidTool[] } {
  const valid: CapturedTool[] = [];
  const invalid: InvalidTool[] = [];
  for (const tool of tools) {
    const problems = toolProblems(tool);
    if (problems.length === 0) valid.push(tool);
    else invalid.push({ name: tool.name, problems });
  }
  return { valid, invalid };
}
