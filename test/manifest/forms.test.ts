/**
 * Every form normalizes into the one model; forms are detected from file
 * names and content; real files and directories are read with their limits;
 * the Open Discovery schema can be replaced by a draft-07 file; the
 * handshake manifest keeps its structure and capability hygiene.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManifestValidator, findManifest, formFromFileName } from '../../src/manifest/ManifestValidator.js';
import { validateHandshakeManifest } from '../../src/manifest/handshake.js';
import type { Violation } from '../../src/manifest/violations.js';
import { fixturesRoot, gumJson, gumTomlText, pairs } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'manifest-forms-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const fixture = (path: string): Buffer => readFileSync(join(fixturesRoot, path));

describe('normalization', () => {
  it('GUM JSON v1: fields, defaults and optional sections', () => {
    const m = new ManifestValidator({ preset: 'gum' }).validateText(fixture('gum-json/valid/fli-full.json'))._unsafeUnwrap();
    expect(m).toMatchObject({
      form: 'gum-json',
      plugin_id: 'fli',
      name: 'Flight Search',
      namespace_owner: 'io.example.flights',
      shape: 'mcp-plugin',
      executable: 'bin/fli-mcp',
      license: 'MIT',
      capabilities: { network: true, fs_write_dir: 'cache', env_allow: ['FLI_USER_AGENT'] },
      requirements: {
        needs_user_creds: ['FLI_API_KEY'],
        canary: { tool: 'search', arguments: { origin: 'SFO', destination: 'JFK', depart_date: '+7d' } },
        rate_policy: { requests_per_minute: 30, burst: 5 },
        cache_ttl: 300,
      },
      output_profiles: { 'fli.compact': { strip_nulls: true, keep_fields: ['price.currency', 'segments[].aircraft'] } },
    });
    expect(m.tools.map((t) => [t.name, t.risk_class, t.confirmation_policy])).toEqual([
      ['search', 'read', 'none'],
      ['book', 'write', 'high_stakes_write'],
    ]);
    expect(m.requirements.credential_descriptors[0]).toEqual({
      alias: 'fli',
      env: 'FLI_API_KEY',
      kind: 'api_key',
      display_name: 'Flight API key',
      setup_hint: 'Create a key at https://flights.example/keys',
    });
    expect(m.raw.plugin_id).toBe('fli');
  });

  it('GUM TOML: plugin id from [plugin].name, display name, command as executable, package, tool names from tool_name', () => {
    const m = new ManifestValidator({ preset: 'gum' }).validateText(gumTomlText(), { fileName: 'plugin.toml' })._unsafeUnwrap();
    expect(m).toMatchObject({
      form: 'gum-toml',
      plugin_id: 'fli',
      name: 'Flight Search',
      executable: 'bin/fli-mcp',
      tos: 'user-accepted',
      package: { source: 'github-release', ref: 'v0.1.0', checksum: `sha256:${'0123456789abcdef'.repeat(4)}` },
      requirements: { canary: { tool: 'search' }, cache_ttl: 300, rate_policy: { requests_per_minute: 60, burst: 10 } },
    });
    expect(m.tools[0]).toMatchObject({
      name: 'search',
      op_id: 'fli.search',
      variant_id: 'fli.search.v1',
      backend_kind: 'mcp-plugin',
      interface_kind: 'mcp-tool',
      capabilities: ['net.http'],
      schema_ref: 'fli.search',
      output_profile: 'fli.compact',
      null_elision_safe_fields: ['itineraries', 'price.currency'],
    });
  });

  it('Open Discovery: plugin id from name, esm-module shape, risk from annotations, network from permissions', () => {
    const m = new ManifestValidator().validateText(fixture('open-discovery/valid/net-utils.json'), { fileName: 'mcp-plugin.json' })._unsafeUnwrap();
    expect(m).toMatchObject({
      form: 'open-discovery',
      plugin_id: 'net-utils',
      name: 'Network Utilities',
      shape: 'esm-module',
      entry: 'dist/index.js',
      sdk: '@modelcontextprotocol/sdk@1',
      capabilities: { network: true, fs_write_dir: '', env_allow: [] },
      dependencies: ['core-utils'],
      registrations: { tools: ['ping', 'flush_dns', 'reset_stack'], resources: ['hosts'], prompts: ['summarize'] },
      permissions: [{ id: 'network', reason: 'sends ICMP' }],
    });
    expect(m.tools.map((t) => [t.name, t.risk_class])).toEqual([
      ['ping', 'read'],
      ['flush_dns', 'write'],
      ['reset_stack', 'destructive'],
    ]);
    const contradicting = JSON.parse(fixture('open-discovery/valid/net-utils.json').toString('utf8')) as { capabilities: { tools: { annotations?: object }[] } };
    contradicting.capabilities.tools[0]!.annotations = { readOnlyHint: true, destructiveHint: true };
    expect(new ManifestValidator().validateValue(contradicting, 'open-discovery')._unsafeUnwrap().tools[0]?.risk_class).toBe('destructive');
    const minimal = new ManifestValidator().validateText(fixture('open-discovery/valid/minimal.json'), { form: 'open-discovery' })._unsafeUnwrap();
    expect([minimal.plugin_id, minimal.name, minimal.capabilities.network, minimal.tools]).toEqual(['echo-tools', 'echo_tools', false, []]);
  });
});

describe('shapes and presets', () => {
  const ndjson = { ...gumJson(), shape: 'ndjson-rpc' };

  it('the neutral preset accepts every runnable shape in the JSON v1 form; the gum preset only mcp-plugin', () => {
    for (const shape of ['mcp-plugin', 'ndjson-rpc', 'handshake', 'esm-module']) {
      expect(new ManifestValidator().validateValue({ ...gumJson(), shape }, 'gum-json')._unsafeUnwrap().shape).toBe(shape);
    }
    expect(new ManifestValidator({ preset: 'gum' }).validateValue(ndjson, 'gum-json')._unsafeUnwrapErr().code).toBe('PLUGIN_SHAPE_UNSUPPORTED');
  });

  it('allowedShapes overrides the preset, and Open Discovery needs esm-module', () => {
    const onlyNdjson = new ManifestValidator({ preset: 'gum', allowedShapes: ['ndjson-rpc'] });
    expect(onlyNdjson.validateValue(ndjson, 'gum-json').isOk()).toBe(true);
    const od = new ManifestValidator({ preset: 'gum' }).validateText(fixture('open-discovery/valid/minimal.json'), { form: 'open-discovery' });
    expect(pairs(od._unsafeUnwrapErr().details.violations as Violation[])).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '']]);
  });
});

describe('form detection and files', () => {
  it('detects the form from the file name, then from content', () => {
    expect(['manifest.json', 'x/plugin.toml', 'MCP-PLUGIN.json', 'other.json'].map(formFromFileName)).toEqual([
      'gum-json',
      'gum-toml',
      'open-discovery',
      undefined,
    ]);
    const v = new ManifestValidator();
    expect(v.inspectText(fixture('open-discovery/valid/net-utils.json'))._unsafeUnwrap().form).toBe('open-discovery');
    expect(v.inspectText(fixture('gum-json/valid/fli.json'))._unsafeUnwrap().form).toBe('gum-json');
    expect(v.inspectText(gumTomlText())._unsafeUnwrap().form).toBe('gum-toml');
  });

  it('finds the manifest of a plugin directory, or reports PLUGIN_MANIFEST_NOT_FOUND', async () => {
    expect((await findManifest(join(fixturesRoot, 'plugins/toml-dir')))._unsafeUnwrap()).toMatch(/plugin\.toml$/);
    expect((await findManifest(tmp))._unsafeUnwrapErr().code).toBe('PLUGIN_MANIFEST_NOT_FOUND');
    const m = await new ManifestValidator().validateDirectory(join(fixturesRoot, 'plugins/mcp-plugin-dir'));
    expect(m._unsafeUnwrap().form).toBe('open-discovery');
  });

  it('refuses a directory holding two plugin manifests as an install does (PLUGIN_MANIFEST_AMBIGUOUS), and reads a bundle beside one', async () => {
    const dir = mkdtempSync(join(tmp, 'two-'));
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(gumJson()));
    expect((await new ManifestValidator({ preset: 'gum' }).validateDirectory(dir))._unsafeUnwrap().form).toBe('gum-json');
    // A reviewer who reads plugin.toml would judge other powers than validate (and the install) would read in manifest.json.
    writeFileSync(join(dir, 'plugin.toml'), gumTomlText());
    const refused = (await new ManifestValidator({ preset: 'gum' }).validateDirectory(dir))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_MANIFEST_AMBIGUOUS', details: { manifest_files: ['manifest.json', 'plugin.toml'] } });
    expect(refused.hint).toMatch(/remove plugin\.toml or manifest\.json/);
    expect((await findManifest(dir))._unsafeUnwrapErr().code).toBe('PLUGIN_MANIFEST_AMBIGUOUS');
    // An MCP Bundle's manifest.json is another format: beside one GUM manifest it is the package's, as at install.
    const bundle = { manifest_version: '0.3', name: 'b', version: '1.0.0', description: 'd', author: { name: 'a' }, server: { type: 'binary', entry_point: 'bin/hello' } };
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(bundle));
    expect((await findManifest(dir))._unsafeUnwrap()).toBe(join(dir, 'manifest.json'));
  });

  it('validates a TOML plugin directory with its schema bundles', async () => {
    const m = (await new ManifestValidator({ preset: 'gum' }).validateDirectory(join(fixturesRoot, 'plugins/toml-dir')))._unsafeUnwrap();
    expect(m.schemas.map((s) => s.ref)).toEqual(['fli.search.request', 'fli.search.response']);
  });

  it('applies the size limit to files before reading them whole', async () => {
    const path = join(tmp, 'manifest.json');
    writeFileSync(path, JSON.stringify({ ...gumJson(), description: 'x'.repeat(4096) }));
    const report = (await new ManifestValidator({ maxBytes: 1024 }).inspectFile(path))._unsafeUnwrap();
    expect(report.violations.map((v) => v.message)).toEqual(['manifest is over the 1024-byte limit']);
  });
});

describe('Open Discovery schema override (SCHEMA_PATH)', () => {
  const custom = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    required: ['name', 'version', 'sdk', 'entry', 'capabilities', 'license'],
    properties: { license: { type: 'string' } },
  };

  it('loads a draft-07 schema file and validates with it, keeping the validator\'s own identity checks', async () => {
    const path = join(tmp, 'custom.schema.json');
    writeFileSync(path, JSON.stringify(custom));
    const v = (await ManifestValidator.create({ openDiscoverySchemaPath: path }))._unsafeUnwrap();
    const missingLicense = v.validateText(fixture('open-discovery/valid/minimal.json'), { form: 'open-discovery' });
    expect(pairs(missingLicense._unsafeUnwrapErr().details.violations as Violation[])).toEqual([['PLUGIN_MANIFEST_INVALID', '/license']]);
    const escaping = { ...JSON.parse(fixture('open-discovery/valid/minimal.json').toString()), license: 'MIT', entry: '../x.js' };
    expect(v.validateValue(escaping, 'open-discovery')._unsafeUnwrapErr().code).toBe('PLUGIN_ENTRY_INVALID');
  });

  it('refuses a missing file, a non-draft-07 schema and a schema that does not compile with HOST_INVALID_OPTIONS', async () => {
    const draft2020 = join(tmp, '2020.json');
    writeFileSync(draft2020, JSON.stringify({ ...custom, $schema: 'https://json-schema.org/draft/2020-12/schema' }));
    const broken = join(tmp, 'broken.json');
    writeFileSync(broken, JSON.stringify({ type: 'object', properties: { a: { type: 'nope' } } }));
    for (const path of [join(tmp, 'missing.json'), draft2020, broken]) {
      expect((await ManifestValidator.create({ openDiscoverySchemaPath: path }))._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    }
  });
});

describe('handshake manifest', () => {
  const valid = { plugin_id: 'rterm.echo', plugin_version: '1.0.0', protocol_version: 'v1', exposed_tools: ['echo'] };

  it('returns the typed manifest, capabilities only when declared', () => {
    expect(validateHandshakeManifest(valid)._unsafeUnwrap()).toEqual(valid);
    expect(validateHandshakeManifest({ ...valid, capabilities: ['fs.read'] })._unsafeUnwrap().capabilities).toEqual(['fs.read']);
  });

  it('reports every bad capability value with PLUGIN_HANDSHAKE_FAILED', () => {
    const error = validateHandshakeManifest({ ...valid, capabilities: ['a', '', 'b ', 'a', '\t'] })._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect((error.details.violations as Violation[]).map((v) => [v.pointer, v.message])).toEqual([
      ['/capabilities/1', 'capability is empty'],
      ['/capabilities/2', 'capability "b " is padded with whitespace'],
      ['/capabilities/3', 'capability "a" is declared twice'],
      ['/capabilities/4', 'capability is empty'],
    ]);
  });

  it('rejects values that are not objects', () => {
    for (const value of [null, 'x', [], 3]) expect(validateHandshakeManifest(value)._unsafeUnwrapErr().code).toBe('PLUGIN_HANDSHAKE_FAILED');
  });
});
