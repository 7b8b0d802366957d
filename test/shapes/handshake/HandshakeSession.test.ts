import { fileURLToPath } from 'node:url';
import { ResultAsync } from 'neverthrow';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import type { HostError } from '../../../src/errors/HostError.js';
import { HandshakeSession, type HandshakeSessionOptions } from '../../../src/shapes/handshake/HandshakeSession.js';
import { HANDSHAKE_PROTOCOL_VERSION } from '../../../src/shapes/handshake/wire.js';
import type { ProcessLauncher } from '../../../src/shapes/PluginSession.js';
import { trackLaunches, type LaunchTracker } from '../../support/launchTracker.js';
import { nodeArgv, plainLauncher } from '../../support/plainLauncher.js';

const fixture = (path: string): string => fileURLToPath(new URL(`../../../fixtures/plugins/${path}`, import.meta.url));
const REFERENCE = fixture('handshake-reference/plugin.mjs');
const FAULTY = fixture('handshake-faulty/plugin.mjs');
const NOT_EXECUTABLE = fixture('handshake-faulty/not-executable.mjs');

const reference = (env: Record<string, string> = {}): ProcessLauncher => plainLauncher(nodeArgv(REFERENCE), { env });
const faulty = (fault: string): ProcessLauncher => plainLauncher(nodeArgv(FAULTY), { env: { HANDSHAKE_FAULT: fault } });

/** Generous for a loaded 2-core machine; the short ones are set per test where a timeout is the point. */
const ROOMY = { launchMs: 20_000, handshakeMs: 20_000, invokeMs: 20_000, teardownMs: 10_000 };

const trackers: LaunchTracker[] = [];
afterEach(async () => {
  await Promise.all(trackers.splice(0).map((t) => t.stopAll()));
});

function session(launch: ProcessLauncher, options: Partial<HandshakeSessionOptions> = {}): { session: HandshakeSession; tracker: LaunchTracker } {
  const tracker = trackLaunches(launch);
  trackers.push(tracker);
  const created = HandshakeSession.create({ launch: tracker.launch, ...options, timeouts: { ...ROOMY, ...options.timeouts } });
  return { session: created._unsafeUnwrap(), tracker };
}

async function failure<T>(call: ResultAsync<T, HostError>): Promise<HostError> {
  return (await call)._unsafeUnwrapErr();
}

const allProcessesGone = (tracker: LaunchTracker): boolean => tracker.processes.every((p) => p.exitInfo !== undefined);

describe('HandshakeSession: the exchange', () => {
  it('launches, handshakes, executes once and tears down, every call', async () => {
    const { session: s, tracker } = session(reference());
    expect((await s.callTool('upper', { text: 'hi' }))._unsafeUnwrap()).toEqual({ isError: false, value: 'HI' });
    expect((await s.callTool('echo', { a: [1] }))._unsafeUnwrap()).toEqual({ isError: false, value: { a: [1] } });
    expect(tracker.attempts()).toBe(2);
    expect(tracker.processes.map((p) => p.exitInfo?.code)).toEqual([0, 0]);
    const [handshake, execute] = tracker.written as Record<string, unknown>[];
    expect(handshake).toEqual({ type: 'handshake', protocol_version: HANDSHAKE_PROTOCOL_VERSION, tool: 'upper', allowed_capabilities: [] });
    expect(execute).toMatchObject({ type: 'execute', tool: 'upper', input: { text: 'hi' } });
    expect(String(execute?.request_id)).toMatch(/^[0-9a-f]{24}$/);
    expect(tracker.written).toHaveLength(4);
  });

  it('returns a plugin error as an error result, not a host error', async () => {
    const { session: s } = session(reference());
    expect((await s.callTool('fail', {}))._unsafeUnwrap()).toEqual({ isError: true, value: { code: 'E_FAIL', message: 'the tool failed on purpose' } });
  });

  it('lists exposed_tools through a handshake-only launch, and hands out the manifest', async () => {
    const { session: s, tracker } = session(reference({ PLUGIN_CAPABILITIES: 'net' }), { allowedCapabilities: ['net', 'fs.read'], pluginId: 'fixture.reference' });
    expect((await s.listTools())._unsafeUnwrap()).toEqual([{ name: 'echo' }, { name: 'upper' }, { name: 'fail' }]);
    expect((await s.handshake())._unsafeUnwrap()).toEqual({
      plugin_id: 'fixture.reference',
      plugin_version: '1.0.0',
      protocol_version: HANDSHAKE_PROTOCOL_VERSION,
      exposed_tools: ['echo', 'upper', 'fail'],
      capabilities: ['net'],
    });
    expect(tracker.written).toEqual([
      { type: 'handshake', protocol_version: HANDSHAKE_PROTOCOL_VERSION, allowed_capabilities: ['net', 'fs.read'] },
      { type: 'handshake', protocol_version: HANDSHAKE_PROTOCOL_VERSION, allowed_capabilities: ['net', 'fs.read'] },
    ]);
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('accepts declared capabilities within the allow-list', async () => {
    const { session: s } = session(reference({ PLUGIN_CAPABILITIES: 'net' }), { allowedCapabilities: ['net'], expectedCapabilities: ['net'] });
    expect((await s.callTool('echo', 1))._unsafeUnwrap()).toEqual({ isError: false, value: 1 });
  });

  it('refuses a plugin spec with a dirty allow-list without launching anything', () => {
    const dirty = HandshakeSession.create({ launch: reference(), allowedCapabilities: ['net', 'net', ' fs'], expectedCapabilities: ['gpu'], timeouts: { invokeMs: 0 } });
    const error = dirty._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INVALID_OPTIONS');
    expect(error.details.problems).toEqual([
      'allowedCapabilities lists "net" twice',
      'expectedCapabilities lists "gpu", which is not allowed',
      'timeouts.invokeMs must be a positive integer',
    ]);
  });
});

describe('HandshakeSession: the nine failure classes', () => {
  it('launch_failed: a missing binary, and a fixture without the executable bit', async () => {
    for (const argv of [['/nonexistent/handshake-plugin'], [NOT_EXECUTABLE]]) {
      const { session: s, tracker } = session(plainLauncher(argv));
      const error = await failure(s.callTool('echo', {}));
      expect(error.code).toBe('PLUGIN_SPAWN_FAILED');
      expect(error.details).toMatchObject({ failure_class: 'launch_failed', phase: 'launch' });
      expect(tracker.processes).toHaveLength(0);
    }
  });

  it.each([
    ['wrong-type', /"type" must be "handshake"/],
    ['duplicate-tool', /exposed_tools must NOT have duplicate items/],
    ['padded-id', /plugin_id must be a non-empty id without whitespace/],
    ['padded-capability', /capabilities\/0 capability " net" is padded with whitespace/],
  ])('handshake_failed: %s', async (fault, reason) => {
    const { session: s, tracker } = session(faulty(fault), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(error.details).toMatchObject({ failure_class: 'handshake_failed', phase: 'handshake' });
    expect(String(error.details.reason)).toMatch(reason);
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('malformed: a handshake line nested deeper than etc/plugin-answers.json allows (attack review; printing it threw RangeError)', async () => {
    const { session: s, tracker } = session(faulty('deep-type'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(error.details).toMatchObject({ phase: 'handshake', max_nesting_depth: pluginAnswerLimits.maxNestingDepth });
    expect(() => JSON.stringify(error)).not.toThrow();
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('handshake_failed: the manifest names another plugin than the binding', async () => {
    const { session: s } = session(faulty('none'), { allowedCapabilities: ['net'], pluginId: 'someone.else' });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(String(error.details.reason)).toMatch(/not the bound plugin/);
  });

  it('timeout: a plugin that never answers the handshake is killed, never a success', async () => {
    const { session: s, tracker } = session(faulty('slow-handshake'), { allowedCapabilities: ['net'], timeouts: { handshakeMs: 400 } });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ failure_class: 'timeout', phase: 'handshake', timeout_ms: 400 });
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('timeout: a plugin that never answers the execute request (per-call timeout)', async () => {
    const { session: s, tracker } = session(faulty('slow-execute'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}, { timeoutMs: 400 }));
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ failure_class: 'timeout', phase: 'execute', timeout_ms: 400 });
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('timeout: a plugin that lingers after its response fails the call and is killed', async () => {
    const { session: s, tracker } = session(faulty('linger'), { allowedCapabilities: ['net'], timeouts: { teardownMs: 400 } });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ failure_class: 'timeout', phase: 'teardown' });
    expect(tracker.processes[0]?.exitInfo?.signal).not.toBeNull();
  });

  it('timeout: a launcher that does not deliver a process in time', async () => {
    const never: ProcessLauncher = () => new ResultAsync(new Promise(() => undefined));
    const s = HandshakeSession.create({ launch: never, timeouts: { launchMs: 200 } })._unsafeUnwrap();
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ failure_class: 'timeout', phase: 'launch' });
  });

  it.each([
    ['exit-before-handshake', 'handshake', 3],
    ['crash-after-handshake', 'execute', 2],
    ['exit0-no-response', 'execute', 0],
  ])('crashed: %s (exit before a valid response, whatever the status)', async (fault, phase, status) => {
    const { session: s } = session(faulty(fault), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(error.details).toMatchObject({ failure_class: 'crashed', phase, exit: { status } });
  });

  it('crashed: a non-zero exit after the response fails the call', async () => {
    const { session: s } = session(faulty('exit-nonzero'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(error.details).toMatchObject({ failure_class: 'crashed', phase: 'teardown', exit: { code: 1 } });
  });

  it('malformed_response: a handshake line that is not JSON (raw line attached)', async () => {
    const { session: s } = session(faulty('garbage-handshake'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_INVALID_JSON');
    expect(error.details).toMatchObject({ failure_class: 'malformed_response', phase: 'handshake', raw_line: 'hello, I am a plugin' });
  });

  it.each([
    ['wrong-request-id', 'execute', /does not echo the request/],
    ['result-and-error', 'execute', /no "error"/],
    ['second-handshake', 'handshake', /extra output/],
    ['extra-line', 'teardown', /extra output/],
  ])('malformed_response: %s', async (fault, phase, reason) => {
    const { session: s, tracker } = session(faulty(fault), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(error.details).toMatchObject({ failure_class: 'malformed_response', phase });
    expect(String(error.details.reason)).toMatch(reason);
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('malformed_response: a handshake line over the frame cap', async () => {
    const { session: s } = session(faulty('oversize-handshake'), { allowedCapabilities: ['net'], maxFrameBytes: 16 * 1024 });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_FRAME_TOO_LARGE');
    expect(error.details).toMatchObject({ failure_class: 'malformed_response', phase: 'handshake', max_frame_bytes: 16 * 1024 });
  });

  it('malformed_response: a handshake line that never ends fails at the frame cap, not the timeout, and the plugin is stopped', async () => {
    const { session: s, tracker } = session(faulty('endless-handshake'), { allowedCapabilities: ['net'], maxFrameBytes: 16 * 1024, timeouts: { handshakeMs: 60_000 } });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_FRAME_TOO_LARGE');
    expect(error.details).toMatchObject({ failure_class: 'malformed_response', phase: 'handshake', max_frame_bytes: 16 * 1024 });
    expect(error.details.bytes_seen as number).toBeGreaterThan(16 * 1024);
    expect(error.message).toMatch(/handshake line longer than the 16384-byte frame cap \(\d+ bytes seen\)/);
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('tool_not_exposed: the requested tool is not in exposed_tools', async () => {
    const { session: s, tracker } = session(faulty('tool-missing'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_TOOL_NOT_EXPOSED');
    expect(error.details).toMatchObject({ failure_class: 'tool_not_exposed', tool: 'echo', exposed_tools: ['something-else'] });
    expect(tracker.written).toHaveLength(1);
  });

  it('protocol_version_mismatch: the manifest speaks another version', async () => {
    const { session: s } = session(faulty('wrong-version'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_PROTOCOL_VERSION_MISMATCH');
    expect(error.details).toMatchObject({ failure_class: 'protocol_version_mismatch', requested: 'handshake/v1', declared: 'handshake/v0' });
  });

  it('protocol_version_mismatch: the host requests a version the plugin does not speak', async () => {
    const { session: s } = session(reference(), { protocolVersion: 'handshake/v2' });
    expect((await failure(s.callTool('echo', {}))).code).toBe('PLUGIN_PROTOCOL_VERSION_MISMATCH');
  });

  it('capability_not_declared: the host grants capabilities and the manifest declares none', async () => {
    const { session: s } = session(faulty('no-capabilities'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_CAPABILITY_NOT_DECLARED');
    expect(error.details).toMatchObject({ failure_class: 'capability_not_declared', declared: null, allowed: ['net'] });
  });

  it('capability_not_declared: a capability the plugin is known to request is missing', async () => {
    const { session: s } = session(reference({ PLUGIN_CAPABILITIES: 'net' }), { allowedCapabilities: ['net', 'fs.read'], expectedCapabilities: ['net', 'fs.read'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_CAPABILITY_NOT_DECLARED');
    expect(error.details.missing).toEqual(['fs.read']);
  });

  it('capability_not_allowed: a plugin cannot grant itself a capability by naming it', async () => {
    const { session: s, tracker } = session(faulty('self-grant'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}));
    expect(error.code).toBe('PLUGIN_CAPABILITY_NOT_ALLOWED');
    expect(error.details).toMatchObject({ failure_class: 'capability_not_allowed', not_allowed: ['root'], allowed: ['net'] });
    expect(tracker.written).toHaveLength(1);
  });

  it('capability_not_allowed: any declared capability when the host grants none', async () => {
    const { session: s } = session(reference({ PLUGIN_CAPABILITIES: 'net' }));
    expect((await failure(s.callTool('echo', {}))).code).toBe('PLUGIN_CAPABILITY_NOT_ALLOWED');
  });
});

describe('HandshakeSession: cancellation and close', () => {
  it('an abort kills the launch and reports PLUGIN_CANCELLED', async () => {
    const { session: s, tracker } = session(faulty('slow-execute'), { allowedCapabilities: ['net'] });
    const controller = new AbortController();
    const call = s.callTool('echo', {}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 300);
    const error = await failure(call);
    expect(error.code).toBe('PLUGIN_CANCELLED');
    expect(error.details.failure_class).toBeUndefined();
    await s.close();
    expect(allProcessesGone(tracker)).toBe(true);
  });

  it('maxTotalTimeoutMs bounds the whole launch', async () => {
    const { session: s } = session(faulty('slow-handshake'), { allowedCapabilities: ['net'] });
    const error = await failure(s.callTool('echo', {}, { maxTotalTimeoutMs: 400 }));
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ failure_class: 'timeout', phase: 'total' });
  });

  it('close stops launches in progress with HOST_CLOSED and refuses new calls', async () => {
    const { session: s, tracker } = session(faulty('slow-handshake'), { allowedCapabilities: ['net'] });
    const call = s.callTool('echo', {});
    await new Promise((r) => setTimeout(r, 300));
    await s.close();
    expect((await failure(call)).code).toBe('HOST_CLOSED');
    expect(allProcessesGone(tracker)).toBe(true);
    expect((await failure(s.callTool('echo', {}))).code).toBe('HOST_CLOSED');
  });
});
