/**
 * What another process does to a profile reaches a host opened WITHOUT
 * hotReload: a plugin the CLI (a real subprocess) or a second host removes,
 * quarantines or upgrades is refused by the open host from its next call on,
 * and its running process there is drained and stopped, with no call at all
 * within the host's catalog poll, and the application is told what changed
 * (`catalog:changed`, in this restart mode too). Real sandboxed plugin
 * processes; "gone" is checked on the pid the host spawned and on every
 * process of the machine that still names the profile directory.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { updatePluginState } from '../../src/catalog/catalogContents.js';
import { CatalogStore } from '../../src/catalog/CatalogStore.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { cli } from '../cli/cliHarness.js';
import { answered, HostPool, jsonOf, nextEvent, packagedVersion, probeEchoInFlight, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterAll(async () => {
  await pool.cleanup();
  await removePackages();
});

const ECHO = 'plug.host-probe.echo';

/**
 * Calls the probe's echo on `host` (profile `dir`), which starts it, and
 * returns the pid of the process the host spawned for it, which names the
 * profile directory on its command line (what {@link stopped} looks for).
 */
async function runningProbe(host: PluginHost, dir: string): Promise<number> {
  const spawned = nextEvent(host, 'spawn');
  expect(jsonOf(answered(await host.call(ECHO, { message: 'hello' })))).toMatchObject({ success: true });
  const { pid } = await spawned;
  expect(await processesNaming(dir)).toContain(pid);
  return pid;
}

/** Whether a process with this pid exists (a zombie counts: it was not reaped). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** The pids of every process whose command line names `dir` (a plugin's sandbox names its install root and data directory). */
async function processesNaming(dir: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').some((arg) => arg.includes(dir))) found.push(Number(entry));
  }
  return found;
}

/** Waits for the host's `exit` event of `pid`, then checks that nothing of the plugin is left on the machine. */
async function stopped(host: PluginHost, pid: number, dir: string): Promise<void> {
  await new Promise<void>((resolve) => {
    const off = host.events.on('exit', (e) => {
      if (e.pid !== pid) return;
      off();
      resolve();
    });
    if (!alive(pid)) {
      off();
      resolve();
    }
  });
  expect(alive(pid)).toBe(false);
  expect(await processesNaming(dir)).toEqual([]);
}

describe('a host without hotReload follows what other processes do to its profile', () => {
  it('the CLI quarantines a plugin: the next call is refused, and its process is stopped', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const pid = await runningProbe(host, dir);
    const changed = nextEvent(host, 'catalog:changed');

    const run = await cli(['quarantine', 'host-probe', '--profile-dir', dir, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, plugin_id: 'host-probe', quarantined: true });
    expect(await changed).toMatchObject({ installed: [], removed: [], upgraded: [], quarantined: ['host-probe'] });

    const refused = (await host.call(ECHO, { message: 'after' }))._unsafeUnwrapErr();
    expect([refused.code, refused.details.reason, refused.details.permanent]).toEqual(['VARIANT_QUARANTINED', 'operator', true]);
    expect(refused.hint).toMatch(/unquarantine/);
    await stopped(host, pid, dir);
    expect((await host.info('host-probe'))._unsafeUnwrap().status).toBe('quarantined');

    // Lifted by the CLI: the same host starts the plugin again at its next call.
    expect((await cli(['unquarantine', 'host-probe', '--profile-dir', dir, '--json'])).code).toBe(0);
    expect(await runningProbe(host, dir)).not.toBe(pid);
  });

  it('another host quarantines a plugin: without any call the process drains its call in flight, then stops within the poll', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const other = await pool.open(dir);
    const pid = await runningProbe(host, dir);
    const { call } = await probeEchoInFlight(host, 1500, 'call:start');
    const changed = nextEvent(host, 'catalog:changed');

    answered(await other.quarantine('host-probe'));
    // Without any call here: the poll saw it.
    expect(await changed).toMatchObject({ quarantined: ['host-probe'] });
    // The call in flight finishes on the old process (the drain), and the process stops without another call here.
    expect(jsonOf(answered(await call))).toMatchObject({ success: true, data: { args: { message: 'in flight' } } });
    await stopped(host, pid, dir);
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');
  });

  it("another process holds a plugin this host had in backoff, keeping this host's quarantine time: the process here drains and stops", { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    // A 1 ms backoff: the crash's quarantine is this host's own, and its next call may start the plugin again at once.
    const host = await pool.installed(dir, ['probe'], { backoffScheduleMs: [1, 1, 1] });
    const home = join(dir, 'data', 'host-probe');
    await mkdir(home, { recursive: true });
    await writeFile(join(home, 'mode'), 'exit-on-start');
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).not.toBe('VARIANT_QUARANTINED');
    const own = (await host.info('host-probe'))._unsafeUnwrap();
    expect(own.quarantined_at).not.toBeNull();
    await rm(join(home, 'mode'));

    // Started again inside the backoff's quarantine (its retry time passed); the call holds it running.
    const spawned = nextEvent(host, 'spawn');
    const { call } = await probeEchoInFlight(host, 1500, 'spawn');
    const { pid } = await spawned;
    const changed = nextEvent(host, 'catalog:changed');
    // Another process's failed canary holds it: the quarantine time stays this host's (as canaryHold keeps it), no retry.
    const other = (await CatalogStore.open({ profileDir: dir, profile: 'default' }))._unsafeUnwrap();
    const held = await other.transaction((c) => updatePluginState(c, 'host-probe', (row) => ({ ...row, quarantine_reason: 'canary_failed', next_retry_at: null })));
    expect(held._unsafeUnwrap().contents.states['host-probe']!.quarantined_at).toBe(own.quarantined_at);

    expect(await changed).toMatchObject({ quarantined: ['host-probe'] });
    expect(jsonOf(answered(await call))).toMatchObject({ success: true, data: { args: { message: 'in flight' } } });
    await stopped(host, pid, dir);
    expect((await host.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');
  });

  it('the CLI removes a plugin: the next call finds no such operation, and its process is stopped', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const pid = await runningProbe(host, dir);
    const changed = nextEvent(host, 'catalog:changed');

    const run = await cli(['remove', 'host-probe', '--yes', '--profile-dir', dir, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(await changed).toMatchObject({ installed: [], removed: ['host-probe'], upgraded: [], quarantined: [] });

    const refused = (await host.call(ECHO, { message: 'after' }))._unsafeUnwrapErr();
    expect(refused.code).toBe('VARIANT_NOT_FOUND');
    expect(refused.hint).not.toBe('');
    await stopped(host, pid, dir);
    expect((await host.info('host-probe'))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
  });

  it('another host upgrades a plugin: pending restart here (seed 001), the old process stops, a new host runs the new version', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const pid = await runningProbe(host, dir);

    const upgrader = await pool.open(dir);
    const upgraded = answered(await upgrader.install(await packagedVersion('probe', '1.1.0'), { canary: false }));
    expect(upgraded.plugin.version).toBe('1.1.0');

    const refused = (await host.call(ECHO, { message: 'after' }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_PENDING_RESTART');
    await stopped(host, pid, dir);
    expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({ version: '1.1.0', status: 'installed_pending_restart' });

    await host.close();
    const reopened = await pool.open(dir);
    expect((await reopened.info('host-probe'))._unsafeUnwrap()).toMatchObject({ version: '1.1.0', status: 'active' });
    await runningProbe(reopened, dir);
  });
});
