/**
 * MCP servers as they are published, run unmodified through PluginHost in
 * the sandbox (issue 14, "Run them as they are"): stdout that is not
 * JSON-RPC, MCP-native tool errors, answers over the frame cap, and the
 * call's own timeout and signal while the plugin starts.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import stdoutSettings from '../../etc/mcp-stdout.json' with { type: 'json' };
import { stoppedClock } from '../support/clocks.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool, removePackages, textOf } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const ID = 'host-published';
const op = (tool: string): string => `plug.${ID}.${tool}`;

async function setMode(profileDir: string, mode: string): Promise<void> {
  const dataDir = join(profileDir, 'data', ID);
  await mkdir(dataDir, { recursive: true });
  await writeFile(join(dataDir, 'mode'), mode);
}

function record<E extends keyof HostEventMap>(host: PluginHost, event: E): HostEventMap[E][] {
  const seen: HostEventMap[E][] = [];
  host.events.on(event, (payload) => seen.push(payload));
  return seen;
}

describe('stdout that is not JSON-RPC', () => {
  it('is tolerated by default: the banner and log lines come out as stdout events and calls succeed', async () => {
    const host = await pool.installed(await pool.profile(), ['published']);
    const stdout = record(host, 'stdout');
    const spawns = record(host, 'spawn');
    expect(textOf((await host.call(op('echo'), { message: 'one' }))._unsafeUnwrap())).toBe('echo: one');
    expect(textOf((await host.call(op('echo'), { message: 'two' }))._unsafeUnwrap())).toBe('echo: two');
    expect(spawns).toHaveLength(1);
    expect(stdout).toEqual([
      { plugin_id: ID, line: 'host-published 1.0.0 starting (this banner goes to stdout)' },
      { plugin_id: ID, line: '{"level":"info","msg":"a JSON log line that is not JSON-RPC"}' },
      { plugin_id: ID, line: 'echo called with 3 characters' },
      { plugin_id: ID, line: 'echo called with 3 characters' },
    ]);
  });

  it('reports a flood of lines as a burst of stdout events and one summary with the count of the rest (etc/mcp-stdout.json)', async () => {
    const profile = await pool.profile();
    await setMode(profile, 'stdout-flood');
    // Stopped: no token comes back during the test, so the one summary is the one flushed when the process stops.
    const host = await pool.installed(profile, ['published'], { clock: stoppedClock(Date.UTC(2026, 10, 28)) });
    const stdout = record(host, 'stdout');
    expect(textOf((await host.call(op('echo'), { message: 'one' }))._unsafeUnwrap())).toBe('echo: one');
    await host.close();
    // 20,000 flood lines, the banner, the JSON log line and the echo's line.
    const dropped = 20_003;
    const burst = stdoutSettings.noiseReportsBurst;
    expect(stdout).toHaveLength(burst + 1);
    expect(stdout[0]).toEqual({ plugin_id: ID, line: 'flood line 1' });
    expect(stdout.slice(0, burst).every((event) => event.suppressed === undefined)).toBe(true);
    expect(stdout[burst]).toEqual({ plugin_id: ID, line: '', suppressed: dropped - burst });
  });

  it('fails the plugin under the strict policy, set for this plugin only', async () => {
    const host = await pool.installed(await pool.profile(), ['published'], { plugins: { [ID]: { stdout: 'strict' } } });
    const failed = (await host.call(op('echo'), { message: 'x' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_INVALID_JSON');
    expect(failed.details).toMatchObject({ plugin_id: ID, op_id: op('echo'), line_excerpt: 'host-published 1.0.0 starting (this banner goes to stdout)' });
  });
});

describe('MCP-native tool results', () => {
  it('returns a stock McpServer input-validation error intact, with its own code', async () => {
    const host = await pool.installed(await pool.profile(), ['published']);
    const failed = (await host.call(op('count'), { n: 'seven' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_TOOL_ERROR');
    expect(failed.details).toMatchObject({ plugin_id: ID, op_id: op('count') });
    const result = failed.details.result as { content: { type: string; text: string }[]; isError: boolean };
    expect(result.isError).toBe(true);
    expect(result.content).toHaveLength(1);
    expect(result.content[0]?.text).toMatch(/^MCP error -32602: Input validation error: Invalid arguments for tool count/);
    expect(failed.message).toBe(result.content[0]?.text);
    expect(textOf((await host.call(op('count'), { n: 7 }))._unsafeUnwrap())).toBe('counted 7');
  });

  it('keeps content and structuredContent of a plain isError result unchanged', async () => {
    const host = await pool.installed(await pool.profile(), ['published']);
    const failed = (await host.call(op('refuse'), {}))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_TOOL_ERROR');
    expect(failed.retryable).toBe(false);
    expect(failed.details.result).toEqual({
      content: [{ type: 'text', text: 'upstream refused: quota exhausted for today' }],
      structuredContent: { reason: 'quota', resets_at: '2026-11-27T00:00:00Z' },
      isError: true,
    });
  });

  it("maps the author guide's envelope in an isError: false result as the contract says", async () => {
    const host = await pool.installed(await pool.profile(), ['published']);
    const failed = (await host.call(op('greet'), { name: '' }))._unsafeUnwrapErr();
    expect(failed).toMatchObject({ code: 'INVALID_ARGS', source_error_code: 'INVALID_INPUT', retryable: false, message: 'name must be a non-empty string' });
    expect(failed.details).toMatchObject({ plugin_id: ID, op_id: op('greet') });
    expect(textOf((await host.call(op('greet'), { name: 'world' }))._unsafeUnwrap())).toBe('{"success":true,"data":{"greeting":"Hello, world!"}}');
  });
});

describe('an answer over the frame cap', () => {
  it('fails that call only: the same process answers the next call and nothing is quarantined', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['published'], { plugins: { [ID]: { maxFrameBytes: 64 * 1024 } } });
    const spawns = record(host, 'spawn');
    const crashes = record(host, 'crash');
    const failed = (await host.call(op('blob'), { bytes: 100_000 }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_RESULT_TOO_LARGE');
    expect(failed.details).toMatchObject({ plugin_id: ID, op_id: op('blob'), max_frame_bytes: 64 * 1024 });
    expect(failed.details.bytes).toBeGreaterThan(100_000);
    expect(textOf((await host.call(op('blob'), { bytes: 1000 }))._unsafeUnwrap())).toHaveLength(1000);
    expect(spawns).toHaveLength(1);
    expect(crashes).toEqual([]);
    expect((await host.info(ID))._unsafeUnwrap().status).toBe('active');
  });
});

describe("the call's timeout and signal while the plugin starts", () => {
  it('a plugin that never answers initialize fails a call with timeoutMs 2000 with PLUGIN_TIMEOUT, and its process is stopped at its own start timeout', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['published'], { startupTimeoutMs: 4_000 });
    await setMode(dir, 'never-initialize');
    const spawns = record(host, 'spawn');
    const exits = record(host, 'exit');
    const quarantines = record(host, 'quarantine');
    const failed = (await host.call(op('echo'), { message: 'x' }, { timeoutMs: 2000 }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_TIMEOUT');
    expect(failed.details).toMatchObject({ plugin_id: ID, op_id: op('echo'), waiting_for: 'the plugin to start', timeout_ms: 2000 });
    expect(spawns).toHaveLength(1);
    await waitUntil(() => exits.some((e) => e.pid === spawns[0]?.pid));
    // The start failed with no call left waiting: it still counts, and the host writes the quarantine before the profile goes.
    await waitUntil(() => quarantines.some((q) => q.quarantined));
  }, 15_000);

  it('an abort while the plugin starts fails the call with PLUGIN_CANCELLED; the process is stopped at its own start timeout', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['published'], { startupTimeoutMs: 4_000 });
    await setMode(dir, 'never-initialize');
    const spawns = record(host, 'spawn');
    const exits = record(host, 'exit');
    const quarantines = record(host, 'quarantine');
    const abort = new AbortController();
    host.events.on('spawn', () => abort.abort());
    const failed = (await host.call(op('echo'), { message: 'x' }, { signal: abort.signal }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_CANCELLED');
    expect(failed.details).toMatchObject({ plugin_id: ID, op_id: op('echo'), waiting_for: 'the plugin to start' });
    await waitUntil(() => exits.some((e) => e.pid === spawns[0]?.pid));
    // The start failed with no call left waiting: it still counts, and the host writes the quarantine before the profile goes.
    await waitUntil(() => quarantines.some((q) => q.quarantined));
  }, 15_000);
});

describe('host.tools', () => {
  it('returns titles, output schemas and annotations as the plugin lists them', async () => {
    const host = await pool.installed(await pool.profile(), ['published']);
    const tools = (await host.tools(ID))._unsafeUnwrap();
    const describeTool = tools.find((t) => t.name === 'describe');
    expect(describeTool).toMatchObject({
      title: 'Describe a thing',
      annotations: { readOnlyHint: true, openWorldHint: false },
      outputSchema: { type: 'object', properties: { thing: { type: 'string' }, length: { type: 'number' } } },
    });
    const called = (await host.call(op('describe'), { thing: 'abc' }))._unsafeUnwrap();
    // The shape types the value: an MCP CallToolResult, read without a cast.
    if (called.shape !== 'mcp-plugin') throw new Error(`answered by a ${called.shape} plugin`);
    expect(called.value.structuredContent).toEqual({ thing: 'abc', length: 3 });
  });
});
