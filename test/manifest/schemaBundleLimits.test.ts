/**
 * A manifest's request and response schemas are bounded in bytes and depth
 * (etc/plugin-answers.json maxManifestSchemaBytes, maxManifestSchemaDepth):
 * the host compiles them with Ajv on its shared thread at a tool's first
 * call, where a big one stalls every plugin and the gateway. Refused at
 * `validate` (inspectManifestFile, what the CLI runs) and at install, and
 * again before the compile for a schema store edited after install.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import type { InstalledPlugin } from '../../src/catalog/catalogContents.js';
import { CallSchemas } from '../../src/host/callSchemas.js';
import { inspectManifestFile } from '../../src/installer/manifestHostChecks.js';
import { jcsDigest } from '../../src/manifest/schemaRefs.js';
import { FIXTURES, refusedWith, testProfile, unwrap, violationCodes, type TestProfile } from '../installer/InstallerHarness.js';

const MAX_BYTES = pluginAnswerLimits.maxManifestSchemaBytes;
const MAX_DEPTH = pluginAnswerLimits.maxManifestSchemaDepth;

/** An object schema of plain string properties just over `bytes` of JSON. */
function wideSchema(bytes: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const schema = { type: 'object', properties };
  for (let i = 0; JSON.stringify(schema).length <= bytes; i++) properties[`p${i}`] = { type: 'string' };
  return schema;
}

/** Objects in objects, `levels` deep: JSON depth 2 * levels + 1, small in bytes. */
function deepSchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema } };
  return schema;
}

let profiles: TestProfile[] = [];
afterEach(async () => {
  await Promise.all(profiles.map((p) => p.dispose()));
  profiles = [];
});

/** The install-schemas fixture (a GUM plugin with two bundles) with `$defs.request` of weather.forecast replaced. */
async function pluginWithRequest(request: Record<string, unknown>): Promise<{ p: TestProfile; pkg: string }> {
  const p = await testProfile('dev');
  profiles.push(p);
  const pkg = await p.copyFixture('install-schemas');
  const file = join(pkg, 'schemas', 'weather.forecast.json');
  const bundle = JSON.parse(await readFile(file, 'utf8')) as { $defs: Record<string, unknown> };
  bundle.$defs.request = request;
  await writeFile(file, JSON.stringify(bundle));
  return { p, pkg };
}

describe('manifest schema bounds', () => {
  const cases: Array<[string, () => Record<string, unknown>, RegExp]> = [
    ['an oversized request schema', () => wideSchema(MAX_BYTES), new RegExp(`over the ${MAX_BYTES} the host compiles`)],
    // Within the bundle's own parse depth (64), so only the schema bound refuses it.
    ['a too-deep request schema', () => deepSchema(Math.ceil(MAX_DEPTH / 2) + 2), new RegExp(`nests deeper than ${MAX_DEPTH} levels at '/properties/a/`)],
  ];

  it.each(cases)('refuses %s at validate and at install, naming the schema', async (_name, make, why) => {
    const { p, pkg } = await pluginWithRequest(make());
    const report = unwrap(await inspectManifestFile(join(pkg, 'manifest.json')));
    expect(report.violations.map((v) => [v.code, v.pointer])).toEqual([['PLUGIN_SCHEMA_REF_INVALID', '/advertised_tools/0/schema_ref']]);
    expect(report.violations[0]!.message).toContain('schemas/weather.forecast.json#/$defs/request ');
    expect(report.violations[0]!.message).toMatch(why);

    const before = await p.census();
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_SCHEMA_REF_INVALID');
    expect(violationCodes(error)).toEqual(['PLUGIN_SCHEMA_REF_INVALID']);
    expect(error.message).toMatch(why);
    expect(await p.census()).toEqual({ ...before, staging: [] });
  });

  it('passes the fixtures’ schemas, and one just within both bounds', async () => {
    for (const manifest of [
      join(FIXTURES, 'install-schemas', 'manifest.json'),
      join(FIXTURES, 'host-canary', 'plugin.toml'),
      join(FIXTURES, 'install-toml', 'plugin.toml'),
      join(FIXTURES, 'host-published', 'manifest.json'),
      join(FIXTURES, '..', 'manifests', 'plugins', 'schema-refs-ok', 'manifest.json'),
    ]) {
      expect(unwrap(await inspectManifestFile(manifest)).violations, manifest).toEqual([]);
    }
    const within = deepSchema(Math.floor((MAX_DEPTH - 1) / 2));
    const { p, pkg } = await pluginWithRequest(within);
    const plugin = unwrap(await p.installer.install(pkg));
    expect(plugin.variants[0]!.schema_hashes['weather.forecast.request']).toBe(jcsDigest(within));
  });

  it('refuses at call time a schema the store holds over the bound (never validated: an edited lock and store)', async () => {
    const p = await testProfile('dev');
    profiles.push(p);
    const schema = wideSchema(MAX_BYTES);
    const digest = jcsDigest(schema)!;
    const path = p.layout.schemaFile('big.request', digest);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, JSON.stringify(schema));
    const plugin = { plugin_id: 'big', variants: [{ tool_name: 't', schema_hashes: { 'big.request': digest } }] } as unknown as InstalledPlugin;
    const error = new CallSchemas(p.layout).checkArguments(plugin, 't', { p0: 1 }, undefined);
    expect(error?.code).toBe('PLUGIN_SCHEMA_REF_INVALID');
    expect(error?.message).toMatch(new RegExp(`schema 'big.request' at .* is \\d+ bytes, over the ${MAX_BYTES} the host compiles`));
  });
});
