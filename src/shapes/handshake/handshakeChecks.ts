/**
 * The contract checks of the handshake protocol, in the seed's order:
 * decode, structure, protocol version, tool exposure, capability declaration,
 * capability allow-list. Pure functions from one line to a typed value or a
 * classified failure.
 */
import { err, ok, type Result } from 'neverthrow';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { hostError, type HostError } from '../../errors/HostError.js';
import { spellingOf, type HostErrorCode } from '../../errors/registry.js';
import { nestedDeeperThan } from '../../framing/nestingDepth.js';
import { rawLineDetails } from '../ndjson-rpc/processDiagnostics.js';
import { has, isRecord } from '../../manifest/access.js';
import { validateHandshakeManifest } from '../../manifest/handshake.js';
import type { HandshakeManifest } from '../../manifest/model.js';
import type { PluginError, PluginResponse } from './wire.js';

/** Where in a launch a failure happened. */
export type HandshakePhase = 'launch' | 'handshake' | 'execute' | 'teardown';

/** What the host expects of a handshake, from its plugin spec. */
export interface HandshakeExpectations {
  /** The protocol version requested. */
  readonly protocolVersion: string;
  /** The plugin id the binding names, when the host pins it. */
  readonly pluginId?: string;
  /** The tool about to be executed, when there is one. */
  readonly tool?: string;
  /** The host-owned capability allow-list. */
  readonly allowedCapabilities: readonly string[];
  /** Capabilities the plugin is known to request; each must be declared. */
  readonly expectedCapabilities: readonly string[];
}

/**
 * A host error carrying the seed's failure class in `details.failure_class`.
 */
export function handshakeFailure(code: HostErrorCode, message: string, details: Record<string, unknown> = {}, cause?: unknown): HostError {
  const failureClass = spellingOf(code, 'handshake') ?? null;
  return hostError(code, message, { details: { failure_class: failureClass, ...details }, ...(cause === undefined ? {} : { cause }) });
}

/**
 * A value of the plugin's line as a message shows it: JSON for a primitive, only the kind of an array or object,
 * which may nest deeper than JSON.stringify can go (JSON.parse reads any depth).
 */
function shown(value: unknown): string {
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'an object';
  return String(JSON.stringify(value));
}

/** Why `value` is not a clean name (non-empty, no surrounding whitespace), or `undefined`. */
export function nameProblem(value: unknown, field: string): string | undefined {
  if (typeof value !== 'string') return `${field} must be a string`;
  if (value.length === 0) return `${field} is empty`;
  if (value.trim() !== value) return `${field} ${JSON.stringify(value)} has surrounding whitespace`;
  return undefined;
}

/** Why `value` is not a list of clean, unique names, or `undefined`. */
export function nameListProblem(value: unknown, field: string, nonEmpty: boolean): string | undefined {
  if (!Array.isArray(value)) return `${field} must be an array of strings`;
  if (nonEmpty && value.length === 0) return `${field} is empty`;
  const seen = new Set<string>();
  for (const [i, item] of value.entries()) {
    const problem = nameProblem(item, `${field}[${i}]`);
    if (problem !== undefined) return problem;
    if (seen.has(item as string)) return `${field} lists ${JSON.stringify(item)} twice`;
    seen.add(item as string);
  }
  return undefined;
}

/** Decodes one line as exactly one JSON object, or classifies it as malformed output. */
function decodeObject(line: string, phase: HandshakePhase): Result<Record<string, unknown>, HostError> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return err(handshakeFailure('PLUGIN_INVALID_JSON', `plugin wrote a ${phase} line that is not JSON: ${reason}`, { phase, reason, ...rawLineDetails(line) }));
  }
  if (!isRecord(value)) {
    return err(handshakeFailure('PLUGIN_MALFORMED_RESPONSE', `plugin wrote a ${phase} line that is not a JSON object`, { phase, reason: 'not a JSON object', ...rawLineDetails(line) }));
  }
  const limit = pluginAnswerLimits.maxNestingDepth;
  if (nestedDeeperThan(value, limit)) {
    const reason = `nested more than ${limit} levels deep`;
    return err(handshakeFailure('PLUGIN_MALFORMED_RESPONSE', `plugin wrote a ${phase} line ${reason}`, { phase, reason, max_nesting_depth: limit, ...rawLineDetails(line) }));
  }
  return ok(value);
}

/** Validates the handshake response line against the host's expectations. */
export function checkHandshakeResponse(line: string, expect: HandshakeExpectations): Result<HandshakeManifest, HostError> {
  return decodeObject(line, 'handshake').andThen((message) => {
    const raw = rawLineDetails(line);
    const failed = (reason: string): Result<never, HostError> =>
      err(handshakeFailure('PLUGIN_HANDSHAKE_FAILED', `invalid handshake response: ${reason}`, { phase: 'handshake', reason, ...raw }));
    if (message.type !== 'handshake') return failed(`"type" must be "handshake", got ${shown(message.type)}`);
    const manifest = message.manifest;
    if (!isRecord(manifest)) return failed('"manifest" must be an object');

    if (typeof manifest.protocol_version !== 'string') return failed('manifest.protocol_version must be a string');
    if (manifest.protocol_version !== expect.protocolVersion) {
      return err(
        handshakeFailure(
          'PLUGIN_PROTOCOL_VERSION_MISMATCH',
          `plugin speaks protocol ${JSON.stringify(manifest.protocol_version)}, the host requested ${JSON.stringify(expect.protocolVersion)}`,
          { phase: 'handshake', requested: expect.protocolVersion, declared: manifest.protocol_version },
        ),
      );
    }
    const validated = validateHandshakeManifest(manifest);
    if (validated.isErr()) {
      const violations = (validated.error.details.violations ?? []) as readonly { pointer: string; message: string }[];
      return failed(violations.map((v) => `manifest${v.pointer} ${v.message}`).join('; ') || validated.error.message);
    }
    const { plugin_id: pluginId, exposed_tools: exposedTools, capabilities: declared } = validated.value;
    const known = { phase: 'handshake', plugin_id: pluginId };
    if (expect.pluginId !== undefined && pluginId !== expect.pluginId) {
      return failed(`manifest.plugin_id ${JSON.stringify(pluginId)} is not the bound plugin ${JSON.stringify(expect.pluginId)}`);
    }
    if (expect.tool !== undefined && !exposedTools.includes(expect.tool)) {
      return err(
        handshakeFailure('PLUGIN_TOOL_NOT_EXPOSED', `plugin ${pluginId} does not expose tool ${JSON.stringify(expect.tool)}`, {
          ...known,
          tool: expect.tool,
          exposed_tools: exposedTools,
        }),
      );
    }
    const declaredList = declared ?? [];
    const missing = expect.expectedCapabilities.filter((c) => !declaredList.includes(c));
    if ((expect.allowedCapabilities.length > 0 && declaredList.length === 0) || missing.length > 0) {
      return err(
        handshakeFailure('PLUGIN_CAPABILITY_NOT_DECLARED', `plugin ${pluginId} did not declare the capabilities it requests`, {
          ...known,
          declared: declared ?? null,
          missing,
          allowed: expect.allowedCapabilities,
        }),
      );
    }
    const notAllowed = declaredList.filter((c) => !expect.allowedCapabilities.includes(c));
    if (notAllowed.length > 0) {
      return err(
        handshakeFailure('PLUGIN_CAPABILITY_NOT_ALLOWED', `plugin ${pluginId} declared capabilities outside the host allow-list: ${notAllowed.join(', ')}`, {
          ...known,
          not_allowed: notAllowed,
          allowed: expect.allowedCapabilities,
        }),
      );
    }
    return ok(validated.value);
  });
}

function pluginErrorProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return '"error" must be an object';
  return nameProblem(value.code, 'error.code') ?? (typeof value.message === 'string' && value.message.length > 0 ? undefined : 'error.message must be a non-empty string');
}

/** Validates the execute response line: right type, echoed request id, exactly one of result and error. */
export function checkExecuteResponse(line: string, requestId: string): Result<PluginResponse, HostError> {
  return decodeObject(line, 'execute').andThen((message) => {
    const malformed = (reason: string): Result<never, HostError> =>
      err(handshakeFailure('PLUGIN_MALFORMED_RESPONSE', `invalid execute response: ${reason}`, { phase: 'execute', reason, ...rawLineDetails(line) }));
    if (message.type !== 'response') return malformed(`"type" must be "response", got ${shown(message.type)}`);
    if (message.request_id !== requestId) return malformed(`"request_id" ${shown(message.request_id)} does not echo the request`);
    if (typeof message.ok !== 'boolean') return malformed('"ok" must be true or false');
    if (message.ok) {
      if (!has(message, 'result') || has(message, 'error')) return malformed('a successful response carries "result" and no "error"');
      return ok({ type: 'response' as const, request_id: requestId, ok: true as const, result: message.result });
    }
    if (has(message, 'result')) return malformed('a failed response carries "error" and no "result"');
    const problem = pluginErrorProblem(message.error);
    if (problem !== undefined) return malformed(problem);
    return ok({ type: 'response' as const, request_id: requestId, ok: false as const, error: message.error as PluginError });
  });
}
