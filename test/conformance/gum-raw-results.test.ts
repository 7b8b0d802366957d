/**
 * Seed 001 "Output Profiles and Tests": "Each plugin tool must declare
 * output_profile unless the variant explicitly declares
 * raw_result_allowed=true with a token-budget exception." The manifest rule
 * (TOML contract form; the JSON v1 guide form keeps the seed 000 examples
 * valid), and the budget applied at call time through PluginHost with the
 * real ndjson-rpc echo plugin subprocess.
 */
import { readFileSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { estimateResultTokens } from '../../src/host/resultShaping.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import type { CallResult } from '../../src/index.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const gum = new ManifestValidator({ preset: 'gum' });
const tomlFixture = readFileSync(join(import.meta.dirname, '../../fixtures/manifests/gum-toml/valid/two-tools-no-creds.toml'), 'utf8');
const BUDGET_LINE = 'token_budget_exception = { max_tokens = 800, reason = "A booking confirmation is one small record" }\n';

function tomlViolations(text: string): Array<[string, string]> {
  return gum
    .inspectText(text, { form: 'gum-toml' })
    ._unsafeUnwrap()
    .violations.map((v) => [v.code, v.pointer]);
}

describe('seed 001 Output Profiles: output_profile, or raw_result_allowed with a token-budget exception', () => {
  it('seed 001 "Each plugin tool must declare output_profile": a TOML tool with neither is refused with PLUGIN_OUTPUT_PROFILE_REQUIRED at the field, with a hint naming both ways out', () => {
    const neither = tomlFixture.replace('raw_result_allowed = true\n', '').replace(BUDGET_LINE, '');
    expect(tomlViolations(neither)).toEqual([['PLUGIN_OUTPUT_PROFILE_REQUIRED', '/tools/1/output_profile']]);
    const error = gum.validateText(neither, { form: 'gum-toml' })._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_OUTPUT_PROFILE_REQUIRED');
    expect(error.message).toContain('/tools/1/output_profile');
    expect(error.hint).toContain('token_budget_exception');
    expect(error.hint).toContain('output profile');
  });

  it('seed 001 "raw_result_allowed=true with a token-budget exception": raw without the exception, and an exception without raw, are refused', () => {
    expect(tomlViolations(tomlFixture)).toEqual([]);
    expect(tomlViolations(tomlFixture.replace(BUDGET_LINE, ''))).toEqual([['PLUGIN_OUTPUT_PROFILE_REQUIRED', '/tools/1/token_budget_exception']]);
    const notRaw = tomlFixture.replace('raw_result_allowed = true\n', 'output_profile = "_base.compact"\n');
    expect(tomlViolations(notRaw)).toEqual([['PLUGIN_OUTPUT_PROFILE_REQUIRED', '/tools/1/token_budget_exception']]);
    const noReason = tomlFixture.replace(BUDGET_LINE, 'token_budget_exception = { max_tokens = 0 }\n');
    expect(tomlViolations(noReason)).toEqual([
      ['PLUGIN_OUTPUT_PROFILE_REQUIRED', '/tools/1/token_budget_exception/max_tokens'],
      ['PLUGIN_OUTPUT_PROFILE_REQUIRED', '/tools/1/token_budget_exception/reason'],
    ]);
  });

  it('seed 001 "Each plugin tool must declare output_profile": binding the built-in "raw" profile, which shapes nothing, is not a way around the exception', () => {
    const bindsRaw = tomlFixture.replace(`raw_result_allowed = true\n${BUDGET_LINE}`, 'output_profile = "raw"\n');
    expect(tomlViolations(bindsRaw)).toEqual([['PLUGIN_OUTPUT_PROFILE_REQUIRED', '/tools/1/output_profile']]);
  });

  it('seed 000 §2 and §5: the guide\'s own JSON v1 manifests (no output_profile) stay valid; a JSON v1 tool may opt into raw_result_allowed with its exception', () => {
    const fli = {
      manifest_schema_version: 1,
      plugin_id: 'fli',
      name: 'Flight Search',
      version: '0.1.0',
      namespace_owner: 'io.example.flights',
      shape: 'mcp-plugin',
      executable: 'bin/fli-mcp',
      advertised_tools: [{ name: 'search', description: 'Search Google Flights for a route on a date range', risk_class: 'read' }],
      declared_capabilities: { network: true, fs_write_dir: '', env_allow: ['FLI_USER_AGENT'] },
    };
    const hello = {
      ...fli,
      plugin_id: 'hello',
      name: 'Hello',
      namespace_owner: 'io.example.hello',
      executable: 'hello-mcp',
      advertised_tools: [{ name: 'hello', description: 'Return a deterministic greeting for the given name', risk_class: 'read' }],
      declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
    };
    for (const doc of [fli, hello]) expect(gum.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
    const raw = { ...fli, advertised_tools: [{ ...fli.advertised_tools[0], raw_result_allowed: true, token_budget_exception: { max_tokens: 2000, reason: 'itineraries are few' } }] };
    expect(gum.inspectValue(raw, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
    const rawWithout = { ...fli, advertised_tools: [{ ...fli.advertised_tools[0], raw_result_allowed: true }] };
    expect(gum.inspectValue(rawWithout, 'gum-json')._unsafeUnwrap().violations.map((v) => [v.code, v.pointer])).toEqual([
      ['PLUGIN_OUTPUT_PROFILE_REQUIRED', '/advertised_tools/0/token_budget_exception'],
    ]);
  });
});

describe('seed 001 token-budget exception applied at call time', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  /** The host-ndjson echo package whose `echo` is raw with a budget of `maxTokens`. */
  async function rawEcho(maxTokens: number): Promise<string> {
    const dir = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/host-ndjson'), { bundle: ['bin/echo.mjs'] });
    const path = join(dir, 'manifest.json');
    const manifest = JSON.parse(await readFile(path, 'utf8')) as { advertised_tools: Array<Record<string, unknown>> };
    manifest.advertised_tools = manifest.advertised_tools.map((t) =>
      t.name === 'echo' ? { ...t, raw_result_allowed: true, token_budget_exception: { max_tokens: maxTokens, reason: 'echo returns what it is given' } } : t,
    );
    await writeFile(path, JSON.stringify(manifest));
    return dir;
  }

  it('seed 001 "token-budget exception": a raw result within max_tokens comes back whole; a larger one fails with PLUGIN_RESULT_OVER_BUDGET, the full result kept, and the plugin answers the next call', async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    (await installer.install(await rawEcho(10), { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(profile);

    const small = { id: 1, note: 'short' };
    const within = (await host.call('plug.host-ndjson.echo', small))._unsafeUnwrap();
    expect(within.value).toEqual(small);
    expect(within.profile).toBeUndefined();

    const large = { id: 2, note: 'x'.repeat(200) };
    const error = (await host.call('plug.host-ndjson.echo', large))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_RESULT_OVER_BUDGET');
    expect(error.details).toMatchObject({ tool: 'echo', max_tokens: 10, estimated_tokens: Math.ceil(JSON.stringify(large).length / 4) });
    const path = String(error.details.full_result_path);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(large);
    expect((await stat(path)).mode & 0o777).toBe(0o600);

    expect((await host.call('plug.host-ndjson.echo', small))._unsafeUnwrap().value).toEqual(small);
    expect((await host.call('plug.host-ndjson.ping', {}))._unsafeUnwrap().value).toBe('pong');
  });

  it('seed 001 token budget: an MCP result counts the larger of its content and its structuredContent, in UTF-8 bytes / 4', () => {
    const mcp = (value: Record<string, unknown>): CallResult => ({ shape: 'mcp-plugin', isError: false, value }) as unknown as CallResult;
    expect(estimateResultTokens(mcp({ content: [{ type: 'text', text: 'a'.repeat(40) }] }))).toBe(10);
    expect(estimateResultTokens(mcp({ content: [{ type: 'text', text: 'é'.repeat(10) }] }))).toBe(5);
    expect(estimateResultTokens(mcp({ content: [{ type: 'text', text: 'ab' }], structuredContent: { k: 'v'.repeat(30) } }))).toBe(Math.ceil(JSON.stringify({ k: 'v'.repeat(30) }).length / 4));
  });
});
