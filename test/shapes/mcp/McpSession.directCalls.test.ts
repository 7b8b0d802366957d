/**
 * The host's own tools/call path (DirectToolCalls beside the SDK Client):
 * each guarantee the SDK's request gave a call, against a real plugin process
 * that answers whatever each call asks for (fixtures/plugins/mcp-raw).
 */
import { fileURLToPath } from 'node:url';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../../src/ports/ports.js';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { McpSession, type McpSessionOptions } from '../../../src/shapes/mcp/McpSession.js';
import { FakeClock } from '../../support/clocks.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const RAW = fileURLToPath(new URL('../../../fixtures/plugins/mcp-raw/bin/mcp-raw.mjs', import.meta.url));
const sessions: McpSession[] = [];

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

function rawPlugin(options: Partial<McpSessionOptions> = {}): { session: McpSession; processes: PluginProcess[] } {
  const processes: PluginProcess[] = [];
  const session = McpSession.create({
    launch: launchCommand([process.execPath, RAW], { onSpawn: (p) => processes.push(p) }),
    expectedTools: ['shaped', 'raw'],
    ...options,
  })._unsafeUnwrap();
  sessions.push(session);
  return { session, processes };
}

function stderrLine(process: PluginProcess | undefined, pattern: RegExp): Promise<string> {
  if (process === undefined) return Promise.reject(new Error('no process'));
  const already = process.stderrTail().split('\n').find((l) => pattern.test(l));
  if (already !== undefined) return Promise.resolve(already);
  return new Promise((resolve) => {
    const off = process.onStderrLine((line) => {
      if (!pattern.test(line)) return;
      off();
      resolve(line);
    });
  });
}

describe('a tools/call result is checked as the SDK Client checks it', () => {
  it('takes the plain shape as it is, fills the default content, strips unknown members of content blocks', async () => {
    const { session } = rawPlugin();
    const plain = { content: [{ type: 'text', text: 'a' }], structuredContent: { any: 1 }, isError: false };
    expect((await session.callTool('raw', { answer: plain }))._unsafeUnwrap().value).toEqual(plain);
    expect((await session.callTool('raw', { answer: {} }))._unsafeUnwrap().value).toEqual({ content: [] });
    const extra = { content: [{ type: 'text', text: 'a', extra: 1 }], other: 2 };
    expect((await session.callTool('raw', { answer: extra }))._unsafeUnwrap().value).toEqual({ content: [{ type: 'text', text: 'a' }], other: 2 });
    const failed = (await session.callTool('raw', { answer: { content: [{ type: 'text', text: 'no' }], isError: true } }))._unsafeUnwrap();
    expect(failed.isError).toBe(true);
  });

  it.each([
    ['a text block without text', { content: [{ type: 'text' }] }],
    ['isError that is not a boolean', { content: [], isError: 'yes' }],
    ['image data that is not base64', { content: [{ type: 'image', data: '!!', mimeType: 'image/png' }] }],
    ['an unknown content type', { content: [{ type: 'video', url: 'x' }] }],
    ['structuredContent that is an array', { content: [], structuredContent: [1] }],
    ['content that is not an array', { content: 'text' }],
  ])('refuses %s with PLUGIN_MALFORMED_RESPONSE and keeps the process', async (_what, answer) => {
    const { session } = rawPlugin();
    const error = (await session.callTool('raw', { answer }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(error.details).toMatchObject({ phase: 'tools/call', tool: 'raw' });
    expect((await session.callTool('raw', {}))._unsafeUnwrap().isError).toBe(false);
    expect(session.stats().launches).toBe(1);
  });

  it('takes an answer whose id comes back as a decimal string, as the SDK did', async () => {
    const { session } = rawPlugin();
    const answer = { content: [{ type: 'text', text: 'by string id' }] };
    const result = (await session.callTool('raw', { answer, stringId: true }, { timeoutMs: 5000 }))._unsafeUnwrap();
    expect(result.value).toEqual(answer);
  });

  it("enforces the output schema of a tool listed on the first of two tools/list pages", async () => {
    const { session } = rawPlugin();
    expect((await session.callTool('shaped', { answer: { content: [], structuredContent: { n: 1 } } }))._unsafeUnwrap().value.structuredContent).toEqual({ n: 1 });
    const wrong = (await session.callTool('shaped', { answer: { content: [], structuredContent: { n: 'one' } } }))._unsafeUnwrapErr();
    expect(wrong.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(wrong.message).toContain("does not match the tool's output schema");
    const missing = (await session.callTool('shaped', { answer: { content: [{ type: 'text', text: 'n' }] } }))._unsafeUnwrapErr();
    expect(missing.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(missing.message).toContain('did not return structured content');
    // A tool error need not carry structured content.
    expect((await session.callTool('shaped', { answer: { content: [], isError: true } }))._unsafeUnwrap().isError).toBe(true);
  });
});

describe('timeouts', () => {
  it('ignores the answer that arrives after its call timed out, and the next call gets its own', async () => {
    const { session, processes } = rawPlugin();
    (await session.listTools())._unsafeUnwrap();
    const late = { content: [{ type: 'text', text: 'late' }] };
    const error = (await session.callTool('raw', { answer: late, delayMs: 600 }, { timeoutMs: 100 }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ timeout_ms: 100 });
    await stderrLine(processes[0], /^received notifications\/cancelled \d+/);
    const next = session.callTool('raw', { answer: { content: [{ type: 'text', text: 'mine' }] }, delayMs: 900 });
    expect((await next)._unsafeUnwrap().value.content).toEqual([{ type: 'text', text: 'mine' }]);
    expect(session.stats()).toMatchObject({ launches: 1, stdoutViolations: 0 });
  });

  it("runs a call's timeout on the session's clock, and tells the plugin", async () => {
    const clock = new FakeClock(0);
    const { session, processes } = rawPlugin({ clock });
    (await session.listTools())._unsafeUnwrap();
    const call = session.callTool('raw', { never: true }, { timeoutMs: 60_000 });
    await stderrLine(processes[0], /^received tools\/call \d+/);
    clock.advance(60_000);
    const error = (await call)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ timeout_ms: 60_000 });
    await stderrLine(processes[0], /^received notifications\/cancelled \d+/);
  });

  it('waits for the answer of a call whose timeout is longer than a Node timer can wait (2^31 ms)', async () => {
    const { session } = rawPlugin();
    (await session.listTools())._unsafeUnwrap();
    const answer = { content: [{ type: 'text', text: 'patient' }] };
    const result = (await session.callTool('raw', { answer, delayMs: 200 }, { timeoutMs: 2 ** 32, maxTotalTimeoutMs: 2 ** 33 }))._unsafeUnwrap();
    expect(result.value).toEqual(answer);
  });

  it('hands its slot back after each warm call, whether it was answered, refused or timed out', async () => {
    const { session } = rawPlugin({ maxInFlight: 1 });
    (await session.listTools())._unsafeUnwrap();
    const ok = { content: [{ type: 'text', text: 'ok' }] };
    expect((await session.callTool('raw', { answer: ok }))._unsafeUnwrap().value).toEqual(ok);
    expect((await session.callTool('raw', { error: { code: -32602, message: 'no' } }))._unsafeUnwrapErr().code).toBe('INVALID_ARGS');
    expect((await session.callTool('raw', { never: true }, { timeoutMs: 100 }))._unsafeUnwrapErr().code).toBe('PLUGIN_TIMEOUT');
    expect(session.stats()).toMatchObject({ inFlight: 0, waiting: 0 });
    // With one slot, a slot kept by any call above would leave this one waiting until its timeout.
    expect((await session.callTool('raw', { answer: ok }, { timeoutMs: 5000 }))._unsafeUnwrap().value).toEqual(ok);
  });

  it('arms one timer for all the calls in flight, not one per call', async () => {
    let armed = 0;
    const counting: Clock = {
      now: () => systemClock.now(),
      setTimer: (fn, ms) => {
        armed++;
        return systemClock.setTimer(fn, ms);
      },
    };
    const { session } = rawPlugin({ clock: counting, maxInFlight: 16 });
    (await session.listTools())._unsafeUnwrap();
    armed = 0;
    for (let wave = 0; wave < 2; wave++) {
      const calls = Array.from({ length: 16 }, (_, i) => session.callTool('raw', { answer: { content: [{ type: 'text', text: String(i) }] }, delayMs: 20 }));
      const results = await Promise.all(calls);
      expect(results.map((r) => r._unsafeUnwrap().value.content)).toEqual(Array.from({ length: 16 }, (_, i) => [{ type: 'text', text: String(i) }]));
    }
    expect(armed).toBe(1);
  });
});

describe('a list that names another page after every page', () => {
  function endlessPlugin(flag: string): { session: McpSession; processes: PluginProcess[] } {
    const processes: PluginProcess[] = [];
    const session = McpSession.create({
      launch: launchCommand([process.execPath, RAW, flag], { onSpawn: (p) => processes.push(p) }),
      expectedTools: ['shaped', 'raw'],
    })._unsafeUnwrap();
    sessions.push(session);
    return { session, processes };
  }
  const pagesAsked = (process: PluginProcess | undefined, method: string): number =>
    (process?.stderrTail() ?? '').split('\n').filter((line) => line.startsWith(`received ${method} `)).length;

  it.each([
    ['tools/list', '--endless-tools', (session: McpSession) => session.listTools()],
    ['resources/list', '--endless-resources', (session: McpSession) => session.listResources()],
  ])('ends %s after the pages etc/plugin-answers.json allows, as PLUGIN_MALFORMED_RESPONSE, leaving no listener behind', async (method, flag, list) => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const { session, processes } = endlessPlugin(flag);
    const listed = (await list(session))._unsafeUnwrapErr();
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', onWarning);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
    expect(listed.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(listed.details).toMatchObject({ phase: method });
    expect(pagesAsked(processes.at(-1), method)).toBe(pluginAnswerLimits.maxListPages);
  });
});
