/**
 * The stdio protocols: NDJSON response lines, handshake and execute
 * response lines, and the line framer under arbitrary chunking.
 */
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { LineReader } from '../../../src/framing/LineReader.js';
import { checkExecuteResponse, checkHandshakeResponse, type HandshakeExpectations } from '../../../src/shapes/handshake/handshakeChecks.js';
import { parseResponseLine } from '../../../src/shapes/ndjson-rpc/wire.js';
import { applyMutations, applyTextMutations, mutation, textMutation } from '../arbitraries/json.js';
import { expectResult, fuzzTarget } from '../harness.js';

const id = fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constantFrom(1.5, -0, '', '__proto__'));
const json = fc.jsonValue({ maxDepth: 3 });

const ndjsonResponse = fc.oneof(
  fc.record({ id, result: json }),
  fc.record({ id, error: fc.record({ code: fc.oneof(fc.integer({ min: -32700, max: -32000 }), fc.integer()), message: fc.string({ maxLength: 20 }), data: json }, { requiredKeys: ['code', 'message'] }) }),
);
const LINE_FRAGMENTS = ['{', '}', '"', ',', ':', '"id":1,', '"result":null,', '"error":{"code":1,"message":""},', '\\', '\r', '\uFEFF', ' '];

/** Lines that are mostly responses, some mutated, some not JSON at all. */
function lines<T>(base: fc.Arbitrary<T>, keys: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 2, arbitrary: base.map((v) => JSON.stringify(v)) },
    {
      weight: 4,
      arbitrary: fc.tuple(base, fc.array(mutation(keys), { minLength: 1, maxLength: 3 })).map(([v, m]) => JSON.stringify(applyMutations(v, m)) ?? ''),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(base, fc.array(textMutation(LINE_FRAGMENTS), { minLength: 1, maxLength: 3 }))
        .map(([v, m]) => applyTextMutations(JSON.stringify(v), m)),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('utf8')) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
  );
}

const has = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

const manifest = fc.record(
  {
    plugin_id: fc.oneof(fc.constantFrom('rterm.echo', 'other'), fc.string({ maxLength: 6 })),
    plugin_version: fc.constant('1.0.0'),
    protocol_version: fc.constantFrom('handshake/v1', 'handshake/v2', ''),
    exposed_tools: fc.array(fc.constantFrom('echo', 'upper', ' echo', ''), { maxLength: 3 }),
    capabilities: fc.array(fc.constantFrom('fs.read', 'net.dial', 'exec', '', ' fs.read'), { maxLength: 3 }),
  },
  { requiredKeys: ['plugin_id', 'plugin_version', 'protocol_version', 'exposed_tools'] },
);
const handshakeMessage = fc.record({ type: fc.constantFrom('handshake', 'response', 'Handshake'), manifest });
const expectations: fc.Arbitrary<HandshakeExpectations> = fc
  .record({
    protocolVersion: fc.constantFrom('handshake/v1', 'handshake/v2'),
    pluginId: fc.constantFrom('rterm.echo', 'other'),
    tool: fc.constantFrom('echo', 'upper'),
    allowedCapabilities: fc.subarray(['fs.read', 'net.dial', 'exec']),
    expectedCapabilities: fc.subarray(['fs.read', 'net.dial']),
  }, { requiredKeys: ['protocolVersion', 'allowedCapabilities', 'expectedCapabilities'] });

const executeMessage = fc.record(
  {
    type: fc.constantFrom('response', 'execute'),
    request_id: fc.constantFrom('req-1', 'req-2', ''),
    ok: fc.oneof(fc.boolean(), fc.constantFrom(0, 'true')),
    result: json,
    error: fc.record({ code: fc.oneof(fc.constantFrom('E_BAD', ' E', ''), fc.integer()), message: fc.constantFrom('bad', ''), data: json }, { requiredKeys: [] }),
  },
  { requiredKeys: ['type', 'request_id'] },
);

const HANDSHAKE_CODES = [
  'PLUGIN_INVALID_JSON',
  'PLUGIN_MALFORMED_RESPONSE',
  'PLUGIN_HANDSHAKE_FAILED',
  'PLUGIN_PROTOCOL_VERSION_MISMATCH',
  'PLUGIN_TOOL_NOT_EXPOSED',
  'PLUGIN_CAPABILITY_NOT_DECLARED',
  'PLUGIN_CAPABILITY_NOT_ALLOWED',
] as const;

/** Feeds `bytes` to a LineReader in the given chunk sizes and records what it reports, and the largest chunk fed. */
function frame(bytes: Buffer, cuts: readonly number[], maxFrameBytes: number, endTwice: boolean): { events: string[]; largestChunk: number } {
  const stream = new EventEmitter();
  const events: string[] = [];
  new LineReader(stream as unknown as Readable, {
    onLine: (line) => events.push(`line:${line}`),
    onOversize: (seen) => events.push(`oversize:${seen}`),
    onEnd: (partial) => events.push(`end:${partial === undefined ? '-' : `+${partial}`}`),
  }, maxFrameBytes);
  let at = 0;
  let largestChunk = 0;
  const feed = (chunk: Buffer): void => {
    largestChunk = Math.max(largestChunk, chunk.length);
    stream.emit('data', chunk);
  };
  for (const size of cuts) {
    if (at >= bytes.length) break;
    feed(bytes.subarray(at, at + size));
    at += size;
  }
  if (at < bytes.length) feed(bytes.subarray(at));
  stream.emit('end');
  if (endTwice) stream.emit('close');
  return { events, largestChunk };
}

/**
 * What the framer must report for a byte stream, computed without chunks. An
 * oversize line is listed with its full length: the most its report may count,
 * since the framer reports it on crossing the cap with the bytes seen so far.
 */
function expectedFrames(bytes: Buffer, maxFrameBytes: number): string[] {
  const events: string[] = [];
  const decode = (b: Buffer): string => (b.length > 0 && b[b.length - 1] === 0x0d ? b.subarray(0, -1) : b).toString('utf8');
  let start = 0;
  for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, start)) {
    const line = bytes.subarray(start, nl);
    events.push(line.length > maxFrameBytes ? `oversize:${line.length}` : `line:${decode(line)}`);
    start = nl + 1;
  }
  const rest = bytes.subarray(start);
  if (rest.length > maxFrameBytes) events.push(`oversize:${rest.length}`, 'end:-');
  else events.push(rest.length > 0 ? `end:+${decode(rest)}` : 'end:-');
  return events;
}

/** Registers the protocol targets. */
export function protocolTargets(): void {
  describe('stdio protocols', () => {
    fuzzTarget(
      'ndjson: parseResponseLine on response-shaped and raw lines',
      [lines(ndjsonResponse, ['id', 'result', 'error', 'code', 'message', 'data'])],
      (line) => {
        const parsed = parseResponseLine(line);
        let value: unknown;
        let isJson = true;
        try {
          value = JSON.parse(line);
        } catch {
          isJson = false;
        }
        expect(parsed.kind === 'invalid-json', 'invalid-json exactly when JSON.parse fails').toBe(!isJson);
        if (parsed.kind !== 'response') {
          expect(typeof parsed.reason).toBe('string');
          return;
        }
        expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
        const record = value as Record<string, unknown>;
        expect(has(record, 'result') !== has(record, 'error'), 'accepted a line with both or neither of result and error').toBe(true);
        const { response } = parsed;
        expect(response.id).toBe(record.id);
        expect(typeof response.id === 'string' || Number.isFinite(response.id)).toBe(true);
        if ('error' in response) {
          expect(Number.isInteger(response.error.code)).toBe(true);
          expect(typeof response.error.message).toBe('string');
        } else {
          expect(has(response, 'result')).toBe(true);
        }
      },
      { weight: 3 },
    );

    fuzzTarget(
      'handshake: checkHandshakeResponse on handshake-shaped and raw lines',
      [lines(handshakeMessage, ['type', 'manifest', 'plugin_id', 'protocol_version', 'exposed_tools', 'capabilities']), expectations],
      (line, expect_) => {
        const result = checkHandshakeResponse(line, expect_);
        expectResult(result, HANDSHAKE_CODES);
        if (result.isErr()) {
          const failureClass = result.error.details.failure_class;
          expect(typeof failureClass, 'every handshake failure names its class').toBe('string');
          return;
        }
        const m = result.value;
        expect(m.protocol_version).toBe(expect_.protocolVersion);
        if (expect_.pluginId !== undefined) expect(m.plugin_id).toBe(expect_.pluginId);
        if (expect_.tool !== undefined) expect(m.exposed_tools).toContain(expect_.tool);
        const declared = m.capabilities ?? [];
        for (const c of declared) expect(expect_.allowedCapabilities, 'a capability outside the allow-list was accepted').toContain(c);
        for (const c of expect_.expectedCapabilities) expect(declared).toContain(c);
        if (expect_.allowedCapabilities.length > 0) expect(declared.length).toBeGreaterThan(0);
      },
      { weight: 2 },
    );

    fuzzTarget(
      'handshake: checkExecuteResponse on execute-shaped and raw lines',
      [lines(executeMessage, ['type', 'request_id', 'ok', 'result', 'error', 'code', 'message']), fc.constantFrom('req-1', 'req-2')],
      (line, requestId) => {
        const result = checkExecuteResponse(line, requestId);
        expectResult(result, ['PLUGIN_INVALID_JSON', 'PLUGIN_MALFORMED_RESPONSE']);
        if (result.isErr()) return;
        const r = result.value;
        expect(r.request_id).toBe(requestId);
        const raw = JSON.parse(line) as Record<string, unknown>;
        expect(has(raw, 'result') !== has(raw, 'error'), 'accepted both or neither of result and error').toBe(true);
        if (r.ok) expect(has(raw, 'result')).toBe(true);
        else {
          expect(typeof r.error.code === 'string' && r.error.code.length > 0 && r.error.code.trim() === r.error.code).toBe(true);
          expect(typeof r.error.message === 'string' && r.error.message.length > 0).toBe(true);
        }
      },
      { weight: 2 },
    );

    const streamText = fc.array(
      fc.oneof(
        fc.string({ unit: 'grapheme', maxLength: 24 }),
        fc.constantFrom('\n', '\r\n', '\r', '\n\n', 'é', '💥', '{"id":1,"result":null}\n'),
        fc.integer({ min: 1, max: 300 }).map((n) => 'x'.repeat(n)),
      ),
      { maxLength: 24 },
    );
    fuzzTarget(
      'framing: LineReader under arbitrary chunking and caps',
      [streamText, fc.array(fc.integer({ min: 1, max: 64 }), { maxLength: 40 }), fc.integer({ min: 1, max: 200 }), fc.boolean()],
      (parts, cuts, maxFrameBytes, endTwice) => {
        const bytes = Buffer.from(parts.join(''), 'utf8');
        const { events, largestChunk } = frame(bytes, cuts, maxFrameBytes, endTwice);
        const expected = expectedFrames(bytes, maxFrameBytes);
        const kind = (event: string): string => (event.startsWith('oversize:') ? 'oversize' : event);
        expect(events.map(kind)).toEqual(expected.map(kind));
        events.forEach((event, i) => {
          if (kind(event) !== 'oversize') return;
          const seen = Number(event.slice('oversize:'.length));
          const lineBytes = Number(expected[i]!.slice('oversize:'.length));
          expect(seen).toBeGreaterThan(maxFrameBytes);
          expect(seen).toBeLessThanOrEqual(Math.min(lineBytes, maxFrameBytes + largestChunk));
        });
      },
      { weight: 2 },
    );
  });
}
