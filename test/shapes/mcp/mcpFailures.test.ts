import { PassThrough } from 'node:stream';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { hostError } from '../../../src/errors/HostError.js';
import { systemClock } from '../../../src/ports/ports.js';
import type { ExitInfo, PluginProcess } from '../../../src/process/PluginProcess.js';
import { mapMcpFailure, type McpFailureContext } from '../../../src/shapes/mcp/mcpFailures.js';

const EXIT: ExitInfo = { code: null, signal: 'SIGKILL', status: 137, description: 'killed by SIGKILL (137, likely out of memory)' };

function context(overrides: Partial<McpFailureContext> = {}, exitInfo?: ExitInfo): McpFailureContext {
  const process: PluginProcess = {
    pid: 1,
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    exited: exitInfo === undefined ? new Promise(() => undefined) : Promise.resolve(exitInfo),
    exitInfo,
    stderrTail: () => 'Traceback: oops\n',
    onStderrLine: () => () => undefined,
    stop: () => Promise.resolve(EXIT),
  };
  return { phase: 'tools/call', tool: 't', process, clock: systemClock, exitGraceMs: 20, fatal: undefined, connectionClosed: false, timeoutMs: 1000, maxTotalTimeoutMs: 5000, ...overrides };
}

describe('mapMcpFailure', () => {
  it.each([
    [ErrorCode.MethodNotFound, 'PLUGIN_METHOD_NOT_FOUND'],
    [ErrorCode.InvalidParams, 'INVALID_ARGS'],
    [ErrorCode.InternalError, 'PLUGIN_INTERNAL_ERROR'],
    [ErrorCode.InvalidRequest, 'PLUGIN_REQUEST_REJECTED'],
    [ErrorCode.ParseError, 'PLUGIN_REQUEST_REJECTED'],
    [-31999, 'PLUGIN_INTERNAL_ERROR'],
  ])('maps JSON-RPC error %i from the plugin to %s with the code and stderr tail', async (code, expected) => {
    const error = await mapMcpFailure(new McpError(code, 'nope', { why: 1 }), context());
    expect(error.code).toBe(expected);
    expect(error.details).toMatchObject({ jsonrpc_code: code, jsonrpc_data: { why: 1 }, stderr_tail: 'Traceback: oops\n', tool: 't' });
  });

  it('says a plugin that answered -32603 with nothing on stderr said all it had, instead of "See the plugin stderr."', async () => {
    const withStderr = await mapMcpFailure(new McpError(ErrorCode.InternalError, 'nope'), context());
    expect(withStderr.hint).toBe('See the plugin stderr.');
    const process = { ...context().process, stderrTail: () => ' \n' };
    const silent = await mapMcpFailure(new McpError(ErrorCode.InternalError, "browserType.launch: Executable doesn't exist"), context({ process }));
    expect(silent.code).toBe('PLUGIN_INTERNAL_ERROR');
    expect(silent.hint).toMatch(/^The plugin had written nothing on stderr when it answered: its message \(details\.jsonrpc_message\) is all it said of the cause\. .*'info <plugin>'/);
    // Another code keeps its own hint: a method the plugin lacks says so whatever its stderr.
    expect((await mapMcpFailure(new McpError(ErrorCode.MethodNotFound, 'no'), context({ process }))).hint).not.toContain('nothing on stderr');
  });

  it('maps -32602 outside tools/call, where the params are the host\'s, to PLUGIN_INVALID_PARAMS', async () => {
    const error = await mapMcpFailure(new McpError(ErrorCode.InvalidParams, 'bad cursor'), context({ phase: 'tools/list' }));
    expect(error.code).toBe('PLUGIN_INVALID_PARAMS');
  });

  it("returns the transport's own verdict on one request (a HostError in the answer's data) with the call's context", async () => {
    const verdict = hostError('PLUGIN_RESULT_TOO_LARGE', 'too big', { details: { bytes: 10, max_frame_bytes: 5 } });
    const error = await mapMcpFailure(new McpError(ErrorCode.InternalError, 'too big', verdict), context());
    expect(error.code).toBe('PLUGIN_RESULT_TOO_LARGE');
    expect(error.details).toMatchObject({ bytes: 10, max_frame_bytes: 5, phase: 'tools/call', tool: 't' });
  });

  it('maps the SDK output-schema check to PLUGIN_MALFORMED_RESPONSE, not invalid params', async () => {
    const error = await mapMcpFailure(new McpError(ErrorCode.InvalidParams, "Structured content does not match the tool's output schema: data must have required property 'page'"), context());
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    // The host's own check, not a JSON-RPC error the plugin sent, and not the hint for a reply with both result and error.
    expect(error.message).toBe(`plugin answered tools/call of "t" with a result its tool's outputSchema rejects: Structured content does not match the tool's output schema: data must have required property 'page'`);
    expect(error.hint).toMatch(/^The tool listed an outputSchema, and this successful result's structuredContent does not match it/);
  });

  it('maps a per-request timeout and an SDK-detected total cap to PLUGIN_TIMEOUT with the limit that fired', async () => {
    const perCall = await mapMcpFailure(new McpError(ErrorCode.RequestTimeout, 'Request timed out'), context({ abortedBy: 'timeout' }));
    expect(perCall.details).toMatchObject({ timeout_ms: 1000 });
    const total = await mapMcpFailure(new McpError(ErrorCode.RequestTimeout, 'Maximum total timeout exceeded', { maxTotalTimeout: 5000 }), context({ phase: 'resources/read' }));
    expect(total.code).toBe('PLUGIN_TIMEOUT');
    expect(total.details).toMatchObject({ max_total_timeout_ms: 5000 });
  });

  it('tells caller aborts from timeouts, whatever the SDK rejected with', async () => {
    const timeoutShaped = new McpError(ErrorCode.RequestTimeout, 'AbortError');
    expect((await mapMcpFailure(timeoutShaped, context({ abortedBy: 'caller' }))).code).toBe('PLUGIN_CANCELLED');
    expect((await mapMcpFailure(timeoutShaped, context({ abortedBy: 'total-timeout' }))).code).toBe('PLUGIN_TIMEOUT');
  });

  it('maps a closed connection to PLUGIN_CRASHED with the exit when known, and without it when not', async () => {
    const closed = new McpError(ErrorCode.ConnectionClosed, 'Connection closed');
    const killed = await mapMcpFailure(closed, context({}, EXIT));
    expect(killed.code).toBe('PLUGIN_CRASHED');
    expect(killed.details).toMatchObject({ exit: EXIT, stderr_tail: 'Traceback: oops\n' });
    expect(killed.message).toContain('SIGKILL');
    const unknown = await mapMcpFailure(closed, context());
    expect(unknown.code).toBe('PLUGIN_CRASHED');
    expect(unknown.details.exit).toBeUndefined();
    expect(unknown.message).toContain('closed its stdout');
  });

  it('prefers the reason the host ended the connection for', async () => {
    const fatal = hostError('PLUGIN_FRAME_TOO_LARGE', 'too big', { details: { bytes_seen: 9 } });
    const error = await mapMcpFailure(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'), context({ fatal, connectionClosed: true }));
    expect(error.code).toBe('PLUGIN_FRAME_TOO_LARGE');
    expect(error.details).toMatchObject({ bytes_seen: 9, phase: 'tools/call', stderr_tail: 'Traceback: oops\n' });
  });

  it('maps initialize failures to PLUGIN_HANDSHAKE_FAILED, or PLUGIN_PROTOCOL_VERSION_MISMATCH for an unsupported version', async () => {
    const refused = await mapMcpFailure(new Error("Server's protocol version is not supported: 1999-01-01"), context({ phase: 'initialize', offeredProtocolVersion: '1999-01-01' }));
    expect(refused.code).toBe('PLUGIN_PROTOCOL_VERSION_MISMATCH');
    expect(refused.details).toMatchObject({ offered: '1999-01-01', supported: expect.arrayContaining(['2025-06-18']) });
    const slow = await mapMcpFailure(new McpError(ErrorCode.RequestTimeout, 'Request timed out'), context({ phase: 'initialize' }));
    expect(slow.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(slow.details).toMatchObject({ phase: 'initialize', jsonrpc_code: ErrorCode.RequestTimeout, timeout_ms: 1000 });
    // A slow start is no malformed handshake line: the hint names the setting that gives it more time.
    expect(slow.hint).toMatch(/startupTimeoutMs/);
  });

  it('maps a result that fails the MCP schema to PLUGIN_MALFORMED_RESPONSE', async () => {
    const error = await mapMcpFailure(new Error('content: expected array'), context());
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(error.details.reason).toBe('content: expected array');
  });
});
