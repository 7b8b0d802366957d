import { hostError } from '../../src/errors/HostError.js';
/**
 * The pure parts of the host: op ids, status precedence, canary holds,
 * inventory assembly, the idle timer, option checks, credential mapping.
 * Plus one real profile whose lock disagrees with its catalog.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { okAsync } from 'neverthrow';
import { afterAll, describe, expect, it } from 'vitest';
import type { InstalledPlugin } from '../../src/catalog/catalogContents.js';
import type { CatalogVariant, PluginStateRecord } from '../../src/catalog/catalogTypes.js';
import { resolveHostConfig } from '../../src/host/hostConfig.js';
import { aliasesOf, credentialsByEnv } from '../../src/host/credentials.js';
import { pluginInfo, pluginRow } from '../../src/host/inventory.js';
import { hostOpId, operationIndex, pluginIdOf } from '../../src/host/operations.js';
import { riskAllowed } from '../../src/manifest/model.js';
import { PluginHost } from '../../src/host/PluginHost.js';
import { canaryHold, crashStateOf, inBackoff, statusOf, withCrashState } from '../../src/host/pluginState.js';
import { PluginRuntime } from '../../src/host/PluginRuntime.js';
import type { PluginSession } from '../../src/shapes/PluginSession.js';
import { recordFailure } from '../../src/host/CrashPolicy.js';
import { FakeClock, packaged, removePackages, tempProfile } from '../support/hostHarness.js';
import { pluginState } from '../support/pluginState.js';

afterAll(() => removePackages());

const variant = (op_id: string, tool_name: string, extra: Partial<CatalogVariant> = {}): CatalogVariant => ({
  op_id,
  variant_id: `${op_id}.v1`,
  plugin_id: 'notes',
  tool_name,
  risk_class: 'read',
  confirmation_policy: 'none',
  schema_hashes: {},
  ...extra,
});

const row = (fields: Partial<PluginStateRecord> = {}): PluginStateRecord =>
  pluginState({ installed_at: '2026-01-01T00:00:00.000Z', activated_at: '2026-01-01T00:00:01.000Z', ...fields });

const plugin = (fields: Partial<InstalledPlugin> = {}): InstalledPlugin => ({
  profile: 'default',
  plugin_id: 'notes',
  lock: {
    plugin_id: 'notes',
    version: '2.0.0',
    namespace_owner: 'io.example.notes',
    package: { source: 'directory:/x', ref: 'v2', checksum: '' },
    binding: { executable_path: 'bin/notes', executable_sha256: 'a'.repeat(64), argv_normalized: ['bin/notes'], install_root: '/p/plugins/notes/2' },
  } as InstalledPlugin['lock'],
  state: row(),
  variants: [variant('notes.search', 'search')],
  descriptor: {
    plugin_id: 'notes',
    name: 'Notes',
    version: '2.0.0',
    shape: 'mcp-plugin',
    namespace_owner: 'io.example.notes',
    needs_user_creds: ['NOTES_TOKEN'],
    credential_descriptors: [{ alias: 'notes', env: 'NOTES_TOKEN', kind: 'api_key', display_name: 'Notes token', setup_hint: 'Settings → Tokens' }],
  },
  ...fields,
});

describe('operation ids', () => {
  it('calls JSON v1 variants by their plug. id and TOML variants by plug.<op_id>', () => {
    expect(hostOpId(variant('plug.hello.hello', 'hello', { plugin_id: 'hello' }))).toBe('plug.hello.hello');
    expect(hostOpId(variant('notes.search', 'search'))).toBe('plug.notes.search');
    // A TOML plugin may be called "plug" itself.
    expect(hostOpId(variant('plug.search', 'search', { plugin_id: 'plug' }))).toBe('plug.plug.search');
    const notes = { plugin_id: 'notes', variants: [variant('notes.search', 'search'), variant('notes.find', 'search_v2'), variant('notes.find', 'shadowed')] };
    // A variant whose id names another plugin is not callable through this one.
    const stray = { plugin_id: 'stray', variants: [variant('notes.other', 'other', { plugin_id: 'stray' })] };
    const index = operationIndex([notes, stray]);
    expect(index.get('plug.notes.find')?.variant.tool_name).toBe('search_v2');
    expect(index.get('plug.notes.find')?.plugin).toBe(notes);
    expect(index.get('plug.notes.search')?.variant.tool_name).toBe('search');
    expect(index.get('notes.search')).toBeUndefined();
    expect(index.get('plug.notes.search_v2')).toBeUndefined();
    expect(index.get('plug.notes.other')).toBeUndefined();
    expect(pluginIdOf('plug.notes.search')).toBe('notes');
    expect(pluginIdOf('plug.Notes.search')).toBeUndefined();
    expect(pluginIdOf('notes.search')).toBeUndefined();
    // Asked again (the gateway asks per call, and keeps its answers): the same answers, a refusal included.
    expect(pluginIdOf('plug.notes.search')).toBe('notes');
    expect(pluginIdOf('plug.Notes.search')).toBeUndefined();
    // Past the ids it keeps (512) and for ids too long to keep, every answer is still the id's own.
    for (let i = 0; i < 1_100; i++) expect(pluginIdOf(`plug.p${i}.tool`)).toBe(`p${i}`);
    const long = `plug.notes.${'t'.repeat(300)}`;
    expect(pluginIdOf(long)).toBe('notes');
    expect(pluginIdOf(long)).toBe('notes');
    expect(pluginIdOf(`plug.Notes.${'t'.repeat(300)}`)).toBeUndefined();
  });

  it('orders risk classes read < write < destructive', () => {
    expect(riskAllowed('read', 'read')).toBe(true);
    expect(riskAllowed('write', 'read')).toBe(false);
    expect(riskAllowed('write', 'write')).toBe(true);
    expect(riskAllowed('destructive', 'write')).toBe(false);
    expect(riskAllowed('destructive', 'destructive')).toBe(true);
    expect(riskAllowed('read', 'destructive')).toBe(true);
  });
});

describe('status precedence', () => {
  it('is quarantined > needs_configuration > installed_pending_restart > active for every combination', () => {
    for (const quarantined of [false, true]) {
      for (const needs of [false, true]) {
        for (const pending of [false, true]) {
          const expected = quarantined ? 'quarantined' : needs ? 'needs_configuration' : pending ? 'installed_pending_restart' : 'active';
          const r = row({ quarantined_at: quarantined ? '2026-01-02T00:00:00.000Z' : null, needs_configuration: needs });
          expect(statusOf(r, pending), JSON.stringify({ quarantined, needs, pending })).toBe(expected);
          expect(pluginRow(plugin({ state: r }), pending).status).toBe(expected);
        }
      }
    }
    expect(pluginRow(plugin({ state: undefined }), false).status).toBe('quarantined');
  });
});

describe('crash state rows', () => {
  it('round-trips through plugin-state.json fields', () => {
    const now = Date.UTC(2026, 1, 1);
    const failed = recordFailure(crashStateOf(row()), { code: 'PLUGIN_CRASHED', reason: 'crash', now });
    const written = withCrashState(row(), failed);
    expect(written).toMatchObject({ status: 'quarantined', retry_count: 1, next_retry_at: new Date(now + 30_000).toISOString(), quarantine_reason: 'crash' });
    expect(crashStateOf(written)).toEqual(failed);
    expect(inBackoff(written)).toBe(true);
  });

  it('holds a plugin after a failed canary without a retry time, keeping the ladder and a permanent quarantine', () => {
    const now = Date.UTC(2026, 1, 1);
    const held = withCrashState(row({ retry_count: 2 }), canaryHold(row({ retry_count: 2 }), 'AUTH_REQUIRED', now));
    expect(held).toMatchObject({ status: 'quarantined', retry_count: 2, next_retry_at: null, permanent_quarantine: false, quarantine_reason: 'canary_failed', last_error_code: 'AUTH_REQUIRED' });
    expect(held.quarantined_at).toBe(new Date(now).toISOString());
    expect(inBackoff(held)).toBe(false);

    const permanent = row({ quarantined_at: '2026-01-05T00:00:00.000Z', permanent_quarantine: true, retry_count: 6, quarantine_reason: 'crash' });
    expect(withCrashState(permanent, canaryHold(permanent, 'PLUGIN_CRASHED', now))).toMatchObject({
      permanent_quarantine: true,
      quarantine_reason: 'crash',
      quarantined_at: '2026-01-05T00:00:00.000Z',
      last_error_code: 'PLUGIN_CRASHED',
    });
    expect(inBackoff(permanent)).toBe(false);
    expect(inBackoff(row({ retry_count: 1 }))).toBe(true);
    expect(inBackoff(row())).toBe(false);
  });
});

describe('inventory assembly', () => {
  it('shows credentials by alias only and warns when the lock and the catalog disagree', () => {
    const info = pluginInfo(plugin(), false, 7, null);
    expect(info.credential_descriptors).toEqual([{ alias: 'notes', kind: 'api_key', display_name: 'Notes token', setup_hint: 'Settings → Tokens' }]);
    expect(JSON.stringify(info)).not.toContain('NOTES_TOKEN');
    expect(info).toMatchObject({ install_generation: 7, variant_ids: ['notes.search.v1'], operations: [{ op_id: 'plug.notes.search', tool_name: 'search' }] });
    expect(info.metadata_warning).toBeUndefined();

    const base = plugin();
    for (const disagreeing of [
      plugin({ lock: { ...base.lock, version: '1.9.0' } }),
      plugin({ lock: { ...base.lock, namespace_owner: 'io.example.other' } }),
      plugin({ descriptor: undefined }),
      plugin({ variants: [] }),
    ]) {
      expect(pluginInfo(disagreeing, false, 1, null).metadata_warning).toBe('lock_catalog_mismatch');
    }
  });

  it('flags lock_catalog_mismatch on a real profile whose plugins.lock was edited', async () => {
    const dir = await tempProfile();
    try {
      const first = (await PluginHost.open({ profileDir: dir, profileKind: 'dev' }))._unsafeUnwrap();
      expect((await first.install(await packaged('probe'), { canary: false })).isOk()).toBe(true);
      await first.close();
      const lockPath = join(dir, 'plugins.lock');
      const lock = JSON.parse(await readFile(lockPath, 'utf8')) as { plugins: Record<string, { version: string }> };
      lock.plugins['host-probe']!.version = '0.9.0';
      await writeFile(lockPath, JSON.stringify(lock));
      const host = (await PluginHost.open({ profileDir: dir, profileKind: 'dev' }))._unsafeUnwrap();
      expect((await host.info('host-probe'))._unsafeUnwrap()).toMatchObject({ version: '0.9.0', metadata_warning: 'lock_catalog_mismatch' });
      await host.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('PluginRuntime', () => {
  const fakeSession = (): PluginSession & { closes: number } => {
    const s = {
      shape: 'mcp-plugin' as const,
      closes: 0,
      listTools: () => okAsync([]),
      callTool: () => okAsync({ value: null, isError: false }),
      close: async () => {
        s.closes++;
      },
    };
    return s;
  };

  it('closes its session only after the idle time with nothing in flight', async () => {
    const clock = new FakeClock();
    const session = fakeSession();
    let idled = 0;
    const rt = new PluginRuntime(session, clock, 1_000, () => idled++);
    rt.begin();
    rt.begin();
    rt.end();
    clock.advance(5_000);
    expect(session.closes).toBe(0);
    rt.end();
    clock.advance(999);
    expect(session.closes).toBe(0);
    rt.begin(); // a call in flight holds off the armed timer
    clock.advance(5_000);
    expect(session.closes).toBe(0);
    rt.end();
    clock.advance(1_000);
    await Promise.resolve();
    await Promise.resolve();
    expect(session.closes).toBe(1);
    expect(idled).toBe(1);
    expect(rt.closed).toBe(true);
    await rt.close();
    expect(session.closes).toBe(1);
  });

  it('counts the idle time from the last call to end, with one timer for many calls', async () => {
    const clock = new FakeClock();
    const session = fakeSession();
    const rt = new PluginRuntime(session, clock, 1_000, () => undefined);
    rt.begin();
    rt.end();
    expect(clock.pending).toBe(1);
    clock.advance(600);
    rt.begin();
    rt.end();
    expect(clock.pending).toBe(1);
    clock.advance(400); // the first timer fires 400 ms after the last call: armed again for the rest
    await Promise.resolve();
    expect(session.closes).toBe(0);
    expect(clock.pending).toBe(1);
    clock.advance(599);
    expect(session.closes).toBe(0);
    clock.advance(1);
    await Promise.resolve();
    expect(session.closes).toBe(1);
    expect(clock.pending).toBe(0);
  });

  it('lets exactly one failure be recorded per session, and remembers it', () => {
    const rt = new PluginRuntime(fakeSession(), new FakeClock(), 0, () => undefined);
    const first = hostError('PLUGIN_CRASHED', 'first');
    expect(rt.failure).toBeUndefined();
    expect(rt.claimFailure(first)).toBe(true);
    expect(rt.claimFailure(hostError('PLUGIN_CRASHED', 'second'))).toBe(false);
    expect(rt.failure).toBe(first);
  });
});

describe('resolveHostConfig', () => {
  it('accepts the defaults and rejects out-of-range values', () => {
    expect(resolveHostConfig({}).isOk()).toBe(true);
    expect(resolveHostConfig({ idleTimeoutMs: 0, backoffScheduleMs: [1], activation: 'immediate', maxInFlight: 4 }).isOk()).toBe(true);
    expect(resolveHostConfig({ maxTotalTimeoutMs: -5 })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'maxTotalTimeoutMs' } });
    expect(resolveHostConfig({ idleTimeoutMs: Number.NaN })._unsafeUnwrapErr().details.option).toBe('idleTimeoutMs');
  });
});

describe('credentials by alias', () => {
  it('maps aliases and declared env names to env names and refuses anything else', () => {
    expect(credentialsByEnv(plugin(), { notes: 's1' })._unsafeUnwrap()).toEqual({ NOTES_TOKEN: 's1' });
    expect(credentialsByEnv(plugin(), { NOTES_TOKEN: 's2' })._unsafeUnwrap()).toEqual({ NOTES_TOKEN: 's2' });
    expect(credentialsByEnv(plugin(), { OTHER: 'x' })._unsafeUnwrapErr().details).toMatchObject({ undeclared_count: 1, empty_count: 0, aliases: ['notes'] });
    expect(credentialsByEnv(plugin(), { notes: '' })._unsafeUnwrapErr().details).toMatchObject({ undeclared_count: 0, empty_count: 1 });
    expect(aliasesOf(plugin(), ['NOTES_TOKEN', 'UNKNOWN'])).toEqual(['notes', 'unnamed']);
  });
});
