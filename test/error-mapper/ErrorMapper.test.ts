import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ErrorMapper,
  PLUGIN_LOCAL_ERROR_CODES,
  mapCallToolError,
  mapPluginError,
  mapPluginErrorCode,
  mapPluginErrorEnvelope,
  parsePluginErrorEnvelope,
  type CallToolErrorResult,
} from '../../src/error-mapper/ErrorMapper.js';
import { HostError } from '../../src/errors/HostError.js';

const envelope = (fields: Record<string, unknown>): string =>
  JSON.stringify({ success: false, error: 'upstream said no', ...fields });

describe('error code mapping', () => {
  it.each([
    ['RATE_LIMIT', 'RATE_LIMITED'],
    ['AUTH_EXPIRED', 'AUTH_REQUIRED'],
    ['PARSE_FAILURE', 'SERVICE_DOWN'],
    ['SERVICE_DOWN', 'SERVICE_DOWN'],
    ['INVALID_INPUT', 'INVALID_ARGS'],
    ['TEAPOT', 'SERVICE_DOWN'],
  ])('maps %s to %s', (from, to) => {
    expect(mapPluginErrorCode(from)).toBe(to);
    expect(mapPluginError(envelope({ error_code: from })).code).toBe(to);
  });

  it('RATE_LIMIT keeps retryable and a positive retry_after_ms', () => {
    const e = mapPluginError(envelope({ error_code: 'RATE_LIMIT', retryable: true, retry_after_ms: 5000 }));
    expect([e.code, e.retryable, e.retry_after_ms, e.source_error_code]).toEqual(['RATE_LIMITED', true, 5000, 'RATE_LIMIT']);
    expect(mapPluginError(envelope({ error_code: 'RATE_LIMIT', retryable: false, retry_after_ms: 5000 })).retryable).toBe(false);
  });

  it.each([0, -1, -5000])('RATE_LIMIT drops a non-positive retry_after_ms (%d)', (ms) => {
    const e = mapPluginError(envelope({ error_code: 'RATE_LIMIT', retryable: true, retry_after_ms: ms }));
    expect(e.retry_after_ms).toBeUndefined();
    expect(e.retryable).toBe(true);
  });

  it('drops a non-finite retry_after_ms from an already-parsed value', () => {
    for (const ms of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const e = mapPluginError({ success: false, error_code: 'SERVICE_DOWN', error: 'x', retryable: true, retry_after_ms: ms });
      expect(e.retry_after_ms).toBeUndefined();
    }
  });

  it('AUTH_EXPIRED forces retryable=false and drops retry_after_ms', () => {
    const e = mapPluginError(envelope({ error_code: 'AUTH_EXPIRED', retryable: true, retry_after_ms: 5000 }));
    expect([e.code, e.retryable, e.retry_after_ms, e.source_error_code]).toEqual(['AUTH_REQUIRED', false, undefined, 'AUTH_EXPIRED']);
  });

  it('PARSE_FAILURE keeps retryable (and drops retry_after_ms)', () => {
    const yes = mapPluginError(envelope({ error_code: 'PARSE_FAILURE', retryable: true, retry_after_ms: 5000 }));
    expect([yes.code, yes.retryable, yes.retry_after_ms]).toEqual(['SERVICE_DOWN', true, undefined]);
    expect(mapPluginError(envelope({ error_code: 'PARSE_FAILURE', retryable: false })).retryable).toBe(false);
  });

  it('SERVICE_DOWN keeps both retryable and retry_after_ms', () => {
    const e = mapPluginError(envelope({ error_code: 'SERVICE_DOWN', retryable: true, retry_after_ms: 250 }));
    expect([e.code, e.retryable, e.retry_after_ms, e.source_error_code]).toEqual(['SERVICE_DOWN', true, 250, 'SERVICE_DOWN']);
  });

  it('INVALID_INPUT forces retryable=false and drops retry_after_ms', () => {
    const e = mapPluginError(envelope({ error_code: 'INVALID_INPUT', retryable: true, retry_after_ms: 5000 }));
    expect([e.code, e.retryable, e.retry_after_ms, e.source_error_code]).toEqual(['INVALID_ARGS', false, undefined, 'INVALID_INPUT']);
  });

  it('maps an unknown code to SERVICE_DOWN, retryable=false, keeping source_error_code', () => {
    const e = mapPluginError(envelope({ error_code: 'QUOTA_GONE', retryable: true, retry_after_ms: 5000 }));
    expect([e.code, e.retryable, e.retry_after_ms, e.source_error_code]).toEqual(['SERVICE_DOWN', false, undefined, 'QUOTA_GONE']);
  });

  it.each(['RATE_LIMITED', 'AUTH_REQUIRED', 'INVALID_ARGS', 'PLUGIN_QUARANTINED', 'rate_limit'])(
    'treats the host code %s emitted by a plugin as unknown',
    (code) => {
      const e = mapPluginError(envelope({ error_code: code, retryable: true, retry_after_ms: 100 }));
      expect([e.code, e.retryable, e.retry_after_ms, e.source_error_code]).toEqual(['SERVICE_DOWN', false, undefined, code]);
    },
  );

  it('treats an absent retryable as false where the table keeps it', () => {
    for (const code of ['RATE_LIMIT', 'PARSE_FAILURE', 'SERVICE_DOWN']) expect(mapPluginError(envelope({ error_code: code })).retryable).toBe(false);
  });

  it("uses the plugin's message, stripped of control characters and bounded", () => {
    expect(mapPluginError(envelope({ error_code: 'RATE_LIMIT' })).message).toBe('upstream said no');
    const hostile = mapPluginError(envelope({ error_code: 'RATE_LIMIT', error: `\u001b[2Jred\u0007\nline2\t${'x'.repeat(5000)}` }));
    expect(hostile.message.startsWith('\ufffd[2Jred\ufffd\nline2\t')).toBe(true);
    expect(hostile.message.length).toBeLessThanOrEqual(2001);
    expect(mapPluginError(envelope({ error_code: 'RATE_LIMIT', error: '  ' })).message).toBe('The plugin reported RATE_LIMIT without a message.');
  });

  it('records the plugin and operation in details when given', () => {
    const e = mapPluginError(envelope({ error_code: 'INVALID_INPUT' }), { plugin_id: 'fli', op_id: 'plug.fli.search' });
    expect(e.details).toEqual({ plugin_id: 'fli', op_id: 'plug.fli.search' });
  });

  it('returns a HostError value and lists the five plugin-local codes', () => {
    expect(mapPluginError(envelope({ error_code: 'RATE_LIMIT' }))).toBeInstanceOf(HostError);
    expect(PLUGIN_LOCAL_ERROR_CODES).toEqual(['RATE_LIMIT', 'AUTH_EXPIRED', 'PARSE_FAILURE', 'SERVICE_DOWN', 'INVALID_INPUT']);
  });
});

describe('error code mapping: invalid envelopes', () => {
  it.each([
    ['not JSON', 'Traceback (most recent call last): boom', 'not JSON'],
    ['an array', '[1,2]', 'not a JSON object'],
    ['a string', '"RATE_LIMIT"', 'not a JSON object'],
    ['null', 'null', 'not a JSON object'],
    ['success true', JSON.stringify({ success: true, error_code: 'RATE_LIMIT', error: 'x' }), 'success must be false'],
    ['success missing', JSON.stringify({ error_code: 'RATE_LIMIT', error: 'x' }), 'success must be false'],
    ['numeric error_code', JSON.stringify({ success: false, error_code: 429, error: 'x' }), 'error_code must be a string'],
    ['missing error', JSON.stringify({ success: false, error_code: 'RATE_LIMIT' }), 'error must be a string'],
    ['string retryable', JSON.stringify({ success: false, error_code: 'RATE_LIMIT', error: 'x', retryable: 'yes' }), 'retryable must be a boolean'],
    ['null retryable', JSON.stringify({ success: false, error_code: 'RATE_LIMIT', error: 'x', retryable: null }), 'retryable must be a boolean'],
    ['string retry_after_ms', JSON.stringify({ success: false, error_code: 'RATE_LIMIT', error: 'x', retry_after_ms: '5000' }), 'retry_after_ms must be a number'],
  ])('maps %s to SERVICE_DOWN with a clear message', (_label, text, reason) => {
    const e = mapPluginError(text);
    expect(e.code).toBe('SERVICE_DOWN');
    expect(e.retryable).toBe(false);
    expect(e.retry_after_ms).toBeUndefined();
    expect(e.message).toContain(`The plugin's error was not a valid error envelope (${reason})`);
    expect(e.details.envelope_error).toBe(reason);
    expect(parsePluginErrorEnvelope(text)._unsafeUnwrapErr().code).toBe('SERVICE_DOWN');
  });

  it('keeps the source_error_code of an otherwise invalid envelope', () => {
    const e = mapPluginError(JSON.stringify({ success: false, error_code: 'RATE_LIMIT', error: 'x', retryable: 'yes' }));
    expect(e.source_error_code).toBe('RATE_LIMIT');
    expect(mapPluginError('nope').source_error_code).toBeUndefined();
  });

  it('quotes a bounded, sanitized excerpt of the invalid text', () => {
    const e = mapPluginError(`\u001b]0;pwned\u0007${'y'.repeat(10_000)}`);
    expect(e.message).not.toContain('\u001b');
    expect((e.details.excerpt as string).length).toBeLessThanOrEqual(201);
    expect(e.message.length).toBeLessThan(400);
  });

  it('parses a valid envelope, ignoring extra fields', () => {
    const parsed = parsePluginErrorEnvelope(envelope({ error_code: 'RATE_LIMIT', retryable: true, retry_after_ms: 10, data: { x: 1 } }));
    expect(parsed._unsafeUnwrap()).toEqual({ success: false, error_code: 'RATE_LIMIT', error: 'upstream said no', retryable: true, retry_after_ms: 10 });
    expect(mapPluginErrorEnvelope(parsed._unsafeUnwrap()).code).toBe('RATE_LIMITED');
  });

  it('does not throw on hostile values', () => {
    const throwing = new Proxy({}, { get: () => { throw new Error('trap'); } });
    expect(mapPluginError(throwing).code).toBe('SERVICE_DOWN');
    expect(mapCallToolError(throwing as CallToolErrorResult).code).toBe('SERVICE_DOWN');
    const circular: Record<string, unknown> = { success: true };
    circular.self = circular;
    expect(mapPluginError(circular).details.envelope_error).toBe('success must be false');
  });
});

describe('error code mapping: MCP CallToolResult', () => {
  it('reads the envelope from the first text block', () => {
    const result: CallToolErrorResult = {
      isError: true,
      content: [
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'text', text: envelope({ error_code: 'AUTH_EXPIRED' }) },
        { type: 'text', text: envelope({ error_code: 'RATE_LIMIT' }) },
      ],
    };
    expect(mapCallToolError(result).code).toBe('AUTH_REQUIRED');
  });

  it('maps a result with no text block to SERVICE_DOWN', () => {
    for (const result of [{ isError: true, content: [] }, { isError: true }, { isError: true, content: [{ type: 'text', text: 3 }] }]) {
      const e = mapCallToolError(result as CallToolErrorResult);
      expect(e.code).toBe('SERVICE_DOWN');
      expect(e.details.envelope_error).toBe('the error result has no text content');
    }
  });
});

describe('error code mapping: a real MCP plugin over stdio', () => {
  let client: Client;
  beforeAll(async () => {
    client = new Client({ name: 'error-mapper-test', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [join(import.meta.dirname, 'fixtures', 'failing-plugin.mjs')], stderr: 'inherit' }),
    );
  });
  afterAll(async () => {
    await client.close();
  });

  it.each([
    [envelope({ error_code: 'RATE_LIMIT', retryable: true, retry_after_ms: 1500 }), 'RATE_LIMITED', true, 1500],
    [envelope({ error_code: 'AUTH_EXPIRED', retryable: true }), 'AUTH_REQUIRED', false, undefined],
    [envelope({ error_code: 'INVALID_INPUT' }), 'INVALID_ARGS', false, undefined],
    [envelope({ error_code: 'RATE_LIMITED', retryable: true }), 'SERVICE_DOWN', false, undefined],
    ['plain text crash report', 'SERVICE_DOWN', false, undefined],
  ])('maps the tool result carrying %s', async (body, code, retryable, after) => {
    const result = await client.callTool({ name: 'fail', arguments: { body } });
    expect(result.isError).toBe(true);
    // The SDK's result goes in as callTool types it (isError `boolean | undefined`, the 2024-10-07 `{ toolResult }` branch): no cast.
    const e = mapCallToolError(result, { plugin_id: 'failing', op_id: 'plug.failing.fail' });
    expect([e.code, e.retryable, e.retry_after_ms]).toEqual([code, retryable, after]);
    expect(e.details.plugin_id).toBe('failing');
    const mapped = ErrorMapper.mapToolResult(result, { plugin_id: 'failing' });
    expect(mapped.isErr()).toBe(true);
    if (body.startsWith('{')) expect(mapped._unsafeUnwrapErr().code).toBe(code);
  });
});

describe('error code mapping: properties', () => {
  const mapped = new Set(['RATE_LIMITED', 'AUTH_REQUIRED', 'SERVICE_DOWN', 'INVALID_ARGS']);
  const code = fc.oneof(fc.constantFrom(...PLUGIN_LOCAL_ERROR_CODES, 'RATE_LIMITED', 'AUTH_REQUIRED'), fc.string({ maxLength: 12 }));
  const envelopeLike = fc.record(
    {
      success: fc.oneof(fc.constant(false), fc.constant(true), fc.anything()),
      error_code: fc.oneof(code, fc.anything()),
      error: fc.oneof(fc.string({ maxLength: 40 }), fc.anything()),
      retryable: fc.oneof(fc.boolean(), fc.anything()),
      retry_after_ms: fc.oneof(fc.double(), fc.integer(), fc.anything()),
    },
    { requiredKeys: [] },
  );
  const input = fc.oneof(envelopeLike, envelopeLike.map((v) => JSON.stringify(v) ?? ''), fc.string(), fc.anything());

  it('never throws and always returns one of the four mapped host codes', () => {
    fc.assert(
      fc.property(input, (value) => {
        const e = mapPluginError(value);
        expect(e).toBeInstanceOf(HostError);
        expect(mapped.has(e.code)).toBe(true);
        if (e.retry_after_ms !== undefined) {
          expect(e.retry_after_ms).toBeGreaterThan(0);
          expect(['RATE_LIMITED', 'SERVICE_DOWN']).toContain(e.code);
        }
        if (e.code === 'AUTH_REQUIRED' || e.code === 'INVALID_ARGS') expect(e.retryable).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('never throws on arbitrary CallToolResult-like values', () => {
    fc.assert(
      fc.property(fc.record({ isError: fc.anything(), content: fc.oneof(fc.array(fc.record({ type: fc.constantFrom('text', 'image'), text: input })), fc.anything()) }), (value) => {
        expect(mapped.has(mapCallToolError(value as CallToolErrorResult).code)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
