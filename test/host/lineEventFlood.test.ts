/**
 * Host events a plugin causes a line or a message at a time (session 35,
 * M2): each stderr line was a `stderr` event and each MCP
 * `notifications/message` a `log` event, without bound. A budget per plugin
 * process (etc/plugin-line-events.json) lets a burst through one by one and
 * counts the rest into a summary. The host's clock is stopped, so no token
 * comes back during a test and the one summary is the one flushed when the
 * process ends.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import lineEvents from '../../etc/plugin-line-events.json' with { type: 'json' };
import type { HostEventMap } from '../../src/events/HostEvents.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { stoppedClock } from '../support/clocks.js';
import { HostPool, removePackages, textOf } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const ID = 'host-published';
const ECHO = `plug.${ID}.echo`;
/** The lines or messages host-published writes in its flood modes. */
const FLOOD = 20_000;

/** A host with host-published installed, in `mode`, on a stopped clock. */
async function publishedIn(mode: string): Promise<PluginHost> {
  const profile = await pool.profile();
  const dataDir = join(profile, 'data', ID);
  await mkdir(dataDir, { recursive: true });
  await writeFile(join(dataDir, 'mode'), mode);
  return pool.installed(profile, ['published'], { clock: stoppedClock(Date.UTC(2026, 10, 28)) });
}

function record<E extends keyof HostEventMap>(host: PluginHost, event: E): HostEventMap[E][] {
  const seen: HostEventMap[E][] = [];
  host.events.on(event, (payload) => seen.push(payload));
  return seen;
}

describe('stderr lines', () => {
  it('reports a flood of 20,000 lines as a burst of stderr events and one summary with the count of the rest, before exit', async () => {
    const host = await publishedIn('stderr-flood');
    const order: string[] = [];
    const stderr = record(host, 'stderr');
    host.events.on('stderr', (e) => order.push(e.suppressed === undefined ? 'line' : 'summary'));
    host.events.on('exit', () => order.push('exit'));
    expect(textOf((await host.call(ECHO, { message: 'one' }))._unsafeUnwrap())).toBe('echo: one');
    await host.close();

    const burst = lineEvents.stderr.burst;
    expect(stderr).toHaveLength(burst + 1);
    expect(stderr[0]?.line).toMatch(/^host-published-started \d+$/);
    expect(stderr[1]).toEqual({ plugin_id: ID, line: 'stderr flood line 1' });
    expect(stderr.slice(0, burst).every((e) => e.suppressed === undefined)).toBe(true);
    // Its first line and the flood: every line is an event or counted in the summary.
    expect(stderr[burst]).toEqual({ plugin_id: ID, line: '', suppressed: FLOOD + 1 - burst });
    expect(order.slice(-2)).toEqual(['summary', 'exit']);
  });

  it('reports every line of a plugin that writes a few, with no summary', async () => {
    const host = await publishedIn('');
    const stderr = record(host, 'stderr');
    expect(textOf((await host.call(ECHO, { message: 'one' }))._unsafeUnwrap())).toBe('echo: one');
    await host.close();
    expect(stderr).toEqual([{ plugin_id: ID, line: expect.stringMatching(/^host-published-started \d+$/) }]);
  });
});

describe('MCP log messages', () => {
  it('reports a flood of 20,000 log messages as a burst of log events and one summary at the most severe level, and still answers', async () => {
    const host = await publishedIn('log-flood');
    const logs = record(host, 'log');
    // The plugin writes its messages before the answer: all were read when it comes.
    expect(textOf((await host.call(ECHO, { message: 'one' }))._unsafeUnwrap())).toBe('echo: one');
    const burst = lineEvents.mcpLog.burst;
    expect(logs).toHaveLength(burst);
    await host.close();

    expect(logs).toHaveLength(burst + 1);
    expect(logs[0]).toEqual({ plugin_id: ID, level: 'info', logger: 'flood', data: 'log flood message 1' });
    expect(logs.slice(0, burst).every((e) => e.suppressed === undefined)).toBe(true);
    const summary = logs[burst];
    expect(summary).toMatchObject({ plugin_id: ID, level: 'error', suppressed: FLOOD - burst });
    expect(summary?.logger).toBeUndefined();
    expect(summary?.data).toEqual(expect.stringContaining(`${FLOOD - burst} more log messages`));
  });
});
