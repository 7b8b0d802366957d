/**
 * PluginHost end to end with real sandboxed processes: restart semantics,
 * op ids, risk and confirmation, error mapping, events, idle stop, close.
 */
import { createHash } from 'node:crypto';
import diagnostics_channel from 'node:diagnostics_channel';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { PluginHost, type ConfirmationRequest } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { FakeClock, HostPool, jsonOf, packaged, packagedVersion, removePackages } from '../support/hostHarness.js';
import { processesWith } from '../support/processes.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const stateFile = async (profileDir: string): Promise<{ plugins: Record<string, Record<string, unknown>> }> =>
  JSON.parse(await readFile(join(profileDir, 'plugin-state.json'), 'utf8'));

describe('restart semantics', () => {
  it('keeps a plugin installed while a host is open inventory-only until a host opens after the install', async () => {
    const dir = await pool.profile();
    const running = await pool.open(dir);
    const installed = (await running.install(await packaged('probe')))._unsafeUnwrap();
    expect(installed.plugin.status).toBe('installed_pending_restart');
    expect(installed.plugin.activated_at).toBeNull();
    expect((await stateFile(dir)).plugins['host-probe']).toMatchObject({ status: 'installed_pending_restart', activated_at: null });

    const refused = await running.call('plug.host-probe.echo', {});
    expect(refused._unsafeUnwrapErr().code).toBe('PLUGIN_PENDING_RESTART');
    expect((await running.list())._unsafeUnwrap().map((r) => [r.name, r.status])).toEqual([['host-probe', 'installed_pending_restart']]);

    // Another host (as another process would) opened after the install sees it active; the first still does not.
    const next = await pool.open(dir);
    expect((await next.info('host-probe'))._unsafeUnwrap().status).toBe('active');
    expect(jsonOf((await next.call('plug.host-probe.echo', { message: 'hi' }))._unsafeUnwrap())).toMatchObject({ success: true, data: { args: { message: 'hi' } } });
    expect((await stateFile(dir)).plugins['host-probe']).toMatchObject({ status: 'active' });
    expect((await stateFile(dir)).plugins['host-probe']!.activated_at).toEqual(expect.any(String));
    expect((await running.call('plug.host-probe.echo', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_PENDING_RESTART');
  });

  it("makes an install callable at once with activation: 'immediate'", async () => {
    const dir = await pool.profile();
    const host = await pool.open(dir, { activation: 'immediate' });
    const installed = (await host.install(await packaged('probe')))._unsafeUnwrap();
    expect(installed.plugin.status).toBe('active');
    expect(installed.plugin.activated_at).toEqual(expect.any(String));
    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
  });

  it('treats an upgrade installed while open as pending, and stops the old version', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const spawns: number[] = [];
    host.events.on('spawn', (e) => spawns.push(e.pid));
    const exits: number[] = [];
    host.events.on('exit', (e) => exits.push(e.pid));
    // Events are subscribe-only: the host alone emits.
    expect('emit' in host.events).toBe(false);
    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
    expect((await host.install(await packagedVersion('probe', '1.1.0'))).isOk()).toBe(true);
    await waitUntil(() => exits.length === 1);
    expect(exits).toEqual(spawns);
    expect((await host.call('plug.host-probe.echo', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_PENDING_RESTART');
  });
});

describe('operation ids', () => {
  it('answers VARIANT_NOT_FOUND for anything that is not an installed plug.<plugin_id>.<tool>', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    for (const opId of ['plug.host-probe.nope', 'plug.nobody.echo', 'host-probe.echo', 'echo', 'plug.host-probe.', 'plug.Host-Probe.echo']) {
      expect((await host.call(opId, {}))._unsafeUnwrapErr().code, opId).toBe('VARIANT_NOT_FOUND');
    }
  });

  it('lists every operation with its callable id in info()', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const info = (await host.info('host-probe'))._unsafeUnwrap();
    expect(info.operations.map((o) => o.op_id)).toEqual([
      'plug.host-probe.echo',
      'plug.host-probe.crash',
      'plug.host-probe.env',
      'plug.host-probe.read_path',
      'plug.host-probe.fail',
      'plug.host-probe.write_note',
      'plug.host-probe.rename_note',
      'plug.host-probe.wipe',
    ]);
    expect(info.operations.find((o) => o.tool_name === 'write_note')).toMatchObject({ risk_class: 'write', confirmation_policy: 'high_stakes_write' });
    expect(info.variant_ids[0]).toBe('plug.host-probe.echo@1.0.0');
    expect((await host.info('nobody'))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
  });
});

describe('risk and confirmation', () => {
  it('refuses tools above the risk a call accepts (read by default) before starting anything', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    let spawned = 0;
    host.events.on('spawn', () => spawned++);
    const write = await host.call('plug.host-probe.rename_note', { to: 'x' });
    expect(write._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_RISK_NOT_ALLOWED',
      details: { risk_class: 'write', max_risk: 'read', plugin_id: 'host-probe', op_id: 'plug.host-probe.rename_note' },
    });
    const destructive = await host.call('plug.host-probe.wipe', {}, { maxRisk: 'write' });
    expect(destructive._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_RISK_NOT_ALLOWED', details: { risk_class: 'destructive', max_risk: 'write' } });
    expect(spawned).toBe(0);
    expect(jsonOf((await host.call('plug.host-probe.wipe', {}, { maxRisk: 'destructive' }))._unsafeUnwrap())).toMatchObject({ data: { wiped: false } });
  });

  it('dispatches a high_stakes_write tool only when the confirmation callback approves it', async () => {
    const dir = await pool.profile();
    const asked: ConfirmationRequest[] = [];
    let answer: boolean | 'throw' = false;
    const host = await pool.installed(dir, ['probe'], {
      confirm: (request) => {
        asked.push(request);
        if (answer === 'throw') throw new Error('no UI');
        return answer;
      },
    });
    const notes = join(dir, 'data', 'host-probe', 'notes.txt');
    const op = 'plug.host-probe.write_note';

    expect((await host.call(op, { note: 'a' }))._unsafeUnwrapErr().code).toBe('PLUGIN_RISK_NOT_ALLOWED');
    expect(asked).toHaveLength(0);

    expect((await host.call(op, { note: 'refused' }, { maxRisk: 'write' }))._unsafeUnwrapErr().code).toBe('PLUGIN_CONFIRMATION_DENIED');
    answer = 'throw';
    expect((await host.call(op, { note: 'thrown' }, { maxRisk: 'write' }))._unsafeUnwrapErr().code).toBe('PLUGIN_CONFIRMATION_DENIED');
    await expect(access(notes)).rejects.toThrow();

    answer = true;
    expect((await host.call(op, { note: 'approved' }, { maxRisk: 'write' })).isOk()).toBe(true);
    expect(asked.at(-1)).toEqual({ op_id: op, plugin_id: 'host-probe', risk_class: 'write', args: { note: 'approved' } });
    const perCall = await host.call(op, { note: 'per-call no' }, { maxRisk: 'write', confirm: async () => false });
    expect(perCall._unsafeUnwrapErr().code).toBe('PLUGIN_CONFIRMATION_DENIED');
    expect(await readFile(notes, 'utf8')).toBe('approved\n');

    // An ordinary write tool needs no confirmation.
    expect((await host.call('plug.host-probe.rename_note', { to: 'renamed.txt' }, { maxRisk: 'write' })).isOk()).toBe(true);
  });

  it('refuses high_stakes_write when the host has no confirmation callback', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const refused = await host.call('plug.host-probe.write_note', { note: 'x' }, { maxRisk: 'destructive' });
    expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_CONFIRMATION_DENIED', details: { op_id: 'plug.host-probe.write_note' } });
  });
});

describe('plugin-local errors', () => {
  it('maps MCP error envelopes to stable host codes without counting them as failures', async () => {
    const host = await pool.installed(await pool.profile(), ['probe']);
    const limited = (await host.call('plug.host-probe.fail', { code: 'RATE_LIMIT' }))._unsafeUnwrapErr();
    expect(limited).toMatchObject({ code: 'RATE_LIMITED', retryable: true, retry_after_ms: 1500, source_error_code: 'RATE_LIMIT' });
    const invalid = (await host.call('plug.host-probe.fail', { code: 'INVALID_INPUT' }))._unsafeUnwrapErr();
    expect(invalid).toMatchObject({ code: 'INVALID_ARGS', retryable: false, retry_after_ms: undefined });
    const auth = (await host.call('plug.host-probe.fail', { code: 'AUTH_EXPIRED' }))._unsafeUnwrapErr();
    expect(auth).toMatchObject({ code: 'AUTH_REQUIRED', retryable: false });
    expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({ status: 'active', last_error_code: null });
  });
});

describe('events', () => {
  it('reports spawn, stderr, call start and end, and exit as typed events and on diagnostics_channel', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const seen: { name: keyof HostEventMap; payload: unknown }[] = [];
    for (const name of ['spawn', 'stderr', 'call:start', 'call:end', 'exit'] as const) host.events.on(name, (payload) => seen.push({ name, payload }));
    const channelEnds: unknown[] = [];
    const onEnd = (message: unknown): void => void channelEnds.push(message);
    diagnostics_channel.subscribe('mcp-plugin-host:call:end', onEnd);
    try {
      expect((await host.call('plug.host-probe.echo', { message: 'x' })).isOk()).toBe(true);
      expect((await host.call('plug.host-probe.fail', { code: 'SERVICE_DOWN' })).isErr()).toBe(true);
    } finally {
      diagnostics_channel.unsubscribe('mcp-plugin-host:call:end', onEnd);
    }
    const spawn = seen.find((e) => e.name === 'spawn')?.payload as HostEventMap['spawn'];
    expect(spawn).toMatchObject({ plugin_id: 'host-probe', sandboxed: true, sha256: (await host.info('host-probe'))._unsafeUnwrap().executable.sha256 });
    await waitUntil(() => seen.some((e) => e.name === 'stderr'));
    expect(seen.find((e) => e.name === 'stderr')?.payload).toMatchObject({ plugin_id: 'host-probe', line: expect.stringMatching(/^probe-started \d+$/) });
    const ends = seen.filter((e) => e.name === 'call:end').map((e) => e.payload as HostEventMap['call:end']);
    expect(ends).toEqual([
      { plugin_id: 'host-probe', op_id: 'plug.host-probe.echo', call_id: expect.any(Number), duration_ms: expect.any(Number), ok: true },
      { plugin_id: 'host-probe', op_id: 'plug.host-probe.fail', call_id: expect.any(Number), duration_ms: expect.any(Number), ok: false, code: 'SERVICE_DOWN' },
    ]);
    expect(ends.every((e) => e.duration_ms >= 0)).toBe(true);
    expect(seen.filter((e) => e.name === 'call:start').map((e) => (e.payload as HostEventMap['call:start']).call_id)).toEqual(ends.map((e) => e.call_id));
    expect(channelEnds).toEqual(ends);
    await host.close();
    await waitUntil(() => seen.some((e) => e.name === 'exit'));
    expect(seen.find((e) => e.name === 'exit')?.payload).toMatchObject({ plugin_id: 'host-probe', pid: spawn.pid });
  });
});

describe('idle stop', () => {
  it('stops a plugin after the idle time and starts it again on the next call', async () => {
    const clock = new FakeClock();
    const host = await pool.installed(await pool.profile(), ['probe'], { clock, idleTimeoutMs: 60_000 });
    const spawns: number[] = [];
    const exits: number[] = [];
    host.events.on('spawn', (e) => spawns.push(e.pid));
    host.events.on('exit', (e) => exits.push(e.pid));

    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
    expect(spawns).toHaveLength(1);
    clock.advance(59_999);
    await new Promise((r) => setTimeout(r, 100));
    expect(exits).toEqual([]);
    clock.advance(1);
    await waitUntil(() => exits.length === 1);
    expect(exits).toEqual(spawns);
    expect((await processesWith(host.profileDir)).length).toBe(0);

    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
    expect(spawns).toHaveLength(2);
    expect(spawns[1]).not.toBe(spawns[0]);
  });

  it('never stops an idle plugin when idleTimeoutMs is 0', async () => {
    const clock = new FakeClock();
    const host = await pool.installed(await pool.profile(), ['probe'], { clock, idleTimeoutMs: 0 });
    let spawns = 0;
    host.events.on('spawn', () => spawns++);
    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
    clock.advance(86_400_000);
    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
    expect(spawns).toBe(1);
  });
});

describe('close', () => {
  it('stops every plugin process tree, fails calls in flight, and refuses every later operation with HOST_CLOSED', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe', 'ndjson']);
    expect((await host.call('plug.host-ndjson.ping', undefined)).isOk()).toBe(true);
    const inFlight = host.call('plug.host-probe.echo', { delayMs: 20_000 });
    await waitUntil(async () => (await processesWith(dir)).length >= 2);
    await host.close();
    expect((await inFlight)._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
    expect(await processesWith(dir)).toEqual([]);
    expect(host.closed).toBe(true);

    const pkg = await packaged('probe');
    const refusals = await Promise.all([
      host.call('plug.host-probe.echo', {}),
      host.list(),
      host.info('host-probe'),
      host.resource('mcp-plugin-host://plugins'),
      host.install(pkg),
      host.inspect(pkg),
      host.remove('host-probe'),
      host.reload('host-probe'),
      host.unquarantine('host-probe'),
      host.setup('host-probe', {}),
      host.canary('host-probe'),
    ]);
    for (const r of refusals) expect(r._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
    await host.close();
  });
});

describe('remove', () => {
  it('stops the plugin, deletes its install root and rows, and keeps its namespace owner', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    const root = (await host.info('host-probe'))._unsafeUnwrap().executable.install_root;
    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
    expect((await host.remove('host-probe')).isOk()).toBe(true);
    expect(await processesWith(dir)).toEqual([]);
    await expect(access(root)).rejects.toThrow();
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
    expect((await host.call('plug.host-probe.echo', {}))._unsafeUnwrapErr().code).toBe('VARIANT_NOT_FOUND');
    expect((await host.remove('host-probe'))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
    const lock = JSON.parse(await readFile(join(dir, 'plugins.lock'), 'utf8')) as { namespace_owners: Record<string, unknown> };
    expect(lock.namespace_owners['host-probe']).toMatchObject({ namespace_owner: 'io.example.host-probe' });
  });
});

describe('open', () => {
  it('puts the default profile under $XDG_DATA_HOME/<app>/<profile>', async () => {
    const xdg = await mkdtemp(join(tmpdir(), 'host-xdg-'));
    try {
      const host = (await PluginHost.open({ env: { XDG_DATA_HOME: xdg }, appName: 'my-agent', profile: 'work', profileKind: 'dev' }))._unsafeUnwrap();
      expect(host.profileDir).toBe(join(xdg, 'my-agent', 'work'));
      expect((await host.list())._unsafeUnwrap()).toEqual([]);
      await host.close();
    } finally {
      await rm(xdg, { recursive: true, force: true });
    }
  });

  it('refuses invalid options with HOST_INVALID_OPTIONS before touching the disk', async () => {
    const dir = await pool.profile();
    for (const options of [
      { idleTimeoutMs: -1 },
      { callTimeoutMs: 0 },
      { maxInFlight: 1.5 },
      { backoffScheduleMs: [] },
      { backoffScheduleMs: [30_000, Number.NaN] },
      { activation: 'later' as 'immediate' },
    ]) {
      const opened = await PluginHost.open({ profileDir: join(dir, 'never'), profileKind: 'dev', ...options });
      expect(opened._unsafeUnwrapErr().code, JSON.stringify(options)).toBe('HOST_INVALID_OPTIONS');
    }
    await expect(access(join(dir, 'never'))).rejects.toThrow();
  });

  it('installs a checksummed archive in a standard profile, where a bare directory is refused', async () => {
    const dir = await pool.profile();
    const pkg = await packaged('probe');
    const archive = join(dir, 'probe.tgz');
    await tar.c({ gzip: true, file: archive, cwd: pkg, portable: true }, ['manifest.json', 'bin']);
    const checksum = `sha256:${createHash('sha256').update(await readFile(archive)).digest('hex')}`;
    const host = await pool.open(join(dir, 'profile'), { profileKind: 'standard', activation: 'immediate' });
    expect((await host.install(pkg))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SOURCE_NOT_ALLOWED', details: { reason: 'directory_source' } });
    const installed = (await host.install(archive, { checksum }))._unsafeUnwrap();
    expect(installed.plugin.package).toMatchObject({ checksum: expect.stringContaining(checksum.slice('sha256:'.length)) });
    expect((await host.call('plug.host-probe.echo', {})).isOk()).toBe(true);
  });
});
