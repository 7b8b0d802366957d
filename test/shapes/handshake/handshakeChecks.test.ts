import { describe, expect, it } from 'vitest';
import { checkExecuteResponse, checkHandshakeResponse, nameListProblem, type HandshakeExpectations } from '../../../src/shapes/handshake/handshakeChecks.js';

const expect0: HandshakeExpectations = { protocolVersion: 'handshake/v1', tool: 'echo', allowedCapabilities: ['net'], expectedCapabilities: [] };
const good = { plugin_id: 'p', plugin_version: '1', protocol_version: 'handshake/v1', exposed_tools: ['echo'], capabilities: ['net'] };
const line = (manifest: unknown, type = 'handshake'): string => JSON.stringify({ type, manifest });

describe('checkHandshakeResponse', () => {
  it('returns the manifest when every check passes, ignoring unknown fields', () => {
    expect(checkHandshakeResponse(line({ ...good, extra: 1 }), expect0)._unsafeUnwrap()).toEqual(good);
  });

  it('checks the protocol version before the rest of the manifest', () => {
    const error = checkHandshakeResponse(line({ protocol_version: 'v9' }), expect0)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_PROTOCOL_VERSION_MISMATCH');
  });

  it('checks tool exposure before capabilities', () => {
    const error = checkHandshakeResponse(line({ ...good, exposed_tools: ['other'], capabilities: ['root'] }), expect0)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TOOL_NOT_EXPOSED');
  });

  it.each([
    [{ ...good, plugin_id: '' }, /manifest\/plugin_id must NOT have fewer than 1 characters/],
    [{ ...good, plugin_version: 3 }, /manifest\/plugin_version must be string/],
    [{ ...good, exposed_tools: [] }, /manifest\/exposed_tools must NOT have fewer than 1 items/],
    [{ ...good, exposed_tools: 'echo' }, /manifest\/exposed_tools must be array/],
    [{ ...good, exposed_tools: ['echo', '\techo'] }, /exposed_tools\/1 must be a non-empty tool name without whitespace/],
    [{ ...good, capabilities: ['net', 'net'] }, /capability "net" is declared twice/],
    [{ ...good, capabilities: [''] }, /capability is empty/],
  ])('fails the handshake on a structurally invalid manifest (%#)', (manifest, reason) => {
    const error = checkHandshakeResponse(line(manifest), expect0)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(error.details.failure_class).toBe('handshake_failed');
    expect(String(error.details.reason)).toMatch(reason);
  });

  it('classifies a JSON non-object as malformed output', () => {
    expect(checkHandshakeResponse('[1]', expect0)._unsafeUnwrapErr().details.failure_class).toBe('malformed_response');
  });

  it('needs no capabilities when the host grants none, and allows an empty declaration then', () => {
    const none = { ...expect0, allowedCapabilities: [] };
    const { capabilities: _dropped, ...bare } = good;
    expect(checkHandshakeResponse(line(bare), none).isOk()).toBe(true);
    expect(checkHandshakeResponse(line({ ...good, capabilities: [] }), none).isOk()).toBe(true);
  });
});

describe('checkExecuteResponse', () => {
  it('accepts ok with result (even null) and ok:false with a PluginError', () => {
    expect(checkExecuteResponse('{"type":"response","request_id":"r","ok":true,"result":null}', 'r')._unsafeUnwrap()).toEqual({ type: 'response', request_id: 'r', ok: true, result: null });
    expect(checkExecuteResponse('{"type":"response","request_id":"r","ok":false,"error":{"code":"E","message":"m"}}', 'r').isOk()).toBe(true);
  });

  it.each([
    ['{"type":"response","request_id":"r","ok":true}', /carries "result"/],
    ['{"type":"response","request_id":"r","ok":"yes","result":1}', /"ok" must be/],
    ['{"type":"response","request_id":"r","ok":false,"error":{"code":"","message":"m"}}', /error.code is empty/],
    ['{"type":"response","request_id":"r","ok":false,"error":{"code":"E","message":""}}', /error.message/],
    ['{"type":"response","request_id":"r","ok":false,"result":1,"error":{"code":"E","message":"m"}}', /no "result"/],
    ['{"type":"handshake","request_id":"r","ok":true,"result":1}', /"type" must be "response"/],
  ])('calls %s malformed', (text, reason) => {
    const error = checkExecuteResponse(text, 'r')._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(error.details.raw_line).toBe(text);
    expect(String(error.details.reason)).toMatch(reason);
  });
});

describe('nameListProblem', () => {
  it('accepts clean unique names and rejects empty lists only when asked', () => {
    expect(nameListProblem(['a', 'b.c'], 'f', true)).toBeUndefined();
    expect(nameListProblem([], 'f', false)).toBeUndefined();
    expect(nameListProblem([], 'f', true)).toBe('f is empty');
    expect(nameListProblem(['a ', 'b'], 'f', false)).toBe('f[0] "a " has surrounding whitespace');
  });
});
