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
import { applyOutputProfile, effectiveProfile, type EffectiveOutputProfile } from './outputProfiles.js';

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

  /** @param layout - The profile whose `results/` directory keeps the recovery copies. */
  constructor(layout: ProfileLayout) {
    this.#resultsDir = join(layout.root, profileData.recoveryDir);
  }

  /**
   * `result` shaped by the output profile `tool`'s variant binds, with the
   * outcome in `profile`. Results of variants without a profile, error
   * results and MCP results without a JSON body (no `structuredContent`, no
   * single JSON text block) are returned as they are.
   */
  shape(plugin: InstalledPlugin, tool: string, result: CallResult): ResultAsync<CallResult, HostError> {
    if (result.isError) return okAsync(result);
    const binding = bindingOf(plugin, tool);
    if (binding === undefined) return okAsync(result);
    const profile = binding.definition ?? effectiveProfile(binding.name, {});
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
  const safe = variant.null_elision_safe_fields;
  return {
    name,
    definition: variant.output_profile_definition as EffectiveOutputProfile | undefined,
    safeFields: Array.isArray(safe) ? safe.filter((f): f is string => typeof f === 'string') : [],
  };
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
