/**
 * Output profiles applied at call time: every successful result of a variant
 * that binds a profile is shaped by it, after the response schema check (the
 * plugin's contract is judged on what it sent). When a lossy profile did lose
 * something, the unshaped result is first written to the profile's results
 * directory, so the caller can always get it back.
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import profileData from '../../etc/output-profiles.json' with { type: 'json' };
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';
import type { CallResult, McpCallResult } from '../shapes/PluginSession.js';
import type { TokenBudgetException } from '../manifest/model.js';
import { applyOutputProfile, BUILTIN_OUTPUT_PROFILES, effectiveProfile, estimateTokens, type EffectiveOutputProfile, type OutputProfile, type ProfileProblem } from '../manifest/outputProfiles.js';
import { checkProfileTable } from './profileFiles.js';

/**
 * Output profiles the host application supplies (`PluginHostOptions.outputProfiles`):
 * its own definitions, and which profile a tool's results get instead of the
 * one its manifest binds. The application receives the results, so it may
 * shape them for its own model's budget, or leave them whole with `raw`.
 */
export interface HostOutputProfiles {
  /** Profiles by name, written as a manifest's `output_profiles` table; checked at open as a manifest's are. */
  readonly definitions?: Readonly<Record<string, OutputProfile>>;
  /**
   * The profile each tool's successful results get, by qualified tool name
   * (`plug.<plugin_id>.<tool>`): one of `definitions` or a built-in. It
   * replaces the manifest's binding, and gives a tool without one a profile.
   */
  readonly bindings?: Readonly<Record<string, string>>;
}

/** Checks {@link HostOutputProfiles} at open: each definition as a manifest's, each binding naming a defined or built-in profile. */
export function checkHostOutputProfiles(supplied: HostOutputProfiles): HostError | undefined {
  const definitions = supplied.definitions ?? {};
  const problems: ProfileProblem[] = checkProfileTable(definitions, '/definitions');
  for (const [tool, name] of Object.entries(supplied.bindings ?? {})) {
    if (Object.hasOwn(definitions, name) || Object.hasOwn(BUILTIN_OUTPUT_PROFILES, name)) continue;
    const message = `binds ${JSON.stringify(tool)} to ${JSON.stringify(name)}, which is neither in definitions nor built in`;
    problems.push({ pointer: `/bindings/${tool.replaceAll('~', '~0').replaceAll('/', '~1')}`, code: 'PROFILE_INVALID', message });
  }
  const first = problems[0];
  if (first === undefined) return undefined;
  return hostError('HOST_INVALID_OPTIONS', `option outputProfiles${first.pointer} ${first.message}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`, {
    details: { option: 'outputProfiles', problems },
  });
}

/** Where a body to shape was found in a result. */
type BodySource = 'value' | 'structured' | 'text';

/** The variant fields install records for shaping. */
interface ProfileBinding {
  readonly name: string;
  readonly definition: EffectiveOutputProfile | undefined;
  readonly safeFields: readonly string[];
}

/** Shapes call results by their variants' output profiles. */
export class ResultShaper {
  readonly #resultsDir: string;
  readonly #supplied: HostOutputProfiles;

  /**
   * @param layout - The profile whose `results/` directory keeps the recovery copies.
   * @param supplied - The host application's profiles, already checked ({@link checkHostOutputProfiles}).
   */
  constructor(layout: ProfileLayout, supplied: HostOutputProfiles = {}) {
    this.#resultsDir = join(layout.root, profileData.recoveryDir);
    this.#supplied = supplied;
  }

  /**
   * `result` shaped by the output profile the host binds to `tool`, else the
   * one `tool`'s variant binds, with the outcome in `profile`. Results of
   * tools without a profile, error
   * results and MCP results without a JSON body (no `structuredContent`, no
   * single JSON text block) are returned as they are.
   */
  shape(plugin: InstalledPlugin, tool: string, result: CallResult): ResultAsync<CallResult, HostError> {
    if (result.isError) return okAsync(result);
    const shaped = this.#profiled(plugin, tool, result);
    const budget = tokenBudgetOf(plugin, tool);
    return budget === undefined ? shaped : shaped.andThen((r) => this.#withinBudget(plugin, tool, r, budget));
  }

  /**
   * Whether {@link ResultShaper.shape} returns `result` as it is without
   * looking into it (an error result, or a tool with no profile and no token
   * budget), so that a caller can skip its promise.
   */
  leavesAsIs(plugin: InstalledPlugin, tool: string, result: CallResult): boolean {
    if (result.isError) return true;
    const variant = plugin.variants.find((v) => v.tool_name === tool);
    if (typeof variant?.output_profile === 'string' || variant?.token_budget_exception !== undefined) return false;
    const bindings = this.#supplied.bindings;
    return bindings === undefined || !Object.hasOwn(bindings, `plug.${plugin.plugin_id}.${tool}`);
  }

  #profiled(plugin: InstalledPlugin, tool: string, result: CallResult): ResultAsync<CallResult, HostError> {
    const binding = this.#bindingOf(plugin, tool);
    if (binding === undefined) return okAsync(result);
    const profile = binding.definition ?? effectiveProfile(binding.name, this.#supplied.definitions ?? {});
    if (profile === undefined) {
      return errAsync(
        hostError('PROFILE_NOT_FOUND', `output profile '${binding.name}' of '${tool}' is neither recorded with plugin '${plugin.plugin_id}' nor built in`, {
          details: { tool, profile: binding.name },
        }),
      );
    }
    const found = bodyOf(result);
    if (found === undefined) return okAsync(result);
    const { body, outcome } = applyOutputProfile(profile, found.body, binding.safeFields);
    const shaped = withBody(result, found.source, body);
    if (!outcome.lossy || profile.recovery === 'none') return okAsync({ ...shaped, profile: outcome });
    return this.#keepFull(found.body).map((path): CallResult => ({ ...shaped, profile: { ...outcome, full_result_path: path } }));
  }

  /** The host's binding of the tool (its definitions, else a built-in), else the variant's; the variant's safe fields either way. */
  #bindingOf(plugin: InstalledPlugin, tool: string): ProfileBinding | undefined {
    const recorded = bindingOf(plugin, tool);
    const bindings = this.#supplied.bindings ?? {};
    const qualified = `plug.${plugin.plugin_id}.${tool}`;
    const name = Object.hasOwn(bindings, qualified) ? bindings[qualified] : undefined;
    if (name === undefined) return recorded;
    return { name, definition: effectiveProfile(name, this.#supplied.definitions ?? {}), safeFields: recorded?.safeFields ?? safeFieldsOf(plugin, tool) };
  }

  /**
   * A raw_result_allowed tool's result as it is when its estimated size is
   * within the tool's token_budget_exception; otherwise the call fails with
   * PLUGIN_RESULT_OVER_BUDGET, the full result kept for recovery first.
   */
  #withinBudget(plugin: InstalledPlugin, tool: string, result: CallResult, budget: TokenBudgetException): ResultAsync<CallResult, HostError> {
    const estimated = estimateResultTokens(result);
    if (estimated <= budget.max_tokens) return okAsync(result);
    return this.#keepFull(result.value).andThen((path) =>
      errAsync(
        hostError(
          'PLUGIN_RESULT_OVER_BUDGET',
          `the result of '${tool}' is about ${estimated} tokens, over its token_budget_exception of ${budget.max_tokens}; the full result is at ${path}`,
          { details: { plugin_id: plugin.plugin_id, tool, max_tokens: budget.max_tokens, estimated_tokens: estimated, full_result_path: path } },
        ),
      ),
    );
  }

  /** Writes the unshaped body to `results/<sha256>.json` (0600), named by its content, so a repeated result is kept once. */
  #keepFull(body: unknown): ResultAsync<string, HostError> {
    const text = JSON.stringify(body);
    const path = join(this.#resultsDir, `${createHash('sha256').update(text).digest('hex')}.json`);
    const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
    const write = async (): Promise<string> => {
      await mkdir(this.#resultsDir, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      await writeFile(temporary, text, { mode: 0o600 });
      await rename(temporary, path);
      return path;
    };
    return ResultAsync.fromPromise(write(), (cause) =>
      hostError('PROFILE_RECOVERY_FAILED', `the full result could not be kept at ${path}: ${(cause as Error).message}`, { details: { path }, cause }),
    );
  }
}

function bindingOf(plugin: InstalledPlugin, tool: string): ProfileBinding | undefined {
  const variant = plugin.variants.find((v) => v.tool_name === tool);
  const name = variant?.output_profile;
  if (variant === undefined || typeof name !== 'string') return undefined;
  return { name, definition: variant.output_profile_definition as EffectiveOutputProfile | undefined, safeFields: safeFieldsOf(plugin, tool) };
}

/** The token_budget_exception install recorded for a raw_result_allowed variant. */
function tokenBudgetOf(plugin: InstalledPlugin, tool: string): TokenBudgetException | undefined {
  const budget = plugin.variants.find((v) => v.tool_name === tool)?.token_budget_exception;
  return isObject(budget) && typeof budget.max_tokens === 'number' && typeof budget.reason === 'string' ? { max_tokens: budget.max_tokens, reason: budget.reason } : undefined;
}

/**
 * A result's size in estimated tokens ({@link estimateTokens}). An MCP
 * result counts the larger of its content (text blocks' text, other blocks
 * as JSON) and its structuredContent, the two forms a client may hand its
 * model; another protocol's result counts its JSON.
 */
export function estimateResultTokens(result: CallResult): number {
  if (!isMcpResult(result)) return estimateTokens(JSON.stringify(result.value) ?? '');
  const content = Array.isArray(result.value.content) ? result.value.content : [];
  const contentText = content.map((block) => (block.type === 'text' ? block.text : JSON.stringify(block))).join('');
  const structured = result.value.structuredContent;
  return Math.max(estimateTokens(contentText), structured === undefined ? 0 : estimateTokens(JSON.stringify(structured)));
}

function safeFieldsOf(plugin: InstalledPlugin, tool: string): readonly string[] {
  const safe = plugin.variants.find((v) => v.tool_name === tool)?.null_elision_safe_fields;
  return Array.isArray(safe) ? safe.filter((f): f is string => typeof f === 'string') : [];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const isMcpResult = (result: CallResult): result is McpCallResult => result.shape === 'mcp-plugin' || result.shape === 'esm-module';

/** The JSON body of a result: an MCP result's `structuredContent`, else its one text block parsed; another protocol's value. */
function bodyOf(result: CallResult): { readonly body: unknown; readonly source: BodySource } | undefined {
  if (result.shape !== 'mcp-plugin' && result.shape !== 'esm-module') return { body: result.value, source: 'value' };
  const value = result.value;
  if (value.structuredContent !== undefined) return { body: value.structuredContent, source: 'structured' };
  const text = singleText(value);
  if (text === undefined) return undefined;
  try {
    return { body: JSON.parse(text) as unknown, source: 'text' };
  } catch {
    return undefined;
  }
}

function singleText(value: McpCallResult['value']): string | undefined {
  const content = value.content;
  if (!Array.isArray(content) || content.length !== 1) return undefined;
  const block = content[0];
  return block?.type === 'text' ? block.text : undefined;
}

/**
 * The result carrying the shaped body where the original was. MCP: the
 * structured content (when the shaped body is still an object) and the one
 * text block that serializes it, so neither carries the unshaped copy.
 */
function withBody(result: CallResult, source: BodySource, body: unknown): CallResult {
  if (!isMcpResult(result)) return { ...result, value: body };
  const { structuredContent: _unshaped, ...rest } = result.value;
  const text = singleText(result.value) === undefined ? {} : { content: [{ type: 'text' as const, text: JSON.stringify(body) }] };
  const structured = source === 'structured' && isObject(body) ? { structuredContent: body } : {};
  const value = source === 'structured' ? { ...rest, ...structured, ...text } : { ...result.value, ...text };
  return { ...result, value };
}
