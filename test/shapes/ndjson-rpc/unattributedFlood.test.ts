/**
 * A plugin that floods stdout with lines no request owns cannot flood the host's log: past a burst per process and
 * kind (etc/ndjson-rpc.json) the warnings are counted, and one summary says how many, at the latest when the process
 * ends. A real plugin process writes the lines; only time is a fake that never moves, so no summary comes from a timer
 * and the counts are exact.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import ndjsonSettings from '../../../etc/ndjson-rpc.json' with { type: 'json' };
import type { Clock } from '../../../src/ports/ports.js';
import { NdjsonRpcSession } from '../../../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import { recordingLogger, trackLaunches } from '../../support/launchTracker.js';
import { nodeArgv, plainLauncher } from '../../support/plainLauncher.js';

const ECHO_MJS = fileURLToPath(new URL('../../../fixtures/plugins/ndjson-echo/echo.mjs', import.meta.url));
const BURST = ndjsonSettings.unattributedWarningsBurst;

/** Time that stands still: timers are kept, never run. */
const stoppedClock: Clock = { now: () => 1_800_000_000_000, setTimer: () => () => undefined };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

describe('ndjson-rpc warnings for lines no request owns', { timeout: 60_000 }, () => {
  it('logs a burst of them one by one, then one summary with the count of the rest when the plugin exits', async () => {
    const N = 20_000;
    const tracker = trackLaunches(plainLauncher(nodeArgv(ECHO_MJS), { env: { ECHO_MODE: 'flood-exit', ECHO_FLOOD_LINES: String(N) } }));
    const logger = recordingLogger();
    const session = NdjsonRpcSession.create({ launch: tracker.launch, callTimeoutMs: 15_000, clock: stoppedClock, logger })._unsafeUnwrap();
    cleanups.push(async () => {
      await session.close();
      await tracker.stopAll();
    });
    expect((await session.callTool('echo', 'a'))._unsafeUnwrap()).toEqual({ isError: false, value: 'a' });
    // The plugin exits once it wrote the flood; the host logs the crash after the last line.
    for (let waited = 0; !logger.records.some((r) => r.message === 'ndjson-rpc: plugin crashed') && waited < 30_000; waited += 20) await sleep(20);

    const crash = logger.records.findIndex((r) => r.message === 'ndjson-rpc: plugin crashed');
    expect(crash).toBeGreaterThan(0);
    const flood = logger.records.filter((r) => r.fields.code === 'PLUGIN_INVALID_JSON');
    const single = flood.filter((r) => r.fields.suppressed === undefined);
    const summaries = flood.filter((r) => r.fields.suppressed !== undefined);
    expect(single).toHaveLength(BURST);
    expect(single.every((r) => r.level === 'warn' && String(r.fields.raw_line).startsWith('not json'))).toBe(true);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ level: 'warn', fields: { code: 'PLUGIN_INVALID_JSON', suppressed: N - BURST } });
    expect(summaries[0]?.message).toMatch(new RegExp(`${N - BURST} more lines`));
    // The summary comes before the crash it preceded, and nothing of the flood after it.
    expect(logger.records.indexOf(summaries[0]!)).toBeLessThan(crash);
    expect(logger.records.length).toBeLessThan(BURST + 10);
  });
});
