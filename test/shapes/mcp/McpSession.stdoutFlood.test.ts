/**
 * A plugin that floods stdout with lines that are not JSON-RPC, under the
 * tolerate policy: each line used to make an info log record and a `stdout`
 * report, without bound. Now a budget per process (etc/mcp-stdout.json) lets
 * a burst through one by one and counts the rest into a summary. The clock is
 * stopped, so no token comes back and the one summary is the flush at close.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import stdoutSettings from '../../../etc/mcp-stdout.json' with { type: 'json' };
import type { Logger, LogLevel } from '../../../src/ports/ports.js';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { stoppedClock } from '../../support/clocks.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const SERVER = join(import.meta.dirname, '../../../fixtures/plugins/host-published/bin/server.mjs');
/** The fixture's flood, then its banner, its JSON log line, and the line each echo prints. */
const FLOOD = 20_000;
const BURST = stdoutSettings.noiseReportsBurst;

interface LogRecord {
  readonly level: LogLevel;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

const homes: string[] = [];
const sessions: McpSession[] = [];

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
  await Promise.all(homes.splice(0).map((home) => rm(home, { recursive: true, force: true })));
});

/** A tolerating session on host-published in `mode`, with its log records and its stdout reports. */
async function published(
  mode: string,
): Promise<{ session: McpSession; records: LogRecord[]; told: { line: string; suppressed?: number }[]; processes: PluginProcess[] }> {
  const home = await mkdtemp(join(tmpdir(), 'm1-flood-'));
  homes.push(home);
  await writeFile(join(home, 'mode'), mode);
  const records: LogRecord[] = [];
  const log = (level: LogLevel) => (fields: Record<string, unknown>, message: string) => void records.push({ level, fields, message });
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  const told: { line: string; suppressed?: number }[] = [];
  const processes: PluginProcess[] = [];
  const session = McpSession.create({
    launch: launchCommand([process.execPath, SERVER], { env: { HOME: home }, onSpawn: (p) => processes.push(p) }),
    stdoutNoise: 'tolerate',
    clock: stoppedClock(Date.UTC(2026, 10, 28)),
    logger,
    onStdoutNoise: (line, suppressed) => void told.push(suppressed === undefined ? { line } : { line, suppressed }),
  })._unsafeUnwrap();
  sessions.push(session);
  return { session, records, told, processes };
}

const stdoutRecords = (records: readonly LogRecord[]): LogRecord[] => records.filter((r) => r.message.startsWith('plugin output on stdout'));

describe('stdout noise under tolerate', () => {
  it('reports a flood of 20,000 lines in a burst and one summary with the count of the rest, and still answers', async () => {
    const { session, records, told } = await published('stdout-flood');
    const answer = (await session.callTool('echo', { message: 'one' }))._unsafeUnwrap();
    expect(answer.value.content).toEqual([{ type: 'text', text: 'echo: one' }]);
    const dropped = FLOOD + 3;
    // Every line was read and counted before the answer came.
    expect(session.stats().stdoutViolations).toBe(dropped);
    await session.close();

    expect(told).toHaveLength(BURST + 1);
    expect(told.slice(0, 3)).toEqual([{ line: 'flood line 1' }, { line: 'flood line 2' }, { line: 'flood line 3' }]);
    expect(told.slice(0, BURST).every((t) => t.suppressed === undefined)).toBe(true);
    expect(told[BURST]).toEqual({ line: '', suppressed: dropped - BURST });

    const logged = stdoutRecords(records);
    expect(logged).toHaveLength(BURST + 1);
    expect(logged.every((r) => r.level === 'info')).toBe(true);
    expect(logged.filter((r) => r.fields.suppressed !== undefined).map((r) => r.fields.suppressed)).toEqual([dropped - BURST]);
    // Nor is each line a debug record of its own.
    expect(records.length).toBeLessThan(BURST * 2);
  });

  it('sends the count still waiting when the plugin dies, before the session is closed', async () => {
    const { session, told, processes } = await published('stdout-flood');
    expect((await session.callTool('echo', { message: 'one' }))._unsafeUnwrap().isError).toBe(false);
    expect(told).toHaveLength(BURST);
    const plugin = processes[0];
    if (plugin === undefined) throw new Error('no process');
    process.kill(plugin.pid, 'SIGKILL');
    await plugin.exited;
    await expect.poll(() => told.length, { timeout: 10_000 }).toBe(BURST + 1);
    expect(told[BURST]).toEqual({ line: '', suppressed: FLOOD + 3 - BURST });
  });

  it('reports each line of a server that prints a banner, a log line and a line per call, with no summary', async () => {
    const { session, records, told } = await published('');
    expect((await session.callTool('echo', { message: 'one' }))._unsafeUnwrap().isError).toBe(false);
    expect((await session.callTool('echo', { message: 'two' }))._unsafeUnwrap().isError).toBe(false);
    await session.close();
    expect(told).toEqual([
      { line: 'host-published 1.0.0 starting (this banner goes to stdout)' },
      { line: '{"level":"info","msg":"a JSON log line that is not JSON-RPC"}' },
      { line: 'echo called with 3 characters' },
      { line: 'echo called with 3 characters' },
    ]);
    expect(stdoutRecords(records).map((r) => r.fields.details)).toEqual(told.map((t) => ({ line_excerpt: t.line })));
  });
});
