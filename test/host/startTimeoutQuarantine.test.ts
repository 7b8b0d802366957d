/**
 * Attack review: a plugin that answers `initialize` but never `tools/list`
 * failed every start on the startup timeout (PLUGIN_TIMEOUT) and was never
 * put on the backoff ladder, so each call paid a fresh sandboxed process and
 * a full startup wait. A start that times out counts as a failed start, as
 * a crash at start does, on each way a start is checked: the first
 * `tools/list` inside the start, the one beside the first call of a start
 * that trusted a recorded list, a start every waiting caller left, and a
 * start by `tools()`. A
 * tool call's own timeout still costs the plugin nothing. Real sandboxed
 * probe plugin, fake clock for the backoff windows.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeClock, HostPool, jsonOf, removePackages } from '../support/hostHarness.js';
import { waitUntil } from '../support/eventually.js';
import { readStateRow } from '../support/pluginState.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const ECHO = 'plug.host-probe.echo';
const STARTUP_TIMEOUT_MS = 1_000;
/** GUM spec §8.6's first three waits, written out so a change to the code's ladder cannot move the expectation. */
const FIRST_WAITS_MS = [30_000, 60_000, 120_000];

async function setMode(profileDir: string, mode: 'stall-tools-list' | 'normal'): Promise<void> {
  const dataDir = join(profileDir, 'data', 'host-probe');
  await mkdir(dataDir, { recursive: true });
  if (mode === 'normal') await rm(join(dataDir, 'mode'), { force: true });
  else await writeFile(join(dataDir, 'mode'), mode);
}

describe('a start that times out', () => {
  it('counts toward quarantine on every start path, and a tool call timeout does not', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock, startupTimeoutMs: STARTUP_TIMEOUT_MS });
    let spawns = 0;
    host.events.on('spawn', () => spawns++);

    // A healthy start records the tool list; a slow tool call is the call's failure, not the plugin's.
    expect(jsonOf((await host.call(ECHO, { message: 'up' }))._unsafeUnwrap())).toMatchObject({ success: true });
    const slowCall = host.call(ECHO, { delayMs: 5_000 }, { timeoutMs: 200 });
    let settled = false;
    void slowCall.then(() => (settled = true));
    // Call timeouts run on the host's (fake) clock: move it on until the call's timer fired.
    while (!settled) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      clock.advance(100);
    }
    const slow = (await slowCall)._unsafeUnwrapErr();
    expect(slow).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { phase: 'tools/call' } });
    expect(await readStateRow(dir, 'host-probe')).toMatchObject({ status: 'active', retry_count: 0 });

    // Started again from here on, the probe never answers tools/list.
    await setMode(dir, 'stall-tools-list');
    (await host.unquarantine('host-probe'))._unsafeUnwrap();

    // The recorded list lets the call go right after initialize; the tools/list beside it times out.
    const besideCall = (await host.call(ECHO, {}))._unsafeUnwrapErr();
    expect(besideCall).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { phase: 'tools/list' } });
    expect(await readStateRow(dir, 'host-probe')).toMatchObject({ status: 'quarantined', retry_count: 1, last_error_code: 'PLUGIN_TIMEOUT' });
    const spawnsBefore = spawns;
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retry_after_ms: FIRST_WAITS_MS[0] });
    expect(spawns).toBe(spawnsBefore);

    // The failed check dropped the record: the next start lists its tools before any call, and times out there.
    clock.advance(FIRST_WAITS_MS[0]!);
    const inStart = (await host.call(ECHO, {}))._unsafeUnwrapErr();
    expect(inStart).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { phase: 'tools/list' } });
    expect(await readStateRow(dir, 'host-probe')).toMatchObject({ status: 'quarantined', retry_count: 2 });

    // A caller that gives up before the start does: the start still fails on its own time, and counts.
    clock.advance(FIRST_WAITS_MS[1]!);
    const leftEarly = (await host.call(ECHO, {}, { signal: AbortSignal.timeout(100) }))._unsafeUnwrapErr();
    expect(leftEarly.code).toBe('PLUGIN_CANCELLED');
    await waitUntil(async () => (await readStateRow(dir, 'host-probe')).retry_count === 3);

    // tools() starts the plugin as a call does, and its failed start counts the same.
    clock.advance(FIRST_WAITS_MS[2]!);
    expect((await host.tools('host-probe'))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { phase: 'tools/list' } });
    expect(await readStateRow(dir, 'host-probe')).toMatchObject({ status: 'quarantined', retry_count: 4 });
    expect((await host.tools('host-probe'))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');

    await setMode(dir, 'normal');
    (await host.unquarantine('host-probe'))._unsafeUnwrap();
    expect(jsonOf((await host.call(ECHO, { message: 'back' }))._unsafeUnwrap())).toMatchObject({ success: true });
  });
});
