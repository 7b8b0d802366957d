import { hostError, type HostError } from '../../errors/HostError.js';
import type { ToolDescriptor } from '../PluginSession.js';
import type { CapturedTool, CapturedToolConfig } from './CaptureServer.js';
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

/** One tool a plugin registered, as the host's tool validator sees it. */
export interface EsmToolUnderValidation {
  /** The plugin's id (its manifest `name`). */
  readonly plugin: string;
  /** The tool's name as registered. */
  readonly name: string;
  /** The config it was registered with (title, description, schemas, annotations). */
  readonly config: CapturedToolConfig;
}

/**
 * The host's own tool validation, the counterpart of the Open Discovery
 * loader's ToolValidationManager: called once for each tool a plugin
 * registers that passed the loader's checks, before anything is registered.
 * It returns the problems it finds (empty: the tool is valid). A tool with
 * problems is skipped with a warning, or, under `strictTools`, fails the
 * plugin's load with PLUGIN_TOOL_INVALID; a validator that throws refuses
 * the tool with its message.
 */
export type EsmToolValidator = (tool: EsmToolUnderValidation) => readonly string[];

function validatorProblems(validator: EsmToolValidator, tool: EsmToolUnderValidation): string[] {
  try {
    return [...validator(tool)];
  } catch (cause) {
    return [`the host's tool validator failed: ${cause instanceof Error ? cause.message : String(cause)}`];
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

/**
 * Splits captured tools into valid ones and invalid ones with their problems:
 * the loader's own checks, then, for a tool that passes them, the host's
 * `validator` when there is one.
 */
export function validateTools(
  tools: readonly CapturedTool[],
  hostValidator?: { readonly plugin: string; readonly validate: EsmToolValidator },
): { readonly valid: readonly CapturedTool[]; readonly invalid: readonly InvalidTool[] } {
  const valid: CapturedTool[] = [];
  const invalid: InvalidTool[] = [];
  for (const tool of tools) {
    const own = toolProblems(tool);
    const problems = own.length > 0 || hostValidator === undefined ? own : validatorProblems(hostValidator.validate, { plugin: hostValidator.plugin, name: tool.name, config: tool.config });
    if (problems.length === 0) valid.push(tool);
    else invalid.push({ name: tool.name, problems });
  }
  return { valid, invalid };
}

/**
 * The host's tool validator applied to the tools an installed plugin's
 * runner lists (PluginHost's `esmLoader.validateTool`): the tools were
 * registered inside the sandbox, so the host checks what they were
 * registered as. Any refused tool is PLUGIN_TOOL_INVALID for the plugin, as
 * under `strictTools`: the host's operation ids are fixed at install, so a
 * tool cannot be dropped from a running plugin.
 */
export function checkListedTools(plugin: string, validate: EsmToolValidator): (tools: readonly ToolDescriptor[]) => HostError | undefined {
  return (tools) => {
    const invalid: InvalidTool[] = [];
    for (const { name, ...config } of tools) {
      const problems = validatorProblems(validate, { plugin, name, config });
      if (problems.length > 0) invalid.push({ name, problems });
    }
    const first = invalid[0];
    if (first === undefined) return undefined;
    return hostError('PLUGIN_TOOL_INVALID', `${plugin}: tool "${first.name}": ${first.problems.join('; ')}`, {
      details: { plugin, invalidTools: invalid.map((t) => ({ name: t.name, problems: [...t.problems] })) },
    });
  };
}
