import type { ResultAsync } from 'neverthrow';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostError } from '../../../src/errors/HostError.js';
import { NdjsonRpcSession, type NdjsonRpcSessionOptions } from '../../../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import { NDJSON_PROTOCOL_VERSION } from '../../../src/shapes/ndjson-rpc/wire.js';
import type { ProcessLauncher, ToolResult } from '../../../src/shapes/PluginSession.js';
import { recordingLogger, trackLaunches, type LaunchTracker } from '../../support/launchTracker.js';
import { nodeArgv, plainLauncher } from '../../support/plainLauncher.js';

const ECHO_MJS = fileURLToPath(new URL('../../../fixtures/plugins/ndjson-echo/echo.mjs', import.meta.url));
const ECHO_PY = fileURLToPath(new URL('../../../fixtures/plugins/ndjson-echo/echo.py', import.meta.url));

const nodeEcho = (mode?: string, extraEnv: Record<string, string> = {}): ProcessLauncher =>
  plainLauncher(nodeArgv(ECHO_MJS), { env: { ...(mode === undefined ? {} : { ECHO_MODE: mode }), ...extraEnv } });
const pythonEcho = (mode?: string): ProcessLauncher =>
  plainLauncher(['python3', ECHO_PY], { env: mode === undefined ? {} : { ECHO_MODE: mode } });

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

function open(tracker: LaunchTracker, options: Partial<NdjsonRpcSessionOptions> = {}): NdjsonRpcSession {
  const session = NdjsonRpcSession.create({ launch: tracker.launch, callTimeoutMs: 15_000, ...options })._unsafeUnwrap();
  cleanups.push(async () => {
    await session.close();
    await tracker.stopAll();
  });
  return session;
}

async function value(session: NdjsonRpcSession, method: string, params?: unknown): Promise<ToolResult> {
  return (await session.callTool(method, params))._unsafeUnwrap();
}

async function failure<T>(call: ResultAsync<T, HostError>): Promise<HostError> {
  return (await call)._unsafeUnwrapErr();
}

describe('NdjsonRpcSession: normal operation', () => {
  it('exports the protocol version v1', () => {
    expect(NDJSON_PROTOCOL_VERSION).toBe('v1');
  });

  it('round-trips echo and ping with the Node reference plugin, one process kept alive across calls', async () => {
    const tracker = trackLaunches(nodeEcho());
    const session = open(tracker);
    expect(await value(session, 'echo', { text: 'héllo', n: [1, 2] })).toEqual({ isError: false, value: { text: 'héllo', n: [1, 2] } });
    expect(await value(session, 'ping')).toEqual({ isError: false, value: 'pong' });
    expect(await value(session, 'echo', 'again')).toEqual({ isError: false, value: 'again' });
    expect(tracker.attempts()).toBe(1);
    expect(tracker.processes[0]?.exitInfo).toBeUndefined();
  });

  it('round-trips echo and ping with the Python reference plugin', async () => {
    const tracker = trackLaunches(pythonEcho());
    const session = open(tracker);
    expect(await value(session, 'echo', { a: 1 })).toEqual({ isError: false, value: { a: 1 } });
    expect(await value(session, 'ping')).toEqual({ isError: false, value: 'pong' });
    expect(tracker.attempts()).toBe(1);
  });

  it('mints unique increasing ids and omits params when there are none', async () => {
    const tracker = trackLaunches(nodeEcho());
    const session = open(tracker);
    await value(session, 'ping');
    await value(session, 'echo', null);
    await value(session, 'echo', { x: 1 });
    expect(tracker.written).toEqual([
      { method: 'ping', id: 1 },
      { method: 'echo', params: null, id: 2 },
      { method: 'echo', params: { x: 1 }, id: 3 },
    ]);
  });

  it('spawns nothing until the first call: listTools answers from the configured methods', async () => {
    const tracker = trackLaunches(nodeEcho());
    const session = open(tracker, { tools: ['echo', { name: 'ping', description: 'answers pong' }] });
    expect((await session.listTools())._unsafeUnwrap()).toEqual([{ name: 'echo' }, { name: 'ping', description: 'answers pong' }]);
    await session.close();
    expect(tracker.attempts()).toBe(0);
  });

  it('returns application errors as results, not host errors', async () => {
    const tracker = trackLaunches(nodeEcho('app-error'));
    const session = open(tracker);
    expect(await value(session, 'echo', { q: 1 })).toEqual({ isError: true, value: { code: 1001, message: 'application says no', data: { q: 1 } } });
    const unknown = await value(session, 'nope');
    expect(unknown.isError).toBe(true);
    expect(unknown.value).toMatchObject({ code: -32601 });
  });

  it('serializes requests by default: the plugin never sees two outstanding requests', async () => {
    const tracker = trackLaunches(nodeEcho('concurrent'));
    const session = open(tracker);
    const delays = [200, 50, 0, 120];
    const results = await Promise.all(delays.map((delayMs, i) => session.callTool('echo', { delayMs, i })));
    results.forEach((r, i) => expect(r._unsafeUnwrap().value).toEqual({ params: { delayMs: delays[i], i }, outstanding: 1 }));
  });

  it('pipelines with maxInFlight > 1 and matches out-of-order responses by id', async () => {
    const tracker = trackLaunches(nodeEcho('concurrent'));
    const session = open(tracker, { maxInFlight: 4 });
    const delays = [400, 200, 0, 100];
    const results = await Promise.all(delays.map((delayMs, i) => session.callTool('echo', { delayMs, i })));
    const values = results.map((r) => r._unsafeUnwrap().value as { params: unknown; outstanding: number });
    values.forEach((v, i) => expect(v.params).toEqual({ delayMs: delays[i], i }));
    expect(Math.max(...values.map((v) => v.outstanding))).toBeGreaterThan(1);
  });
});

describe('NdjsonRpcSession: host failures', () => {
  it('SpawnFailed on the first call when the binary is missing; no process, and the next call tries again', async () => {
    const tracker = trackLaunches(plainLauncher(['/nonexistent/plugin-binary']));
    const session = open(tracker);
    const error = await failure(session.callTool('ping', undefined));
    expect(error.code).toBe('PLUGIN_SPAWN_FAILED');
    expect(error.details.protocol_code).toBe('SpawnFailed');
    expect(tracker.processes).toHaveLength(0);
    expect((await failure(session.callTool('ping', undefined))).code).toBe('PLUGIN_SPAWN_FAILED');
    expect(tracker.attempts()).toBe(2);
  });

  it.each([
    ['Node', () => nodeEcho('crash-mid')],
    ['Python', () => pythonEcho('crash-mid')],
  ])('PluginCrashed when the %s plugin exits mid-response; every later call is crashed too', async (_name, launcher) => {
    const tracker = trackLaunches(launcher());
    const session = open(tracker);
    const error = await failure(session.callTool('echo', { a: 1 }));
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(error.details).toMatchObject({ protocol_code: 'PluginCrashed', method: 'echo', request_id: 1, exit: { code: 1 } });
    expect(String(error.details.partial_line)).toContain('"resu');
    expect(String(error.details.stderr_tail)).toContain('crash-mid');
    const later = await failure(session.callTool('ping', undefined));
    expect(later.code).toBe('PLUGIN_CRASHED');
    expect(later.details).toMatchObject({ protocol_code: 'PluginCrashed', sticky: true, exit: { code: 1 } });
    expect(tracker.attempts()).toBe(1);
  });

  it('PluginCrashed with the exit status when the plugin exits before answering', async () => {
    const tracker = trackLaunches(nodeEcho('crash-before'));
    const session = open(tracker);
    const error = await failure(session.callTool('ping', undefined));
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(error.details).toMatchObject({ exit: { code: 3, status: 3 } });
    expect(error.details.partial_line).toBeUndefined();
  });

  it('respawns after a crash only when the host opts in', async () => {
    const tracker = trackLaunches(nodeEcho('crash-mid'), nodeEcho());
    const session = open(tracker, { respawn: true });
    expect((await failure(session.callTool('ping', undefined))).code).toBe('PLUGIN_CRASHED');
    expect(await value(session, 'ping')).toEqual({ isError: false, value: 'pong' });
    expect(tracker.attempts()).toBe(2);
    expect(tracker.written.map((w) => (w as { id: number }).id)).toEqual([1, 2]);
  });

  it('Malformed response fails the call it preceded; that call\'s own answer, arriving later, never fails the next call', async () => {
    const tracker = trackLaunches(nodeEcho('log-late'));
    const session = open(tracker);
    const first = await failure(session.callTool('echo', 'first'));
    expect(first.code).toBe('PLUGIN_INVALID_JSON');
    // The plugin answers 'first' only once this request reached it: a stale answer while this call waits.
    const second = await failure(session.callTool('echo', 'second'));
    expect(second.code).toBe('PLUGIN_INVALID_JSON');
    expect(tracker.attempts()).toBe(1);
  });

  it('Timeout leaves the child running, and its late answer never reaches the next call', async () => {
    const tracker = trackLaunches(nodeEcho('slow', { ECHO_SLOW_MS: '1500' }));
    const logger = recordingLogger();
    const session = open(tracker, { logger });
    await value(session, 'ping');
    const error = await failure(session.callTool('echo', 'first', { timeoutMs: 300 }));
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ protocol_code: 'Timeout', method: 'echo', timeout_ms: 300, phase: 'awaiting_response' });
    expect(tracker.processes[0]?.exitInfo).toBeUndefined();
    expect(await value(session, 'echo', 'second')).toEqual({ isError: false, value: 'second' });
    expect(logger.records.some((r) => r.message.includes('late answer') && r.fields.request_id === 2)).toBe(true);
    expect(tracker.attempts()).toBe(1);
  });

  it.each([
    ['Node', () => nodeEcho('garbage'), 'this is not json'],
    ['Python', () => pythonEcho('garbage'), 'not json either'],
  ])('InvalidJson with the raw line from the %s plugin; the child keeps serving', async (_name, launcher, raw) => {
    const tracker = trackLaunches(launcher());
    const session = open(tracker);
    const error = await failure(session.callTool('echo', 1));
    expect(error.code).toBe('PLUGIN_INVALID_JSON');
    expect(error.details).toMatchObject({ protocol_code: 'InvalidJson', jsonrpc_code: -32700, raw_line: raw, request_id: 1 });
    expect(await value(session, 'echo', 2)).toEqual({ isError: false, value: 2 });
    expect(tracker.attempts()).toBe(1);
  });

  it.each([
    ['both', /both "result" and "error"/],
    ['neither', /neither "result" nor "error"/],
    ['wrong-id', /matches no pending request/],
  ])('InvalidResponse when the plugin answers with %s; raw line attached, child keeps serving', async (mode, reason) => {
    const tracker = trackLaunches(nodeEcho(mode));
    const session = open(tracker);
    const error = await failure(session.callTool('echo', 1));
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(error.details).toMatchObject({ protocol_code: 'InvalidResponse', jsonrpc_code: -32600, request_id: 1 });
    expect(String(error.details.reason)).toMatch(reason);
    expect(typeof error.details.raw_line).toBe('string');
    expect(await value(session, 'echo', 2)).toEqual({ isError: false, value: 2 });
    expect(tracker.processes[0]?.exitInfo).toBeUndefined();
  });

  it('logs and ignores unsolicited lines while no request is pending', async () => {
    const tracker = trackLaunches(nodeEcho('chatty'));
    const logger = recordingLogger();
    const session = open(tracker, { logger });
    expect(await value(session, 'echo', 'a')).toEqual({ isError: false, value: 'a' });
    expect(await value(session, 'echo', 'b')).toEqual({ isError: false, value: 'b' });
    const warnings = logger.records.filter((r) => r.level === 'warn' && r.fields.raw_line === '{"note":"unsolicited"}');
    expect(warnings.length).toBeGreaterThanOrEqual(1);
  });

  it('PLUGIN_FRAME_TOO_LARGE for a response over the frame cap; the child keeps serving', async () => {
    const tracker = trackLaunches(nodeEcho());
    const session = open(tracker, { maxFrameBytes: 1024 });
    const error = await failure(session.callTool('echo', 'x'.repeat(5000)));
    expect(error.code).toBe('PLUGIN_FRAME_TOO_LARGE');
    expect(error.details).toMatchObject({ max_frame_bytes: 1024, request_id: 1 });
    expect(Number(error.details.bytes_seen)).toBeGreaterThan(1024);
    expect(error.message).toMatch(/longer than the 1024-byte frame cap \(\d+ bytes seen\)/);
    expect(await value(session, 'echo', 'small')).toEqual({ isError: false, value: 'small' });
  });

  it('PLUGIN_FRAME_TOO_LARGE for an answer line that never ends, at the cap rather than the call timeout; close() stops the writer', async () => {
    const tracker = trackLaunches(nodeEcho('endless'));
    const session = open(tracker, { maxFrameBytes: 1024, callTimeoutMs: 60_000 });
    const error = await failure(session.callTool('echo', 'x'));
    expect(error.code).toBe('PLUGIN_FRAME_TOO_LARGE');
    expect(error.details).toMatchObject({ max_frame_bytes: 1024, request_id: 1 });
    expect(Number(error.details.bytes_seen)).toBeGreaterThan(1024);
    await session.close();
    expect(tracker.processes[0]?.exitInfo).toBeDefined();
  });

  it('cancels through an AbortSignal, and an already aborted call launches nothing', async () => {
    const tracker = trackLaunches(nodeEcho('slow', { ECHO_SLOW_MS: '1000' }));
    const session = open(tracker);
    const aborted = new AbortController();
    aborted.abort();
    expect((await failure(session.callTool('ping', undefined, { signal: aborted.signal }))).code).toBe('PLUGIN_CANCELLED');
    expect(tracker.attempts()).toBe(0);
    await value(session, 'ping');
    const controller = new AbortController();
    const pending = session.callTool('echo', 'first', { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const cancelled = await failure(pending);
    expect(cancelled.code).toBe('PLUGIN_CANCELLED');
    expect(cancelled.details.phase).toBe('awaiting_response');
    expect(await value(session, 'echo', 'second')).toEqual({ isError: false, value: 'second' });
  });
});

describe('NdjsonRpcSession: shutdown', () => {
  it('closes stdin and the plugin exits on EOF by itself', async () => {
    const tracker = trackLaunches(nodeEcho());
    const session = open(tracker);
    await value(session, 'ping');
    await session.close();
    expect(tracker.processes[0]?.exitInfo).toMatchObject({ code: 0, signal: null });
  });

  it('kills a plugin that ignores EOF once the call timeout has passed', async () => {
    const tracker = trackLaunches(nodeEcho('ignore-eof'));
    const session = open(tracker, { callTimeoutMs: 300 });
    expect((await session.callTool('ping', undefined, { timeoutMs: 15_000 }))._unsafeUnwrap().value).toBe('pong');
    await session.close();
    expect(tracker.processes[0]?.exitInfo?.signal).toBe('SIGTERM');
  });

  it('fails pending and later calls with HOST_CLOSED', async () => {
    const tracker = trackLaunches(nodeEcho('slow', { ECHO_SLOW_MS: '5000' }));
    const session = open(tracker, { callTimeoutMs: 2000 });
    const pending = session.callTool('echo', 'never');
    await new Promise((r) => setTimeout(r, 100));
    await session.close();
    expect((await failure(pending)).code).toBe('HOST_CLOSED');
    expect((await failure(session.callTool('ping', undefined))).code).toBe('HOST_CLOSED');
    expect((await session.listTools())._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
  });

  it('rejects invalid options without throwing', () => {
    const result = NdjsonRpcSession.create({ launch: nodeEcho(), maxInFlight: 0, callTimeoutMs: -1 });
    expect(result._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(result._unsafeUnwrapErr().details.problems).toHaveLength(2);
  });
});
