/**
 * Seeds 000 §7 and 001 "Output Profiles and Tests": a tool's output_profile
 * shapes every successful result of its variant at call time, strip_nulls
 * only where null_elision_safe_fields allow it, and a lossy profile keeps the
 * full result recoverable. Through PluginHost with the real ndjson-rpc echo
 * plugin subprocess (its `echo` returns its params, so each case sends the
 * body it wants shaped).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const fixtureDir = join(import.meta.dirname, '../../fixtures/plugins/host-ndjson');

/** The host-ndjson echo package whose `echo` binds `profile` (with `safe` as its null_elision_safe_fields). */
async function echoWithProfile(profile: Record<string, unknown>, safe?: readonly string[]): Promise<string> {
  const dir = await packageFixturePlugin(fixtureDir, { bundle: ['bin/echo.mjs'] });
  const path = join(dir, 'manifest.json');
  const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown> & { advertised_tools: Array<Record<string, unknown>> };
  manifest.advertised_tools = manifest.advertised_tools.map((t) =>
    t.name === 'echo' ? { ...t, output_profile: 'echo.compact', ...(safe === undefined ? {} : { null_elision_safe_fields: safe }) } : t,
  );
  manifest.output_profiles = { 'echo.compact': profile };
  await writeFile(path, JSON.stringify(manifest));
  return dir;
}

describe('seeds 000 §7 / 001 Output Profiles: profiles applied at call time', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  async function hostFor(pkg: string) {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(pkg, { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    return pool.open(profile);
  }

  it('seed 001 "Each plugin tool must declare output_profile": the profile shapes every successful result of the variant; a tool without one is untouched', async () => {
    const host = await hostFor(await echoWithProfile({ keep_fields: ['items', 'title'], collapse_arrays: { max_items: 2 }, truncate_strings: { default_chars: 4 } }));
    const body = { items: [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }], title: 'a long title', internal: { trace: 'x' } };
    for (let round = 0; round < 2; round += 1) {
      const result = (await host.call('plug.host-ndjson.echo', body))._unsafeUnwrap();
      expect(result.value).toEqual({ items: [{ id: 1 }, { id: 2 }], items_omitted_count: 2, title: 'a lo…' });
      expect(result.profile).toMatchObject({ profile: 'echo.compact', lossy: true, omitted_count: 2, truncated_strings: 1, removed_fields: 2, result_count: 2 });
    }
    const ping = (await host.call('plug.host-ndjson.ping', {}))._unsafeUnwrap();
    expect(ping.value).toBe('pong');
    expect(ping.profile).toBeUndefined();
  });

  it('seed 001 "Lossy plugin profiles must keep recovery enabled": the unshaped result is kept at full_result_path, private to the profile', async () => {
    const host = await hostFor(await echoWithProfile({ drop_fields: ['secret_note'] }));
    const body = { id: 7, secret_note: 'only in the full result' };
    const result = (await host.call('plug.host-ndjson.echo', body))._unsafeUnwrap();
    expect(result.value).toEqual({ id: 7 });
    const path = result.profile?.full_result_path ?? '';
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(body);
    const { stat } = await import('node:fs/promises');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const untouched = (await host.call('plug.host-ndjson.echo', { id: 8 }))._unsafeUnwrap();
    expect(untouched.profile).toMatchObject({ lossy: false });
    expect(untouched.profile?.full_result_path).toBeUndefined();
  });

  it('seed 001 null_elision_safe_fields: strip_nulls removes empty fields only at the declared dot paths', async () => {
    const safe = ['price', 'segments', 'price.currency', 'segments[].aircraft'];
    const host = await hostFor(await echoWithProfile({ strip_nulls: true, keep_fields: ['price', 'segments'] }, safe));
    const body = { price: { amount: null, currency: null }, segments: [{ aircraft: null, flight: '' }, { aircraft: 'A320', flight: 'TP1' }], other: 1 };
    const result = (await host.call('plug.host-ndjson.echo', body))._unsafeUnwrap();
    expect(result.value).toEqual({ price: { amount: null }, segments: [{ flight: '' }, { aircraft: 'A320', flight: 'TP1' }] });
  });

  it('seed 001 "Lossy plugin profiles must keep recovery enabled": install refuses a lossy profile that turns recovery off (PROFILE_RECOVERY_DISABLED)', async () => {
    const installer = await pool.open(await pool.profile());
    const error = (await installer.install(await echoWithProfile({ limit: 5, recovery: 'none' }), { canary: false }))._unsafeUnwrapErr();
    const violations = (error.details.violations ?? []) as Array<{ code: string; pointer: string }>;
    expect(violations.map((v) => [v.code, v.pointer])).toContainEqual(['PROFILE_RECOVERY_DISABLED', '/output_profiles/echo.compact/recovery']);
  });

  it('seed 001 profile validation: an unknown profile field or a missing base is refused at install, not ignored', async () => {
    const installer = await pool.open(await pool.profile());
    const unknown = (await installer.install(await echoWithProfile({ format: 'toon' }), { canary: false }))._unsafeUnwrapErr();
    expect(((unknown.details.violations ?? []) as Array<{ code: string; pointer: string }>).map((v) => [v.code, v.pointer])).toContainEqual([
      'PLUGIN_MANIFEST_INVALID',
      '/output_profiles/echo.compact/format',
    ]);
    const orphan = (await installer.install(await echoWithProfile({ inherits: '_base.nowhere' }), { canary: false }))._unsafeUnwrapErr();
    expect(((orphan.details.violations ?? []) as Array<{ code: string; pointer: string }>).map((v) => [v.code, v.pointer])).toContainEqual([
      'PROFILE_INVALID',
      '/output_profiles/echo.compact/inherits',
    ]);
  });

  it('seed 000 §7 output profiles: a profile may inherit a built-in base (etc/output-profiles.json) and override its fields', async () => {
    const host = await hostFor(await echoWithProfile({ inherits: '_base.list', collapse_arrays: { max_items: 1 } }));
    const result = (await host.call('plug.host-ndjson.echo', [{ n: 1 }, { n: 2 }, { n: 3 }]))._unsafeUnwrap();
    expect(result.value).toEqual({ items: [{ n: 1 }], omitted_count: 2 });
    expect(result.profile?.full_result_path).toEqual(expect.stringContaining('/results/'));
  });
});
