/**
 * Crash supervision through PluginHost with real sandboxed processes and a
 * fake clock: the whole backoff ladder, permanent quarantine, persistence
 * across host restarts, recovery, unquarantine, reload, tampered executables.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { existsSync, writeFileSync } from 'node:fs';
import { appendFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { FakeClock, HostPool, jsonOf, packagedVersion, removePackages } from '../support/hostHarness.js';
import { readStateRow } from '../support/pluginState.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const ECHO = 'plug.host-probe.echo';

/** Makes the installed probe exit at start (or behave) without touching its pinned executable. */
async function setMode(profileDir: string, mode: 'exit-on-start' | 'extra-tool' | 'normal'): Promise<void> {
  const dataDir = join(profileDir, 'data', 'host-probe');
  await mkdir(dataDir, { recursive: true });
  if (mode === 'normal') await rm(join(dataDir, 'mode'), { force: true });
  else await writeFile(join(dataDir, 'mode'), mode);
}

const stateRow = (profileDir: string): Promise<Record<string, unknown>> => readStateRow(profileDir, 'host-probe');

function record(host: PluginHost): { spawns: number; quarantine: HostEventMap['quarantine'][]; crashes: HostEventMap['crash'][] } {
  const seen = { spawns: 0, quarantine: [] as HostEventMap['quarantine'][], crashes: [] as HostEventMap['crash'][] };
  host.events.on('spawn', () => seen.spawns++);
  host.events.on('quarantine', (e) => seen.quarantine.push(e));
  host.events.on('crash', (e) => seen.crashes.push(e));
  return seen;
}

/** GUM spec §8.6, written out here so a change to the code's constant cannot move the expectation with it. */
const CONTRACT_WAITS_MS = [30_000, 60_000, 120_000, 240_000, 480_000];

describe('the crash backoff ladder', () => {
  it('waits 30, 60, 120, 240 and 480 s between attempts, then quarantines for good until unquarantine; the state survives a restart', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    let host = await pool.installed(dir, ['probe'], { clock });
    await setMode(dir, 'exit-on-start');
    const seen = record(host);
    const firstFailureAt = clock.now();

    const first = (await host.call(ECHO, {}))._unsafeUnwrapErr();
    expect(['PLUGIN_CRASHED', 'PLUGIN_HANDSHAKE_FAILED']).toContain(first.code);
    expect(seen.spawns).toBe(1);

    for (const [step, wait] of CONTRACT_WAITS_MS.entries()) {
      const failures = step + 1;
      const row = await stateRow(dir);
      expect(row).toMatchObject({
        status: 'quarantined',
        retry_count: failures,
        next_retry_at: new Date(clock.now() + wait).toISOString(),
        quarantined_at: new Date(firstFailureAt).toISOString(),
        last_error_code: first.code,
        quarantine_reason: 'crash',
        permanent_quarantine: false,
      });
      const refused = (await host.call(ECHO, {}))._unsafeUnwrapErr();
      expect(refused).toMatchObject({ code: 'VARIANT_QUARANTINED', retryable: true, retry_after_ms: wait });
      clock.advance(wait - 1);
      expect((await host.call(ECHO, {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retry_after_ms: 1 });
      expect(seen.spawns).toBe(failures);
      clock.advance(1);
      expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).toBe(first.code);
      expect(seen.spawns).toBe(failures + 1);
    }

    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', retry_count: 6, permanent_quarantine: true, next_retry_at: null });
    expect(seen.quarantine.map((e) => [e.retry_count, e.permanent])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [4, false],
      [5, false],
      [6, true],
    ]);
    expect(seen.crashes).toHaveLength(6);
    clock.advance(365 * 86_400_000);
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retryable: false, details: { permanent: true } });

    // A new host on the profile (a restart) reads the same state.
    await host.close();
    host = await pool.open(dir, { clock });
    expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({
      status: 'quarantined',
      reason: 'crash (until unquarantined)',
      quarantined_at: new Date(firstFailureAt).toISOString(),
      last_error_code: first.code,
    });
    expect((await host.list())._unsafeUnwrap()[0]?.status).toBe('quarantined');
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');

    await setMode(dir, 'normal');
    expect((await host.unquarantine('host-probe')).isOk()).toBe(true);
    expect(await stateRow(dir)).toMatchObject({ status: 'active', retry_count: 0, quarantined_at: null, next_retry_at: null, permanent_quarantine: false });
    expect(jsonOf((await host.call(ECHO, { message: 'back' }))._unsafeUnwrap())).toMatchObject({ success: true });
  });

  it('keeps a backoff window across a host restart and clears the history after a successful start', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const first = await pool.installed(dir, ['probe'], { clock });
    await setMode(dir, 'exit-on-start');
    expect((await first.call(ECHO, {})).isErr()).toBe(true);
    clock.advance(30_000);
    expect((await first.call(ECHO, {})).isErr()).toBe(true);
    await first.close();

    const host = await pool.open(dir, { clock });
    const seen = record(host);
    clock.advance(59_000);
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retry_after_ms: 1_000 });
    expect(seen.spawns).toBe(0);
    await setMode(dir, 'normal');
    clock.advance(1_000);
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
    expect(await stateRow(dir)).toMatchObject({ status: 'active', retry_count: 0, quarantined_at: null, last_error_code: null });
    expect(seen.quarantine).toEqual([{ plugin_id: 'host-probe', quarantined: false, permanent: false, retry_count: 0 }]);

    // The ladder starts from the bottom again.
    await setMode(dir, 'exit-on-start');
    await host.reload('host-probe'); // a failed reload canary holds it; unquarantine to test the ladder alone
    await host.unquarantine('host-probe');
    expect((await host.call(ECHO, {})).isErr()).toBe(true);
    expect(await stateRow(dir)).toMatchObject({ retry_count: 1, next_retry_at: new Date(clock.now() + 30_000).toISOString() });
  });

  it('counts a crash that fails several calls in flight as one failure, with the stderr tail', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock });
    const seen = record(host);
    const published: unknown[] = [];
    const onPublish = (message: unknown): void => void published.push(message);
    diagnostics_channel.subscribe('mcp-plugin-host:crash', onPublish);
    diagnostics_channel.subscribe('mcp-plugin-host:quarantine', onPublish);
    const slow = [host.call(ECHO, { delayMs: 10_000 }), host.call(ECHO, { delayMs: 10_000 })];
    await new Promise((r) => setTimeout(r, 300));
    const crashed = await host.call('plug.host-probe.crash', {});
    const results = [crashed, ...(await Promise.all(slow))];
    diagnostics_channel.unsubscribe('mcp-plugin-host:crash', onPublish);
    diagnostics_channel.unsubscribe('mcp-plugin-host:quarantine', onPublish);
    expect(published).toEqual([...seen.crashes, ...seen.quarantine]);
    expect(seen.quarantine).toEqual([{ plugin_id: 'host-probe', quarantined: true, permanent: false, retry_count: 1, next_retry_at: clock.now() + 30_000 }]);
    for (const r of results) expect(r._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');
    expect(crashed._unsafeUnwrapErr().details.stderr_tail).toContain('crashing on request');
    expect(seen.crashes).toHaveLength(1);
    expect(seen.crashes[0]).toMatchObject({ plugin_id: 'host-probe', code: 'PLUGIN_CRASHED', stderr_tail: expect.stringContaining('crashing on request') });
    expect(await stateRow(dir)).toMatchObject({ retry_count: 1, last_error_code: 'PLUGIN_CRASHED' });
  });

  it('counts a tool list that differs from the manifest as a failure', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock });
    await setMode(dir, 'extra-tool');
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', retry_count: 1, last_error_code: 'PLUGIN_TOOLS_MISMATCH' });
  });
});

describe('executable binding', () => {
  it('re-verifies on every spawn: a tampered executable is refused with PLUGIN_EXECUTABLE_UNTRUSTED and quarantined for good', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock, idleTimeoutMs: 1_000 });
    const seen = record(host);
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
    clock.advance(1_000); // idle stop: the next call spawns again

    const info = (await host.info('host-probe'))._unsafeUnwrap();
    const executable = join(info.executable.install_root, info.executable.path);
    const original = await readFile(executable);
    await appendFile(executable, '\n// tampered\n');
    const refused = (await host.call(ECHO, {}))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch' } });
    expect(seen.spawns).toBe(1);
    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', permanent_quarantine: true, quarantine_reason: 'digest_mismatch', last_error_code: 'PLUGIN_EXECUTABLE_UNTRUSTED' });
    clock.advance(86_400_000);
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retryable: false });
    expect((await host.canary('host-probe'))._unsafeUnwrapErr().code).toBe('PLUGIN_QUARANTINED');

    // Unquarantine alone does not make tampered bytes trusted.
    await host.unquarantine('host-probe');
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
    await writeFile(executable, original);
    await host.unquarantine('host-probe');
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
    expect(seen.spawns).toBe(2);
  });
});

describe('a failure whose cause is changed code', () => {
  it('quarantines for good at once when the executable changed on disk before a crash', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock });
    const seen = record(host);
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
    const info = (await host.info('host-probe'))._unsafeUnwrap();
    await appendFile(join(info.executable.install_root, info.executable.path), '\n// tampered\n');

    expect((await host.call('plug.host-probe.crash', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');
    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', permanent_quarantine: true, quarantine_reason: 'digest_mismatch', last_error_code: 'PLUGIN_EXECUTABLE_UNTRUSTED' });
    expect(seen.quarantine).toEqual([{ plugin_id: 'host-probe', quarantined: true, permanent: true, retry_count: 1 }]);
  });

  it('a Node plugin whose script is swapped after the host verified it runs the verified bytes, and its next start is refused for good', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const spawner = (await SandboxSpawner.create())._unsafeUnwrap();
    const host = await pool.installed(dir, ['probe'], { clock, spawner });
    const info = (await host.info('host-probe'))._unsafeUnwrap();
    const script = join(info.executable.install_root, info.executable.path);
    // The plugin's own writable directory, so that the swapped code could leave its mark if it ever ran.
    await setMode(dir, 'normal');
    const marker = join(dir, 'data', 'host-probe', 'swapped-code-ran');
    const spawn = spawner.spawn.bind(spawner);
    // The window: the host has verified the file and checked its tree (the spawn's gate), and is about to release it.
    spawner.spawn = (request) =>
      spawn({
        ...request,
        gate: () =>
          request.gate!().map(() => {
            writeFileSync(script, `#!/usr/bin/env node\nimport { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\n`);
          }),
      });

    // Under bubblewrap the sandbox mounts the verified private copy over the script's path: what runs is what was verified.
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
    expect(existsSync(marker)).toBe(false);
    await host.close();

    // The changed file is on disk now: the next start's tree check refuses it, for good.
    const next = await pool.open(dir, { clock: new FakeClock() });
    const refused = (await next.call(ECHO, {}))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch', file: info.executable.path } });
    expect(existsSync(marker)).toBe(false);
    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', permanent_quarantine: true, quarantine_reason: 'digest_mismatch', last_error_code: 'PLUGIN_EXECUTABLE_UNTRUSTED' });
  });

  it('a Node plugin whose script is swapped while its sandbox is set up is refused by the tree check before any of it runs', async () => {
    const dir = await pool.profile();
    const spawner = (await SandboxSpawner.create())._unsafeUnwrap();
    const host = await pool.installed(dir, ['probe'], { clock: new FakeClock(), spawner });
    const info = (await host.info('host-probe'))._unsafeUnwrap();
    const script = join(info.executable.install_root, info.executable.path);
    await setMode(dir, 'normal');
    // The swapped code's first statement leaves a mark in the plugin's own writable directory.
    const marker = join(dir, 'data', 'host-probe', 'swapped-code-ran');
    const spawn = spawner.spawn.bind(spawner);
    // The main file is verified and copied; the launcher starts while the rest of the tree is being checked.
    spawner.spawn = (request) => {
      writeFileSync(script, `#!/usr/bin/env node\nimport { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\n`);
      return spawn(request);
    };

    const refused = (await host.call(ECHO, {}))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch', file: info.executable.path, quarantine: true } });
    expect(existsSync(marker)).toBe(false);
    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', permanent_quarantine: true, quarantine_reason: 'digest_mismatch', last_error_code: 'PLUGIN_EXECUTABLE_UNTRUSTED' });
  });

  it('does not blame a new install for the old version, upgraded by another host and its files deleted: the old process stops', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock });
    const seen = record(host);
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
    const oldRoot = (await host.info('host-probe'))._unsafeUnwrap().executable.install_root;

    // Another host (another process) upgrades the plugin while the old version runs here.
    const other = await pool.open(dir, { clock });
    expect((await other.install(await packagedVersion('probe', '1.1.0'), { canary: false })).isOk()).toBe(true);
    const newRoot = (await other.info('host-probe'))._unsafeUnwrap().executable.install_root;
    expect(newRoot).not.toBe(oldRoot);
    expect(existsSync(oldRoot)).toBe(false);

    // The old version no longer runs a call here (the upgrade is pending restart, seed 001): its process is stopped,
    // and what it did is not the new install's: the new one's row is left as it was, neither held for good nor backed off.
    expect((await host.call('plug.host-probe.crash', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_PENDING_RESTART');
    expect(await stateRow(dir)).toMatchObject({ quarantined_at: null, last_error_code: null, retry_count: 0 });
    expect(seen.quarantine).toEqual([]);

    const next = await pool.open(dir, { clock });
    expect(jsonOf((await next.call(ECHO, {}))._unsafeUnwrap())).toMatchObject({ success: true });
  });
});

describe('reload', () => {
  it('clears quarantine and runs a passive canary; a failing one holds the plugin until a canary passes', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock });
    await setMode(dir, 'exit-on-start');
    expect((await host.call(ECHO, {})).isErr()).toBe(true);

    const failed = (await host.reload('host-probe'))._unsafeUnwrap();
    expect(failed).toMatchObject({ plugin_id: 'host-probe', mode: 'passive', status: 'failed' });
    expect(await stateRow(dir)).toMatchObject({
      status: 'quarantined',
      quarantine_reason: 'canary_failed',
      next_retry_at: null,
      permanent_quarantine: false,
      retry_count: 0,
      canary: { status: 'failed', consecutive_failures: 1 },
    });
    // A held plugin is not retried automatically, however long it waits.
    await setMode(dir, 'normal');
    clock.advance(7 * 86_400_000);
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', details: { reason: 'canary_failed' } });
    expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({ status: 'quarantined', reason: 'canary_failed' });

    const passed = (await host.canary('host-probe'))._unsafeUnwrap();
    expect(passed).toEqual({ plugin_id: 'host-probe', mode: 'passive', status: 'passed' });
    expect(await stateRow(dir)).toMatchObject({ status: 'active', quarantined_at: null, canary: { status: 'passed', consecutive_failures: 0 } });
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
  });

  it('brings a permanently quarantined plugin back once it starts again', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe'], { clock, backoffScheduleMs: [1_000] });
    await setMode(dir, 'exit-on-start');
    expect((await host.call(ECHO, {})).isErr()).toBe(true);
    clock.advance(1_000);
    expect((await host.call(ECHO, {})).isErr()).toBe(true);
    expect(await stateRow(dir)).toMatchObject({ retry_count: 2, permanent_quarantine: true });
    await setMode(dir, 'normal');
    expect((await host.reload('host-probe'))._unsafeUnwrap().status).toBe('passed');
    expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({ status: 'active', reason: null, quarantined_at: null });
    expect((await host.call(ECHO, {})).isOk()).toBe(true);
  });
});
