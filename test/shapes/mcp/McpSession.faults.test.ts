import { afterEach, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { McpSession, type McpSessionOptions } from '../../../src/shapes/mcp/McpSession.js';
import type { McpToolsChange } from '../../../src/shapes/mcp/McpConnection.js';
import type { CallProgress } from '../../../src/shapes/PluginSession.js';
import { FAULTY_TOOLS, launchFaulty } from '../../support/mcpFixtures.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const sessions: McpSession[] = [];

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

/** A session on mcp-faulty that remembers every process it started. */
function faulty(
  mode = '',
  { checkTools = true, ...options }: Partial<McpSessionOptions> & { checkTools?: boolean } = {},
): { session: McpSession; processes: PluginProcess[] } {
  const processes: PluginProcess[] = [];
  const session = McpSession.create({
    launch: launchFaulty(mode, { onSpawn: (p) => processes.push(p) }),
    ...(checkTools ? { expectedTools: FAULTY_TOOLS } : {}),
    ...options,
  })._unsafeUnwrap();
  sessions.push(session);
  return { session, processes };
}

function stderrLine(process: PluginProcess | undefined, pattern: RegExp, timeoutMs = 10_000): Promise<string> {
  if (process === undefined) return Promise.reject(new Error('no process'));
  const already = process.stderrTail().split('\n').find((l) => pattern.test(l));
  if (already !== undefined) return Promise.resolve(already);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no stderr line matching ${pattern}; tail: ${process.stderrTail()}`));
    }, timeoutMs);
    const off = process.onStderrLine((line) => {
      if (!pattern.test(line)) return;
      clearTimeout(timer);
      off();
      resolve(line);
    });
  });
}

const textOf = (value: { content: { type: string; text?: string }[] }): string => {
  const first = value.content[0];
  if (first?.type !== 'text' || first.text === undefined) throw new Error('no text block');
  return first.text;
};

describe('timeouts and progress', () => {
  it('fails a call that gets no answer with PLUGIN_TIMEOUT, tells the plugin, and keeps the process', async () => {
    const { session, processes } = faulty('', { defaultTimeoutMs: 400 });
    // Started first: the call's 400 ms also count while the plugin starts.
    expect((await session.listTools()).isOk()).toBe(true);
    const error = (await session.callTool('hang', {}))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.retryable).toBe(true);
    expect(error.details).toMatchObject({ phase: 'tools/call', tool: 'hang', timeout_ms: 400 });
    expect(typeof error.details.stderr_tail).toBe('string');
    await stderrLine(processes[0], /^received notifications\/cancelled .*timed out/i);
    expect((await session.callTool('echo', { message: 'still here' }))._unsafeUnwrap().isError).toBe(false);
    expect(session.stats().launches).toBe(1);
  });

  it('takes a per-call timeout over the session default', async () => {
    const { session } = faulty('', { defaultTimeoutMs: 60_000 });
    const error = (await session.callTool('hang', {}, { timeoutMs: 300 }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details.timeout_ms).toBe(300);
  });

  it('resets the timeout on every progress notification and reports progress', async () => {
    const { session } = faulty();
    const progress: CallProgress[] = [];
    // 6 steps of 800 ms take ~4.8 s, far beyond the 2.5 s timeout, but each gap between progress leaves it
    // 1.7 s of margin, which a loaded machine does not eat.
    const result = await session.callTool('slow', { steps: 6, intervalMs: 800 }, { timeoutMs: 2500, onProgress: (p) => progress.push(p) });
    expect(JSON.parse(textOf(result._unsafeUnwrap().value))).toEqual({ done: 6 });
    // The SDK dispatches notifications a microtask later than responses, so a progress sent right before the
    // result may arrive after the call settled; every earlier one is delivered in order.
    expect(progress.map((p) => p.progress).slice(0, 5)).toEqual([1, 2, 3, 4, 5]);
    expect(progress[0]).toEqual({ progress: 1, total: 6, message: 'step 1' });
  });

  it('times out the same slow work when the plugin sends no progress', async () => {
    const { session } = faulty();
    const error = (await session.callTool('slow', { steps: 6, intervalMs: 800, progress: false }, { timeoutMs: 2500 }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
  });

  it('enforces the total cap even while progress keeps arriving, and cancels at the plugin', async () => {
    const { session, processes } = faulty();
    const error = (
      await session.callTool('slow', { steps: 100, intervalMs: 100 }, { timeoutMs: 2000, maxTotalTimeoutMs: 1200 })
    )._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ tool: 'slow', max_total_timeout_ms: 1200 });
    await stderrLine(processes[0], /^received notifications\/cancelled /);
  });
});

describe('the total cap when the per-call timeout is shorter', () => {
  it('ends the call at the cap once progress has reset the timeout, not at the next progress', async () => {
    const { session, processes } = faulty();
    // The 4 s timeout is shorter than the 5 s cap, so the cap's own timer starts only with the first progress
    // (at 2 s, 2 s before the timeout). Progress at 2 s and 4 s resets the timeout past the cap, and the SDK
    // alone would notice the cap only at the progress of 6 s. Each of those moments is a second or more apart.
    const progress: CallProgress[] = [];
    const error = (
      await session.callTool('slow', { steps: 5, intervalMs: 2000 }, { timeoutMs: 4000, maxTotalTimeoutMs: 5000, onProgress: (p) => progress.push(p) })
    )._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ tool: 'slow', max_total_timeout_ms: 5000 });
    expect(progress.length).toBeGreaterThan(0);
    expect(String((error.cause as Error).message)).toContain('total cap of 5000 ms reached');
    await stderrLine(processes[0], /^received notifications\/cancelled /);
  });
});

describe('cancellation', () => {
  it('sends notifications/cancelled for the request when the caller aborts, and returns PLUGIN_CANCELLED', async () => {
    const { session, processes } = faulty();
    const controller = new AbortController();
    const pending = session.callTool('hang', {}, { signal: controller.signal });
    // Abort once the plugin has the request, so the cancellation must travel on the wire.
    (await session.listTools())._unsafeUnwrap();
    await new Promise((r) => setTimeout(r, 200));
    controller.abort(new Error('user pressed stop'));
    const error = (await pending)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CANCELLED');
    expect(error.details).toMatchObject({ phase: 'tools/call', tool: 'hang' });
    const line = await stderrLine(processes[0], /^received notifications\/cancelled /);
    const params = JSON.parse(line.slice('received notifications/cancelled '.length)) as { requestId: unknown; reason: string };
    expect(typeof params.requestId).toBe('number');
    expect(params.reason).toContain('user pressed stop');
    await stderrLine(processes[0], new RegExp(`^cancelled ${String(params.requestId)} `));
  });

  it('returns PLUGIN_CANCELLED without starting anything when the signal is already aborted', async () => {
    const { session } = faulty();
    const error = (await session.callTool('echo', { message: 'x' }, { signal: AbortSignal.abort() }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CANCELLED');
    expect(session.stats().launches).toBe(0);
  });

  it('cancels a call still waiting for an in-flight slot without ever sending it', async () => {
    const { session, processes } = faulty('', { maxInFlight: 1 });
    const blocker = session.callTool('echo', { message: 'blocker', delayMs: 800 });
    const controller = new AbortController();
    const queued = session.callTool('hang', {}, { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 100));
    expect(session.stats().waiting).toBe(1);
    controller.abort();
    expect((await queued)._unsafeUnwrapErr().code).toBe('PLUGIN_CANCELLED');
    expect((await blocker)._unsafeUnwrap().isError).toBe(false);
    expect(processes[0]?.stderrTail()).not.toContain('notifications/cancelled');
  });
});

describe('concurrency', () => {
  it('answers 32 concurrent calls to one process, each with its own result', async () => {
    const { session } = faulty('', { maxInFlight: 32 });
    const messages = Array.from({ length: 32 }, (_, i) => `message-${i}`);
    const results = await Promise.all(messages.map((message, i) => session.callTool('echo', { message, delayMs: (i * 7) % 50 })));
    const echoed = results.map((r) => (JSON.parse(textOf(r._unsafeUnwrap().value)) as { message: string }).message);
    expect(echoed).toEqual(messages);
    expect(session.stats().launches).toBe(1);
  });

  it('keeps at most maxInFlight calls outstanding at the plugin and queues the rest', async () => {
    const { session } = faulty('', { maxInFlight: 4 });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => session.callTool('echo', { message: `m${i}`, delayMs: 150 })));
    const seen = results.map((r) => (JSON.parse(textOf(r._unsafeUnwrap().value)) as { inFlight: number }).inFlight);
    expect(Math.max(...seen)).toBeLessThanOrEqual(4);
    expect(Math.max(...seen)).toBeGreaterThan(1);
    expect(session.stats()).toMatchObject({ inFlight: 0, waiting: 0 });
  });
});

describe('crashes and malformed output', () => {
  it('maps a crash mid-call to PLUGIN_CRASHED with the stderr tail and exit status, then starts a new process', async () => {
    const { session, processes } = faulty();
    const pendingEcho = session.callTool('echo', { message: 'in flight', delayMs: 2000 });
    const error = (await session.callTool('crash', {}))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(error.details.stderr_tail).toContain('fatal: boom in the middle of a call');
    expect(error.details.exit).toMatchObject({ code: 3, status: 3 });
    expect(error.details).toMatchObject({ phase: 'tools/call', tool: 'crash' });
    expect((await pendingEcho)._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');

    expect((await session.callTool('echo', { message: 'again' }))._unsafeUnwrap().isError).toBe(false);
    expect(processes).toHaveLength(2);
    expect(session.stats().launches).toBe(2);
  });

  it('maps a plugin that dies before initialize to PLUGIN_CRASHED with its stderr', async () => {
    const { session } = faulty('exit-on-start');
    const error = (await session.listTools())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(error.details).toMatchObject({ phase: 'initialize', exit: { code: 2 } });
    expect(error.details.stderr_tail).toContain('refusing to start');
  });

  it('fails in-flight calls with PLUGIN_INVALID_JSON when the plugin prints a non-JSON line (default policy)', async () => {
    const { session } = faulty();
    const error = (await session.callTool('garbage', { kind: 'text' }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_INVALID_JSON');
    expect(error.details).toMatchObject({ tool: 'garbage', line_excerpt: 'debug: this should have gone to stderr' });
    expect(session.stats().stdoutViolations).toBe(1);
    expect((await session.callTool('echo', { message: 'fresh process' }))._unsafeUnwrap().isError).toBe(false);
    expect(session.stats().launches).toBe(2);
  });

  it('fails with PLUGIN_MALFORMED_RESPONSE on JSON that is not JSON-RPC', async () => {
    const { session } = faulty();
    const error = (await session.callTool('garbage', { kind: 'json' }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(error.details.line_excerpt).toBe('{"hello":"not json-rpc"}');
  });

  it('drops and counts stdout noise when told to tolerate it', async () => {
    const { session } = faulty('', { stdoutNoise: 'tolerate' });
    const result = (await session.callTool('garbage', { kind: 'text' }))._unsafeUnwrap();
    expect(textOf(result.value)).toBe('answered after garbage');
    expect(session.stats()).toMatchObject({ stdoutViolations: 1, launches: 1 });
  });

  it('refuses a plugin that prints a banner on stdout before initialize', async () => {
    const { session } = faulty('stdout-banner');
    const error = (await session.listTools())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_INVALID_JSON');
    expect(error.details).toMatchObject({ phase: 'initialize', line_excerpt: 'mcp-faulty server starting...' });
  });

  it('fails a call whose answer exceeds the frame cap with PLUGIN_RESULT_TOO_LARGE and keeps the process for the next call', async () => {
    const { session } = faulty('', { maxFrameBytes: 64 * 1024, stdoutNoise: 'fail' });
    const error = (await session.callTool('big', { bytes: 200_000 }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_RESULT_TOO_LARGE');
    expect(error.details).toMatchObject({ tool: 'big', max_frame_bytes: 64 * 1024 });
    expect(error.details.bytes as number).toBeGreaterThan(200_000);
    const fits = (await session.callTool('big', { bytes: 1000 }))._unsafeUnwrap();
    expect(textOf(fits.value)).toHaveLength(1000);
    expect(session.stats()).toMatchObject({ launches: 1, stdoutViolations: 1 });
  });
});

describe('tools/list_changed', () => {
  it('re-lists the tools and reports the change', async () => {
    const changes: McpToolsChange[] = [];
    const { session } = faulty('', { checkTools: false, onToolsChanged: (c) => changes.push(c) });
    (await session.callTool('change_tools', { action: 'add' }))._unsafeUnwrap();
    await expect.poll(() => changes.length, { timeout: 10_000 }).toBe(1);
    expect(changes[0]?.mismatch).toBeUndefined();
    expect(changes[0]?.tools.map((t) => t.name)).toContain('late');
    expect((await session.listTools())._unsafeUnwrap().map((t) => t.name)).toContain('late');
    expect(textOf((await session.callTool('late', {}))._unsafeUnwrap().value)).toBe('late');
  });

  it('fails later calls with PLUGIN_TOOLS_MISMATCH when the new list breaks the manifest', async () => {
    const changes: McpToolsChange[] = [];
    const { session } = faulty('', { onToolsChanged: (c) => changes.push(c) });
    (await session.callTool('change_tools', { action: 'add' }))._unsafeUnwrap();
    await expect.poll(() => changes.length, { timeout: 10_000 }).toBe(1);
    expect(changes[0]?.mismatch?.code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect(changes[0]?.mismatch?.details).toEqual({ undeclared: ['late'], missing: [] });
    const refused = (await session.callTool('echo', { message: 'x' }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect((await session.listTools())._unsafeUnwrapErr().code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect(session.stats().launches).toBe(1);
  });
});

describe('initialize', () => {
  // Tiny real servers written inline: one answers initialize with a version nobody supports, one never answers.
  const answerWithVersion = `
    process.stdin.setEncoding('utf8');
    let buffered = '';
    process.stdin.on('data', (chunk) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\\n'); nl !== -1; nl = buffered.indexOf('\\n')) {
        const message = JSON.parse(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        if (message.method === 'initialize') {
          process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: {
            protocolVersion: '1999-01-01', capabilities: { tools: {} }, serverInfo: { name: 'old', version: '0' } } }) + '\\n');
        }
      }
    });`;

  it('refuses a plugin that answers with an unsupported protocol version', async () => {
    const session = McpSession.create({ launch: launchCommand([process.execPath, '-e', answerWithVersion]) })._unsafeUnwrap();
    sessions.push(session);
    const error = (await session.listTools())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_PROTOCOL_VERSION_MISMATCH');
    expect(error.details).toMatchObject({ offered: '1999-01-01', phase: 'initialize' });
  });

  it('fails with PLUGIN_HANDSHAKE_FAILED when initialize is not answered within the startup timeout', async () => {
    const processes: PluginProcess[] = [];
    const session = McpSession.create({
      launch: launchCommand([process.execPath, '-e', 'process.stdin.resume(); console.error("listening, never answering")'], { onSpawn: (p) => processes.push(p) }),
      // Long enough for node to start and print its line on a loaded machine; the process never answers anyway.
      startupTimeoutMs: 5000,
    })._unsafeUnwrap();
    sessions.push(session);
    const error = (await session.callTool('anything', {}))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(error.details).toMatchObject({ phase: 'initialize' });
    expect(error.details.stderr_tail).toContain('never answering');
    await expect(processes[0]?.exited).resolves.toBeDefined();
  });
});

describe('a line cut off by the end of stdout', () => {
  it('is a crash carrying the partial line, not invalid JSON', async () => {
    const script = [
      "process.stdin.once('data', () => {",
      "  process.stdout.write('{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVer');",
      '  process.exit(0);',
      '});',
    ].join('\n');
    const session = McpSession.create({ launch: launchCommand([process.execPath, '-e', script]) })._unsafeUnwrap();
    sessions.push(session);
    const error = (await session.listTools())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(error.details.partial_line).toBe('{"jsonrpc":"2.0","id":0,"result":{"protocolVer');
  });
});
