/**
 * Plugin error envelopes: envelope-shaped objects mutated, their JSON text
 * mutated, arbitrary values, and hostile values (throwing getters, proxies,
 * cycles, BigInt) that a plugin cannot send but a caller might pass.
 */
import fc from 'fast-check';
import { describe, expect } from 'vitest';
import {
  mapCallToolError,
  mapPluginError,
  parsePluginErrorEnvelope,
  PLUGIN_LOCAL_ERROR_CODES,
  type CallToolErrorResult,
  type MappedPluginErrorCode,
} from '../../../src/error-mapper/ErrorMapper.js';
import { applyMutations, applyTextMutations, mutation, textMutation } from '../arbitraries/json.js';
import { expectHostError, expectResult, fuzzTarget } from '../harness.js';

const MAPPED: readonly MappedPluginErrorCode[] = ['RATE_LIMITED', 'AUTH_REQUIRED', 'SERVICE_DOWN', 'INVALID_ARGS'];
const EXPECTED: Readonly<Record<string, MappedPluginErrorCode>> = {
  RATE_LIMIT: 'RATE_LIMITED',
  AUTH_EXPIRED: 'AUTH_REQUIRED',
  PARSE_FAILURE: 'SERVICE_DOWN',
  SERVICE_DOWN: 'SERVICE_DOWN',
  INVALID_INPUT: 'INVALID_ARGS',
};
const KEEPS_RETRYABLE = new Set(['RATE_LIMIT', 'PARSE_FAILURE', 'SERVICE_DOWN']);
const KEEPS_RETRY_AFTER = new Set(['RATE_LIMIT', 'SERVICE_DOWN']);
const ENVELOPE_KEYS = ['success', 'error_code', 'error', 'retryable', 'retry_after_ms'];

const envelope = fc.record(
  {
    success: fc.constant(false),
    error_code: fc.oneof(fc.constantFrom(...PLUGIN_LOCAL_ERROR_CODES, 'RATE_LIMITED', 'toString', '__proto__', ''), fc.string({ maxLength: 12 })),
    error: fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.constantFrom('', '   ', '\u001b[2J', 'x'.repeat(5000))),
    retryable: fc.boolean(),
    retry_after_ms: fc.oneof(fc.integer({ min: -10, max: 100_000 }), fc.double(), fc.constantFrom(0, -0, Number.MAX_VALUE)),
  },
  { requiredKeys: ['success', 'error_code', 'error'] },
);

const mutatedEnvelope = fc.tuple(envelope, fc.array(mutation(ENVELOPE_KEYS), { maxLength: 2 })).map(([e, m]) => applyMutations(e, m));

const envelopeText = fc
  .tuple(mutatedEnvelope, fc.array(textMutation(['{', '}', '"', ',', ':', 'false', '"success":false,', '\\u0000']), { maxLength: 2 }))
  .map(([value, muts]) => applyTextMutations(JSON.stringify(value) ?? '', muts));

/** Values no JSON decoder produces: reading them may throw. */
const hostile = fc.constantFrom<() => unknown>(
  () => ({ get success(): never { throw new Error('getter'); } }),
  () => ({ success: false, get error_code(): never { throw new Error('getter'); }, error: 'x' }),
  () => new Proxy({}, { get() { throw new Error('proxy'); }, has() { throw new Error('proxy'); } }),
  () => { const c: Record<string, unknown> = { success: true }; c.self = c; return c; },
  () => ({ success: 1n }),
  () => 10n,
  () => Object.create(null) as unknown,
  () => ({ success: false, error_code: 'RATE_LIMIT', error: 'x', toJSON() { throw new Error('toJSON'); } }),
);

function checkMapped(error: unknown, input: unknown): void {
  expectHostError(error, MAPPED);
  expect(error.message.length).toBeLessThanOrEqual(2_100);
  if (error.retry_after_ms !== undefined) expect(Number.isFinite(error.retry_after_ms) && error.retry_after_ms > 0).toBe(true);
  const parsed = parsePluginErrorEnvelope(input);
  if (parsed.isErr()) {
    expect(error.code).toBe('SERVICE_DOWN');
    expect(error.retryable).toBe(false);
    return;
  }
  const env = parsed.value;
  const known = Object.hasOwn(EXPECTED, env.error_code);
  expect(error.code).toBe(known ? EXPECTED[env.error_code] : 'SERVICE_DOWN');
  expect(error.retryable).toBe(KEEPS_RETRYABLE.has(env.error_code) && env.retryable === true);
  if (error.retry_after_ms !== undefined) expect(KEEPS_RETRY_AFTER.has(env.error_code)).toBe(true);
  expect(error.source_error_code).toBe(env.error_code);
}

/** Registers the error-mapper targets. */
export function errorMapperTargets(): void {
  describe('error envelopes', () => {
    fuzzTarget(
      'mapPluginError: envelopes, their text, any value',
      [fc.oneof({ weight: 3, arbitrary: mutatedEnvelope }, { weight: 3, arbitrary: envelopeText }, { weight: 1, arbitrary: fc.anything() })],
      (input) => {
        const parsed = parsePluginErrorEnvelope(input);
        expectResult(parsed, ['SERVICE_DOWN']);
        if (parsed.isOk()) expect(parsed.value.success).toBe(false);
        checkMapped(mapPluginError(input, { plugin_id: 'p', op_id: 'plug.p.t' }), input);
      },
      { weight: 2 },
    );

    fuzzTarget(
      'mapPluginError: hostile values never throw',
      [hostile],
      (make) => {
        expectResult(parsePluginErrorEnvelope(make()), ['SERVICE_DOWN']);
        expectHostError(mapPluginError(make()), MAPPED);
        expectHostError(mapCallToolError({ isError: true, content: [{ type: 'text', text: make() }] } as CallToolErrorResult), MAPPED);
      },
      { weight: 0.25 },
    );

    const block = fc.oneof(
      envelopeText.map((text) => ({ type: 'text', text })),
      fc.record({ type: fc.constantFrom('text', 'image', 'resource', ''), text: fc.oneof(envelopeText, fc.anything()) }, { requiredKeys: [] }),
      fc.anything(),
    );
    fuzzTarget(
      'mapCallToolError: CallToolResult-shaped values',
      [fc.oneof(fc.record({ isError: fc.boolean(), content: fc.oneof(fc.array(block, { maxLength: 4 }), fc.anything()) }, { requiredKeys: [] }), fc.anything())],
      (result) => {
        const error = mapCallToolError(result as CallToolErrorResult);
        expectHostError(error, MAPPED);
        const content = (result as { content?: unknown } | null | undefined)?.content;
        const first = Array.isArray(content)
          ? content.find((c) => typeof c === 'object' && c !== null && (c as Record<string, unknown>).type === 'text' && typeof (c as Record<string, unknown>).text === 'string')
          : undefined;
        if (first === undefined) expect(error.code).toBe('SERVICE_DOWN');
        else checkMapped(error, (first as { text: string }).text);
      },
      { weight: 1 },
    );
  });
}
