/**
 * Translates a plugin's own error envelope into the host's stable codes.
 * Plugins speak five plugin-local codes; callers only ever see host codes,
 * with retry fields the host vouches for. Whatever a plugin sends, mapping
 * yields a `HostError` value and never throws.
 */
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError, type HostErrorFields } from '../errors/HostError.js';

/** The five codes a plugin may put in `error_code`. */
export const PLUGIN_LOCAL_ERROR_CODES = ['RATE_LIMIT', 'AUTH_EXPIRED', 'PARSE_FAILURE', 'SERVICE_DOWN', 'INVALID_INPUT'] as const;

/** A plugin-local error code. */
export type PluginLocalErrorCode = (typeof PLUGIN_LOCAL_ERROR_CODES)[number];

/** The host codes a plugin error can map to. */
export type MappedPluginErrorCode = 'RATE_LIMITED' | 'AUTH_REQUIRED' | 'SERVICE_DOWN' | 'INVALID_ARGS';

/** A plugin-local error envelope, as a plugin writes it in an `isError` tool result. */
export interface PluginErrorEnvelope {
  /** Always `false` in an error envelope. */
  readonly success: false;
  /** One of `RATE_LIMIT`, `AUTH_EXPIRED`, `PARSE_FAILURE`, `SERVICE_DOWN`, `INVALID_INPUT`; anything else is mapped as unknown. */
  readonly error_code: string;
  /** A human-readable message. */
  readonly error: string;
  /** Whether the plugin thinks the call may be retried; absent counts as `false`. */
  readonly retryable?: boolean;
  /** The plugin's suggested delay before a retry, in milliseconds. */
  readonly retry_after_ms?: number;
}

/** Where the error came from, recorded in the mapped error's details. */
export interface PluginErrorContext {
  /** The plugin that returned the error. */
  readonly plugin_id?: string;
  /** The operation that was called (`plug.<plugin_id>.<tool>`). */
  readonly op_id?: string;
}

/** The subset of an MCP `CallToolResult` that {@link ErrorMapper.mapCallToolError} reads. */
export interface CallToolErrorResult {
  /** The result's content blocks; the first `text` block carries the envelope. */
  readonly content?: readonly unknown[] | undefined;
  /** `true` for an error result; the SDK's `CallToolResult` types it `boolean | undefined`, which this must accept as it is. */
  readonly isError?: boolean | undefined;
  /**
   * The 2024-10-07 protocol's result (`{ toolResult }`), which the SDK's
   * `Client.callTool` may return too: named so that its result is accepted
   * as it comes. It holds no content, so it maps to SERVICE_DOWN.
   */
  readonly toolResult?: unknown;
}

interface Rule {
  readonly code: MappedPluginErrorCode;
  readonly retryable: 'keep' | false;
  readonly keepRetryAfter: boolean;
}

const RULES: Readonly<Record<PluginLocalErrorCode, Rule>> = {
  RATE_LIMIT: { code: 'RATE_LIMITED', retryable: 'keep', keepRetryAfter: true },
  AUTH_EXPIRED: { code: 'AUTH_REQUIRED', retryable: false, keepRetryAfter: false },
  PARSE_FAILURE: { code: 'SERVICE_DOWN', retryable: 'keep', keepRetryAfter: false },
  SERVICE_DOWN: { code: 'SERVICE_DOWN', retryable: 'keep', keepRetryAfter: true },
  INVALID_INPUT: { code: 'INVALID_ARGS', retryable: false, keepRetryAfter: false },
};

const UNKNOWN_RULE: Rule = { code: 'SERVICE_DOWN', retryable: false, keepRetryAfter: false };

/** Longest plugin message forwarded to callers, in characters. */
const MAX_MESSAGE_CHARS = 2000;
/** Longest excerpt of an invalid envelope quoted in a message. */
const MAX_EXCERPT_CHARS = 200;

function ruleFor(pluginCode: string): Rule {
  return Object.hasOwn(RULES, pluginCode) ? RULES[pluginCode as PluginLocalErrorCode] : UNKNOWN_RULE;
}

/**
 * The host code for a plugin-local code. Unknown codes, including host codes
 * a plugin emitted directly, map to `SERVICE_DOWN`.
 */
export function mapPluginErrorCode(pluginCode: string): MappedPluginErrorCode {
  return ruleFor(pluginCode).code;
}

/** Plugin text made safe for a terminal and a log line: control characters replaced, length bounded. */
function sanitize(text: string, max: number): string {
  const clean = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '\ufffd');
  return clean.length <= max ? clean : `${clean.slice(0, max)}…`;
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

function invalidEnvelope(reason: string, raw: unknown, sourceCode: unknown, context: PluginErrorContext): HostError {
  const excerpt = sanitize(textOf(raw), MAX_EXCERPT_CHARS);
  const fields: HostErrorFields = {
    retryable: false,
    details: { ...context, envelope_error: reason, excerpt },
    ...(typeof sourceCode === 'string' ? { source_error_code: sourceCode } : {}),
  };
  return hostError('SERVICE_DOWN', `The plugin's error was not a valid error envelope (${reason}): ${excerpt}`, fields);
}

/** Only a hostile value (a throwing getter or proxy) is unreadable; it still maps. */
function unreadable(cause: unknown, context: PluginErrorContext): HostError {
  return hostError('SERVICE_DOWN', "The plugin's error could not be read as an error envelope.", {
    retryable: false,
    cause,
    details: { ...context, envelope_error: 'unreadable value' },
  });
}

/** Why a value is not an envelope, or `undefined` when it is one. */
function envelopeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const v = value as Record<string, unknown>;
  if (v.success !== false) return 'success must be false';
  if (typeof v.error_code !== 'string') return 'error_code must be a string';
  if (typeof v.error !== 'string') return 'error must be a string';
  if (v.retryable !== undefined && typeof v.retryable !== 'boolean') return 'retryable must be a boolean';
  if (v.retry_after_ms !== undefined && typeof v.retry_after_ms !== 'number') return 'retry_after_ms must be a number';
  return undefined;
}

function parseEnvelope(input: unknown, context: PluginErrorContext): Result<PluginErrorEnvelope, HostError> {
  let value: unknown = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch {
      return err(invalidEnvelope('not JSON', input, undefined, context));
    }
  }
  const problem = envelopeProblem(value);
  if (problem !== undefined) {
    const code = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).error_code : undefined;
    return err(invalidEnvelope(problem, input, code, context));
  }
  const v = value as Record<string, unknown>;
  return ok({
    success: false,
    error_code: v.error_code as string,
    error: v.error as string,
    ...(typeof v.retryable === 'boolean' ? { retryable: v.retryable } : {}),
    ...(typeof v.retry_after_ms === 'number' ? { retry_after_ms: v.retry_after_ms } : {}),
  });
}

/**
 * Parses and validates a plugin error envelope from its JSON text or an
 * already-parsed value. Extra fields are allowed and ignored. Failure is a
 * `SERVICE_DOWN` error saying why and quoting a bounded excerpt.
 */
export function parsePluginErrorEnvelope(input: unknown, context: PluginErrorContext = {}): Result<PluginErrorEnvelope, HostError> {
  try {
    return parseEnvelope(input, context);
  } catch (cause) {
    return err(unreadable(cause, context));
  }
}

/** Applies the mapping table to a valid envelope. */
export function mapPluginErrorEnvelope(envelope: PluginErrorEnvelope, context: PluginErrorContext = {}): HostError {
  const rule = ruleFor(envelope.error_code);
  const retryable = rule.retryable === 'keep' ? envelope.retryable === true : false;
  const after = envelope.retry_after_ms;
  const keepAfter = rule.keepRetryAfter && after !== undefined && Number.isFinite(after) && after > 0;
  const text = sanitize(envelope.error, MAX_MESSAGE_CHARS);
  const message = text.trim().length > 0 ? text : `The plugin reported ${sanitize(envelope.error_code, 100) || 'an error'} without a message.`;
  return hostError(rule.code, message, {
    retryable,
    source_error_code: envelope.error_code,
    ...(keepAfter ? { retry_after_ms: after } : {}),
    ...(Object.keys(context).length > 0 ? { details: { ...context } } : {}),
  });
}

/**
 * Maps a plugin error envelope (JSON text or parsed value) to a host error:
 * RATE_LIMIT → RATE_LIMITED, AUTH_EXPIRED → AUTH_REQUIRED, PARSE_FAILURE and
 * SERVICE_DOWN → SERVICE_DOWN, INVALID_INPUT → INVALID_ARGS, anything else →
 * SERVICE_DOWN with `retryable: false`. Input that is not a valid envelope
 * maps to SERVICE_DOWN too. Never throws.
 */
export function mapPluginError(input: unknown, context: PluginErrorContext = {}): HostError {
  try {
    const parsed = parseEnvelope(input, context);
    return parsed.isOk() ? mapPluginErrorEnvelope(parsed.value, context) : parsed.error;
  } catch (cause) {
    return unreadable(cause, context);
  }
}

/**
 * Maps an MCP `CallToolResult` with `isError: true` by reading the envelope
 * from its first text content block. A result without a text block maps to
 * `SERVICE_DOWN`.
 */
export function mapCallToolError(result: CallToolErrorResult, context: PluginErrorContext = {}): HostError {
  try {
    const content: readonly unknown[] = Array.isArray(result?.content) ? result.content : [];
    const block = content.find(
      (c): c is { type: 'text'; text: string } =>
        typeof c === 'object' && c !== null && (c as Record<string, unknown>).type === 'text' && typeof (c as Record<string, unknown>).text === 'string',
    );
    if (block === undefined) return invalidEnvelope('the error result has no text content', result, undefined, context);
    return mapPluginError(block.text, context);
  } catch (cause) {
    return unreadable(cause, context);
  }
}

/** An MCP `CallToolResult` as {@link ErrorMapper.mapToolResult} reads it; other fields travel along untouched. */
export interface McpToolResultValue {
  /** The result's content blocks. */
  readonly content?: readonly unknown[] | undefined;
  /** The tool's structured output, when it has an output schema. */
  readonly structuredContent?: unknown;
  /** `true` when the tool reports a failure; `boolean | undefined` as the SDK's `CallToolResult` types it. */
  readonly isError?: boolean | undefined;
  /** The 2024-10-07 protocol's result, which the SDK's `Client.callTool` may return too; it travels along untouched. */
  readonly toolResult?: unknown;
}

function firstText(result: McpToolResultValue): string | undefined {
  const content: readonly unknown[] = Array.isArray(result.content) ? result.content : [];
  const block = content.find(
    (c): c is { type: 'text'; text: string } =>
      typeof c === 'object' && c !== null && (c as Record<string, unknown>).type === 'text' && typeof (c as Record<string, unknown>).text === 'string',
  );
  return block?.text;
}

/** The envelope in `text`, when it is one; a cheap look first, so an ordinary success payload is not parsed. */
function envelopeIn(text: string | undefined): PluginErrorEnvelope | undefined {
  if (text === undefined || !text.includes('"error_code"') || !text.trimStart().startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return envelopeProblem(value) === undefined ? (value as PluginErrorEnvelope) : undefined;
}

const isPluginLocalCode = (code: string): boolean => (PLUGIN_LOCAL_ERROR_CODES as readonly string[]).includes(code);

function toolError(result: McpToolResultValue, text: string | undefined, context: PluginErrorContext): HostError {
  const said = text === undefined ? '' : sanitize(text, MAX_MESSAGE_CHARS);
  const message = said.trim().length > 0 ? said : 'The tool reported an error without text.';
  return hostError('PLUGIN_TOOL_ERROR', message, { retryable: false, details: { ...context, result } });
}

/**
 * The result semantics of MCP-speaking plugins (docs/published-servers.md,
 * "Result semantics"): which tool results are failures, and with which code.
 *
 * - `isError: true` whose first text block is a GUM error envelope: the
 *   contract's mapping (RATE_LIMITED, AUTH_REQUIRED, SERVICE_DOWN, INVALID_ARGS).
 * - `isError: true` without one (a plain-text error, an SDK input-validation
 *   error): PLUGIN_TOOL_ERROR, whose `details.result` is the result unchanged.
 * - `isError` false or absent, and the only content block is a GUM error
 *   envelope whose `error_code` is one of the five plugin-local codes (the
 *   author guide's FastMCP form, which cannot set `isError`): mapped as if
 *   `isError` were true.
 * - anything else: the result itself, `ok`.
 *
 * Never throws.
 */
export function mapMcpToolResult<R extends McpToolResultValue>(result: R, context: PluginErrorContext = {}): Result<R, HostError> {
  try {
    const text = firstText(result);
    if (result.isError === true) {
      const envelope = envelopeIn(text);
      return err(envelope === undefined ? toolError(result, text, context) : mapPluginErrorEnvelope(envelope, context));
    }
    if (!Array.isArray(result.content) || result.content.length !== 1) return ok(result);
    const envelope = envelopeIn(text);
    return envelope !== undefined && isPluginLocalCode(envelope.error_code) ? err(mapPluginErrorEnvelope(envelope, context)) : ok(result);
  } catch (cause) {
    return err(unreadable(cause, context));
  }
}

/**
 * The design card's ErrorMapper: a plugin's error envelope, or an MCP
 * `isError` tool result, to a host error with a stable code and the seeds'
 * retry rules (RATE_LIMIT → RATE_LIMITED, AUTH_EXPIRED → AUTH_REQUIRED,
 * PARSE_FAILURE and SERVICE_DOWN → SERVICE_DOWN, INVALID_INPUT →
 * INVALID_ARGS, anything else → SERVICE_DOWN, not retryable). Never throws.
 */
export class ErrorMapper {
  private constructor() {}

  /** Maps an envelope given as JSON text or a parsed value; input that is no valid envelope maps to SERVICE_DOWN. */
  static map(input: unknown, context: PluginErrorContext = {}): HostError {
    return mapPluginError(input, context);
  }

  /** Maps an MCP `CallToolResult` with `isError: true` by the envelope in its first text block (SERVICE_DOWN without one). */
  static mapCallToolError(result: CallToolErrorResult, context: PluginErrorContext = {}): HostError {
    return mapCallToolError(result, context);
  }

  /** An MCP tool result by the result semantics of MCP-speaking plugins (docs/published-servers.md, "Result semantics"): the result itself, or the error it stands for. */
  static mapToolResult<R extends McpToolResultValue>(result: R, context: PluginErrorContext = {}): Result<R, HostError> {
    return mapMcpToolResult(result, context);
  }

  /** The host code a plugin-local error code maps to. */
  static mapCode(pluginCode: string): MappedPluginErrorCode {
    return mapPluginErrorCode(pluginCode);
  }

  /** Parses and validates an envelope; failure is a SERVICE_DOWN error saying why. Extra fields are ignored. */
  static parseEnvelope(input: unknown, context: PluginErrorContext = {}): Result<PluginErrorEnvelope, HostError> {
    return parsePluginErrorEnvelope(input, context);
  }

  /** Applies the mapping table to a valid envelope. */
  static mapEnvelope(envelope: PluginErrorEnvelope, context: PluginErrorContext = {}): HostError {
    return mapPluginErrorEnvelope(envelope, context);
  }
}
