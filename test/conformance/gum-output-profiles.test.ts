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
import { cli, json, tempDir } from '../cli/cliHarness.js';
import { PluginHost, readProfileFile, runProfileTests, type PluginHostOptions } from '../../src/index.js';
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

  async function hostFor(pkg: string, options: PluginHostOptions = {}) {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(pkg, { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    return pool.open(profile, options);
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

  it('seed 001 "Each plugin tool must declare output_profile": a profile that is neither shipped nor built in is refused at install, not left to fail every call', async () => {
    const pkg = await echoWithProfile({});
    const path = join(pkg, 'manifest.json');
    const { output_profiles: _shipped, ...manifest } = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    await writeFile(path, JSON.stringify(manifest));
    const installer = await pool.open(await pool.profile());
    const error = (await installer.install(pkg, { canary: false }))._unsafeUnwrapErr();
    expect(((error.details.violations ?? []) as Array<{ code: string; pointer: string }>).map((v) => [v.code, v.pointer])).toContainEqual([
      'PROFILE_INVALID',
      '/advertised_tools/0/output_profile',
    ]);
  });

  it('seed 000 §7 output profiles: a profile may inherit a built-in base (etc/output-profiles.json) and override its fields', async () => {
    const host = await hostFor(await echoWithProfile({ inherits: '_base.list', collapse_arrays: { max_items: 1 } }));
    const result = (await host.call('plug.host-ndjson.echo', [{ n: 1 }, { n: 2 }, { n: 3 }]))._unsafeUnwrap();
    expect(result.value).toEqual({ items: [{ n: 1 }], omitted_count: 2 });
    expect(result.profile?.full_result_path).toEqual(expect.stringContaining('/results/'));
  });

  it('seed 000 §7 output profiles ("keep responses compact"): dedupe and sort_by (host-defined, docs/conformance.md) order and thin the record array before limit', async () => {
    const host = await hostFor(await echoWithProfile({ drop_fields: ['results[].fetched_at'], dedupe: true, sort_by: ['-price.amount', 'id'], limit: 2 }));
    const body = {
      results: [
        { id: 'b', price: { amount: 90 }, fetched_at: 1 },
        { id: 'a', price: { amount: 120 }, fetched_at: 2 },
        { id: 'b', price: { amount: 90 }, fetched_at: 3 },
        { id: 'c', price: { amount: 90 }, fetched_at: 4 },
      ],
    };
    const result = (await host.call('plug.host-ndjson.echo', body))._unsafeUnwrap();
    expect(result.value).toEqual({ results: [{ id: 'a', price: { amount: 120 } }, { id: 'b', price: { amount: 90 } }] });
    expect(result.profile).toMatchObject({ omitted_count: 2, result_count: 2, lossy: true });
    expect(JSON.parse(await readFile(result.profile?.full_result_path ?? '', 'utf8'))).toEqual(body);
  });

  it('seed 001 "Each plugin tool must declare output_profile" (bindings, host-defined): the application\'s outputProfiles replace a tool\'s profile, give one to a tool without, and are checked at open', async () => {
    const outputProfiles = {
      definitions: { 'app.top1': { limit: 1 } },
      bindings: { 'plug.host-ndjson.echo': 'raw', 'plug.host-ndjson.ping': 'app.top1' },
    };
    const host = await hostFor(await echoWithProfile({ drop_fields: ['secret_note'] }), { outputProfiles });
    const body = { id: 7, secret_note: 'kept: the application bound raw' };
    const echoed = (await host.call('plug.host-ndjson.echo', body))._unsafeUnwrap();
    expect(echoed.value).toEqual(body);
    expect(echoed.profile).toMatchObject({ profile: 'raw', lossy: false });
    const ping = (await host.call('plug.host-ndjson.ping', {}))._unsafeUnwrap();
    expect(ping.profile).toMatchObject({ profile: 'app.top1' });
    const refused = await PluginHost.open({ profileDir: await pool.profile(), outputProfiles: { definitions: { lossy: { limit: 2, recovery: 'none' }, odd: { format: 'toon' } as never }, bindings: { 'plug.x.y': 'nowhere' } } });
    const error = refused._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INVALID_OPTIONS');
    expect((error.details.problems as Array<{ pointer: string }>).map((p) => p.pointer)).toEqual(['/definitions/odd/format', '/bindings/plug.x.y']);
    const unbound = await PluginHost.open({ profileDir: await pool.profile(), outputProfiles: { definitions: { lossy: { limit: 2, recovery: 'none' } }, bindings: { 'plug.x.y': 'nowhere' } } });
    expect((unbound._unsafeUnwrapErr().details.problems as Array<{ code: string; pointer: string }>).map((p) => [p.code, p.pointer])).toEqual([
      ['PROFILE_RECOVERY_DISABLED', '/definitions/lossy/recovery'],
      ['PROFILE_INVALID', '/bindings/plug.x.y'],
    ]);
  });
});

describe('seed 001 Output Profiles on an MCP plugin: structuredContent and its text block', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());

  it('seed 001 "Each plugin tool must declare output_profile": an MCP result\'s structuredContent is shaped and its one text block rewritten to match', async () => {
    const dir = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/host-published'), { bundle: ['bin/server.mjs'] });
    const path = join(dir, 'manifest.json');
    const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown> & { advertised_tools: Array<Record<string, unknown>> };
    manifest.advertised_tools = manifest.advertised_tools.map((t) => (t.name === 'describe' ? { ...t, output_profile: 'lean' } : t));
    manifest.output_profiles = { lean: { drop_fields: ['length'] } };
    await writeFile(path, JSON.stringify(manifest));
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    (await installer.install(dir, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(profile);

    const described = (await host.call('plug.host-published.describe', { thing: 'lamp' }))._unsafeUnwrap();
    if (described.shape !== 'mcp-plugin') throw new Error(`unexpected shape ${described.shape}`);
    expect(described.value.structuredContent).toEqual({ thing: 'lamp' });
    expect(described.value.content).toEqual([{ type: 'text', text: '{"thing":"lamp"}' }]);
    expect(described.profile).toMatchObject({ profile: 'lean', lossy: true, removed_fields: 1 });
    expect(JSON.parse(await readFile(described.profile?.full_result_path ?? '', 'utf8'))).toEqual({ thing: 'lamp', length: 4 });
  });
});

describe('seed 001 "Plugin profile files are validated with gum profile validate; fixture-backed profiles are tested with gum profile test"', () => {
  const PROFILES = `
[output_profiles."flights.compact"]
inherits = "_base.list"
keep_fields = ["itineraries", "currency"]
collapse_arrays = { max_items = 2 }

[output_profiles."flights.raw"]

[[tests]]
name = "compact keeps two itineraries"
profile = "flights.compact"
fixture = "search.json"
expect_lossy = true
expect_omitted_count = 1
expect_output = "search.compact.json"

[[tests]]
name = "raw is lossless"
profile = "flights.raw"
fixture = "search.json"
expect_lossy = false
`;
  // Each case starts the CLI from source (tsx) two or three times: slow on a loaded machine.
  const CLI_TIMEOUT_MS = 120_000;
  const SAMPLE = { itineraries: [{ id: 'a' }, { id: 'b' }, { id: 'c' }], currency: 'EUR', debug: { ms: 12 } };

  async function profileDir(profiles: string, expected: unknown = { itineraries: [{ id: 'a' }, { id: 'b' }], itineraries_omitted_count: 1, currency: 'EUR' }) {
    const dir = await tempDir('profile-file-');
    await writeFile(join(dir.path, 'profiles.toml'), profiles);
    await writeFile(join(dir.path, 'search.json'), JSON.stringify(SAMPLE));
    await writeFile(join(dir.path, 'search.compact.json'), JSON.stringify(expected));
    return dir;
  }

  it('profile validate accepts a valid file and reports every problem of an invalid one (exit 3)', { timeout: CLI_TIMEOUT_MS }, async () => {
    const good = await profileDir(PROFILES);
    const bad = await profileDir('[output_profiles.p]\nlimit = 3\nrecovery = "none"\nformat = "toon"\n\n[output_profiles.q]\ninherits = "missing"\n');
    try {
      const ok = await cli(['profile', 'validate', join(good.path, 'profiles.toml'), '--json']);
      expect(ok.code).toBe(0);
      expect(json(ok)).toMatchObject({ valid: true, profiles: ['flights.compact', 'flights.raw'], tests: 2 });
      const refused = await cli(['profile', 'validate', join(bad.path, 'profiles.toml'), '--json']);
      expect(refused.code).toBe(3);
      const problems = (json(refused).problems as Array<{ code: string; pointer: string }>).map((p) => [p.code, p.pointer]);
      expect(problems).toEqual(
        expect.arrayContaining([
          ['PROFILE_INVALID', '/output_profiles/p/format'],
          ['PROFILE_RECOVERY_DISABLED', '/output_profiles/p/recovery'],
          ['PROFILE_INVALID', '/output_profiles/q/inherits'],
        ]),
      );
    } finally {
      await Promise.all([good.dispose(), bad.dispose()]);
    }
  });

  it('profile test runs the fixture-backed tests (exit 3 when one fails) and shapes one sample with --input', { timeout: CLI_TIMEOUT_MS }, async () => {
    const good = await profileDir(PROFILES);
    const wrong = await profileDir(PROFILES, { itineraries: [] });
    try {
      const passed = await cli(['profile', 'test', join(good.path, 'profiles.toml'), '--json']);
      expect(passed.code).toBe(0);
      expect(json(passed)).toMatchObject({ passed: true, results: [{ name: 'compact keeps two itineraries', passed: true }, { name: 'raw is lossless', passed: true }] });
      const failed = await cli(['profile', 'test', join(wrong.path, 'profiles.toml'), '--json']);
      expect(failed.code).toBe(3);
      expect(json(failed)).toMatchObject({ passed: false, results: [{ passed: false }, { passed: true }] });
      const sample = await cli(['profile', 'test', join(good.path, 'profiles.toml'), '--name', 'flights.compact', '--input', join(good.path, 'search.json'), '--json']);
      expect(sample.code).toBe(0);
      expect(json(sample)).toMatchObject({ profile: 'flights.compact', result: { itineraries: [{ id: 'a' }, { id: 'b' }], currency: 'EUR' }, outcome: { lossy: true } });
    } finally {
      await Promise.all([good.dispose(), wrong.dispose()]);
    }
  });

  it('profile test expect_max_tokens: a shaped sample over the budget fails, in the same estimated tokens (UTF-8 bytes / 4) a raw tool\'s token_budget_exception uses', async () => {
    const dir = await tempDir('profile-tokens-');
    const sample = { note: 'é'.repeat(100) };
    await writeFile(join(dir.path, 'long.json'), JSON.stringify(sample));
    await writeFile(
      join(dir.path, 'profiles.toml'),
      `[output_profiles.short]
truncate_strings = { default_chars = 10 }

[output_profiles.whole]

[[tests]]
name = "short fits"
profile = "short"
fixture = "long.json"
expect_max_tokens = 20

[[tests]]
name = "whole does not"
profile = "whole"
fixture = "long.json"
expect_max_tokens = 20
`,
    );
    try {
      const file = (await readProfileFile(join(dir.path, 'profiles.toml')))._unsafeUnwrap();
      expect(file.problems).toEqual([]);
      const results = (await runProfileTests(file))._unsafeUnwrap();
      const wholeTokens = Math.ceil(Buffer.byteLength(JSON.stringify(sample), 'utf8') / 4);
      expect(results).toMatchObject([
        { name: 'short fits', passed: true },
        { name: 'whole does not', passed: false, failures: [`tokens: expected at most 20, got about ${wholeTokens}`] },
      ]);
    } finally {
      await dir.dispose();
    }
  });
});
