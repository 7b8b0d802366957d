/**
 * The contract's check order through `install()`: with violations at several
 * stages, the earliest stage's code is the error's code and every violation
 * is listed; gating stages stop the run. And `inspect()`, which reports the
 * same violations without ever writing the catalog.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editManifest, FIXTURES, refusedWith, testProfile, unwrap, violationCodes, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
afterEach(async () => {
  await p.dispose();
});

const greeterWith = async (edit: (m: Record<string, unknown>) => void): Promise<string> => {
  const pkg = await p.copyFixture('install-node');
  await editManifest(pkg, edit);
  return pkg;
};

const capabilities = (m: Record<string, unknown>): Record<string, unknown> => m.declared_capabilities as Record<string, unknown>;

describe('the contract order through install()', () => {
  it('env denylist wins over credential descriptors, and both are listed', async () => {
    p = await testProfile('dev');
    const pkg = await greeterWith((m) => {
      m.requirements = { needs_user_creds: ['GUM_PROFILE'] };
    });
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_ENV_PROHIBITED');
    expect(error.message).toContain("PLUGIN_ENV_PROHIBITED: needs_user_creds entry 'GUM_PROFILE' on plugin 'greeter' is a prohibited env var name.");
    expect(violationCodes(error)).toEqual(['PLUGIN_ENV_PROHIBITED', 'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID']);
  });

  it('namespace wins over the env denylist', async () => {
    p = await testProfile('dev');
    const pkg = await greeterWith((m) => {
      m.plugin_id = 'gmail-helper';
      capabilities(m).env_allow = ['OPENAI_API_KEY'];
    });
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_NAMESPACE_CONFLICT');
    expect(error.details).toMatchObject({ violations: [{ stage: 'namespace', pointer: '/namespace_owner' }, { stage: 'env', pointer: '/declared_capabilities/env_allow' }] });
    expect(violationCodes(error)).toEqual(['PLUGIN_NAMESPACE_CONFLICT', 'PLUGIN_ENV_PROHIBITED']);
  });

  it('lists one violation per stage, in stage order: namespace, env, credentials, schema refs', async () => {
    p = await testProfile('dev');
    const pkg = await greeterWith((m) => {
      delete m.namespace_owner;
      capabilities(m).env_allow = ['ANTHROPIC_API_KEY'];
      m.requirements = { needs_user_creds: ['GREETER_TOKEN'] };
      (m.advertised_tools as Array<Record<string, unknown>>)[1]!.schema_ref = 'greeter.missing';
    });
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_NAMESPACE_CONFLICT');
    const violations = (error.details as { violations: Array<{ stage: string; pointer: string }> }).violations;
    // One violation each: the missing owner is reported once, not again by the ownership check.
    expect(violations.map((v) => [v.stage, v.pointer])).toEqual([
      ['namespace', '/namespace_owner'],
      ['env', '/declared_capabilities/env_allow'],
      ['credentials', '/requirements/credential_descriptors'],
      ['schema_refs', '/advertised_tools/1/schema_ref'],
    ]);
    expect(violationCodes(error)).toEqual(['PLUGIN_NAMESPACE_CONFLICT', 'PLUGIN_ENV_PROHIBITED', 'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', 'PLUGIN_SCHEMA_REF_INVALID']);
  });

  it('stops at the Shape 2 gate: nothing after it is reported', async () => {
    p = await testProfile('dev');
    const pkg = await greeterWith((m) => {
      m.shape = 'grpc-subprocess';
      m.plugin_id = 'gmail';
      capabilities(m).env_allow = ['GUM_HOME'];
    });
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_SHAPE_UNSUPPORTED');
    expect(violationCodes(error)).toEqual(['PLUGIN_SHAPE_UNSUPPORTED']);
  });

  it('stops at the schema version before the shape gate', async () => {
    p = await testProfile('dev');
    const pkg = await greeterWith((m) => {
      m.manifest_schema_version = 2;
      m.shape = 'grpc-subprocess';
    });
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED');
    expect(violationCodes(error)).toEqual(['PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED']);
  });

  it('refuses a declared op_id outside the plugin namespace (TOML form)', async () => {
    p = await testProfile('dev');
    const pkg = await p.copyFixture('install-toml');
    const file = join(pkg, 'plugin.toml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('op_id = "notes.search"', 'op_id = "gmail.send"'));
    const error = refusedWith(await p.installer.install(pkg), 'PLUGIN_NAMESPACE_CONFLICT');
    expect(error.details).toMatchObject({ violations: [{ pointer: '/tools/0/op_id', message: expect.stringContaining('must start with "notes."') }] });
  });
});

describe('inspect()', () => {
  it('returns every violation and leaves the catalog, the disk and staging untouched', async () => {
    p = await testProfile('dev');
    unwrap(await p.installer.install(await p.copyFixture('install-node')));
    const generation = unwrap(await p.store.snapshot()).install_generation;
    const before = await p.census();
    const pkg = await p.copyFixture('install-node', 'rival');
    await editManifest(pkg, (m) => {
      m.namespace_owner = 'io.example.rival';
      capabilities(m).env_allow = ['GUM_TOKEN', 'OPENAI_API_KEY'];
      m.requirements = { needs_user_creds: ['RIVAL_TOKEN'] };
      (m.advertised_tools as Array<Record<string, unknown>>)[0]!.schema_ref = 'x%2Fy';
    });

    const inspection = unwrap(await p.installer.inspect(pkg));
    expect(inspection.report.manifest).toBeUndefined();
    expect(inspection.report.violations.map((v) => [v.stage, v.code])).toEqual([
      ['namespace', 'PLUGIN_NAMESPACE_CONFLICT'],
      ['env', 'PLUGIN_ENV_PROHIBITED'],
      ['credentials', 'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID'],
      ['schema_refs', 'PLUGIN_SCHEMA_REF_INVALID'],
    ]);
    expect(inspection.report.violations[0]!.message).toContain("owned by 'io.example.greeter'");
    expect(inspection.package).toEqual({ manifestFile: 'manifest.json', source: { kind: 'directory', path: pkg }, stats: expect.any(Object) });

    expect(unwrap(await p.store.snapshot()).install_generation).toBe(generation);
    expect(await p.census()).toEqual(before);
  });

  it('reports a clean package with its normalized manifest and installs nothing', async () => {
    p = await testProfile('dev');
    const inspection = unwrap(await p.installer.inspect(await p.copyFixture('install-schemas')));
    expect(inspection.report.violations).toEqual([]);
    expect(inspection.report.manifest?.plugin_id).toBe('weather');
    expect(inspection.report.manifest?.schemas.map((s) => s.ref).sort()).toEqual([
      'weather.alerts.request',
      'weather.alerts.response',
      'weather.forecast.request',
      'weather.forecast.response',
    ]);
    const census = await p.census();
    expect(census).toEqual({ plugins: [], opIds: [], installRoots: [], schemaFiles: [], staging: [], owners: {} });
    expect(unwrap(await p.store.snapshot()).install_generation).toBe(0);
  });

  it('reports no violation for an esm-module package, whose entry module is what gets pinned', async () => {
    p = await testProfile('dev');
    const inspection = unwrap(await p.installer.inspect(join(FIXTURES, 'esm-all-capabilities')));
    expect(inspection.report.violations).toEqual([]);
    expect(inspection.report.manifest).toMatchObject({ shape: 'esm-module', entry: 'dist/index.mjs' });
  });
});
