/**
 * A manifest's request and response schemas are bounded in bytes, depth and
 * patterns each, and in bytes all together (etc/plugin-answers.json
 * maxSchemaBytes, maxSchemaDepth, maxSchemaPatterns, maxManifestSchemaTotalBytes):
 * the host compiles them with Ajv on its shared thread at a tool's first
 * call, where a big one stalls every plugin and the gateway. Refused at
 * `validate` (inspectManifestFile, what the CLI runs) and at install, and
 * again before the compile for a schema store edited after install.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import type { InstalledPlugin } from '../../src/catalog/catalogContents.js';
import { CallSchemas } from '../../src/host/callSchemas.js';
import { inspectManifestFile } from '../../src/installer/manifestHostChecks.js';
import { jcsDigest } from '../../src/manifest/schemaRefs.js';
import { FIXTURES, refusedWith, testProfile, unwrap, violationCodes, type TestProfile } from '../installer/InstallerHarness.js';
import { anyOfRecursion, nestedRecursions, refDag } from '../support/expensiveSchemas.js';

const MAX_BYTES = pluginAnswerLimits.maxSchemaBytes;
const MAX_DEPTH = pluginAnswerLimits.maxSchemaDepth;
const MAX_PATTERNS = pluginAnswerLimits.maxSchemaPatterns;
const MAX_NODES = pluginAnswerLimits.maxSchemaNodes;
const MAX_TOTAL = pluginAnswerLimits.maxManifestSchemaTotalBytes;
const MAX_EXPANDED = pluginAnswerLimits.maxSchemaExpandedNodes;

/** An object schema of `count` patternProperties, a few KB. */
function patternSchema(count: number): Record<string, unknown> {
  const patternProperties: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) patternProperties[`^x${i}[a-z]+$`] = { type: 'string' };
  return { type: 'object', patternProperties };
}

/** An object schema of described string properties just over `bytes` of JSON, in fewer than maxSchemaNodes objects. */
function wideSchema(bytes: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const schema = { type: 'object', properties };
  for (let i = 0; JSON.stringify(schema).length <= bytes; i++) properties[`p${i}`] = { type: 'string', description: `Property ${i}, described at length so that the bytes come before the objects.` };
  return schema;
}

/** An object schema of `count` objects in all: itself, its properties and count - 2 plain string properties. */
function manyNodesSchema(count: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < count - 2; i++) properties[`p${i}`] = { type: 'string' };
  return { type: 'object', properties };
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
    // About 12 KB, within the bytes: Ajv generates code per subschema.
    ['a request schema of too many objects', () => manyNodesSchema(MAX_NODES + 1), new RegExp(`holds more than ${MAX_NODES} objects and arrays, the most the host compiles`)],
    // A few KB: each pattern is a regular-expression compile of its own.
    ['a request schema naming too many patterns', () => patternSchema(MAX_PATTERNS + 1), new RegExp(`names ${MAX_PATTERNS + 1} patterns, over the ${MAX_PATTERNS} the host compiles`)],
    // About 2.4 KB, within every compile bound: one validation of the caller's arguments walks 2^29 paths (review R13 F2).
    ['a request schema whose $refs form a doubling DAG', () => refDag(29), new RegExp(`expands to more than ${MAX_EXPANDED} subschemas through its \\$refs`)],
    ['a request schema of $anchor refs forming a doubling DAG', () => refDag(29, true), new RegExp(`expands to more than ${MAX_EXPANDED} subschemas through its \\$refs`)],
    // Doubles per level of the arguments' nesting.
    ['a request schema recursing twice on one member', anyOfRecursion, /has 2 \$ref back-edges along one path down the data inside its own recursion/],
    // 575 bytes: a power of the arguments' nesting depth.
    ['a request schema of six recursions nested on one member', () => nestedRecursions(6), /has 2 \$ref back-edges along one path down the data inside its own recursion/],
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

  it('refuses at validate and at install a manifest whose schemas together pass maxManifestSchemaTotalBytes, each within maxSchemaBytes', async () => {
    const p = await testProfile('dev');
    profiles.push(p);
    const pkg = await p.copyFixture('install-schemas');
    const manifestFile = join(pkg, 'manifest.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as { advertised_tools: Array<Record<string, unknown>> };
    // Bundles of two schemas just within maxSchemaBytes each, one more than the total holds.
    const bundles = Math.floor(MAX_TOTAL / (2 * MAX_BYTES)) + 1;
    for (let i = 0; i < bundles; i++) {
      const wide = (side: string): Record<string, unknown> => {
        const schema = wideSchema(MAX_BYTES - 200);
        (schema.properties as Record<string, unknown>)[`${side}${i}`] = { type: 'string' };
        return schema;
      };
      await writeFile(join(pkg, 'schemas', `weather.big${i}.json`), JSON.stringify({ $defs: { request: wide('q'), response: wide('r') } }));
      manifest.advertised_tools.push({ name: `big${i}`, description: `Big ${i}`, risk_class: 'read', schema_ref: `weather.big${i}` });
    }
    await writeFile(manifestFile, JSON.stringify(manifest));
    const why = new RegExp(`^schemas/weather\\.big${bundles - 1}\\.json brings the manifest's request and response schemas to \\d+ bytes, over the ${MAX_TOTAL} the host compiles for one manifest`);
    const report = unwrap(await inspectManifestFile(manifestFile));
    expect(report.violations.map((v) => [v.code, v.pointer])).toEqual([['PLUGIN_SCHEMA_REF_INVALID', `/advertised_tools/${bundles + 1}/schema_ref`]]);
    expect(report.violations[0]!.message).toMatch(why);

    const before = await p.census();
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_SCHEMA_REF_INVALID');
    expect(violationCodes(error)).toEqual(['PLUGIN_SCHEMA_REF_INVALID']);
    expect(error.hint).toContain('together');
    expect(await p.census()).toEqual({ ...before, staging: [] });
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

  it('refuses at call time a store schema past the expansion bound, before the caller\'s arguments are validated against it', async () => {
    const p = await testProfile('dev');
    profiles.push(p);
    const schema = refDag(29);
    const digest = jcsDigest(schema)!;
    const path = p.layout.schemaFile('dag.request', digest);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, JSON.stringify(schema));
    const plugin = { plugin_id: 'dag', variants: [{ tool_name: 't', schema_hashes: { 'dag.request': digest } }] } as unknown as InstalledPlugin;
    const error = new CallSchemas(p.layout).checkArguments(plugin, 't', { a: 1 }, undefined);
    expect(error?.code).toBe('PLUGIN_SCHEMA_REF_INVALID');
    expect(error?.message).toMatch(new RegExp(`schema 'dag.request' at .* expands to more than ${MAX_EXPANDED} subschemas`));
    expect(error?.hint).toContain('expan');
  });

  it('remembers a refused store schema for the host\'s life: later calls do not read, hash or measure it again', async () => {
    const p = await testProfile('dev');
    profiles.push(p);
    const schema = wideSchema(MAX_BYTES);
    const digest = jcsDigest(schema)!;
    const path = p.layout.schemaFile('many.request', digest);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, JSON.stringify(schema));
    const plugin = { plugin_id: 'many', variants: [{ tool_name: 't', schema_hashes: { 'many.request': digest } }] } as unknown as InstalledPlugin;
    const schemas = new CallSchemas(p.layout);
    const first = schemas.checkArguments(plugin, 't', {}, undefined);
    expect(first?.code).toBe('PLUGIN_SCHEMA_REF_INVALID');
    expect(first?.message).toContain(`over the ${MAX_BYTES} the host compiles`);
    // Gone from the store: a call that read it again would say it cannot be read.
    await rm(path);
    for (let call = 0; call < 2; call++) expect(schemas.checkArguments(plugin, 't', {}, undefined)?.message).toBe(first?.message);
  });
});
