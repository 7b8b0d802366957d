/**
 * Seeds 000 and 001 (GUM plugin author guide and contract): the contract's
 * own rules hold for every GUM-form manifest whatever preset the host runs
 * under; every field the guide's table and the contract's Manifest ABI
 * require is required; the Shape 2 gate and the executable refusals.
 */
import { chmod, copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { HostPool } from '../support/hostHarness.js';
import { gumJson, gumTomlText, pairs } from '../manifest/helpers.js';
import { editManifest, refusedWith, testProfile, violationCodes, type TestProfile } from '../installer/InstallerHarness.js';

const neutral = new ManifestValidator({ preset: 'neutral' });

describe('seed 000 §2 manifest fields under the neutral preset', () => {
  it('§2 declared_capabilities.env_allow: GUM_PROFILE is refused with PLUGIN_ENV_PROHIBITED', () => {
    const doc = gumJson();
    doc.declared_capabilities = { ...(doc.declared_capabilities as object), env_allow: ['TZ', 'GUM_PROFILE'] };
    const report = neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_ENV_PROHIBITED', '/declared_capabilities/env_allow/1']]);
    expect(neutral.validateValue(doc, 'gum-json')._unsafeUnwrapErr().code).toBe('PLUGIN_ENV_PROHIBITED');
  });

  it('§2 declared_capabilities.env_allow: the _GUM* names are refused too', () => {
    const doc = gumJson();
    doc.declared_capabilities = { ...(doc.declared_capabilities as object), env_allow: ['_GUM_SESSION'] };
    expect(pairs(neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations)).toEqual([['PLUGIN_ENV_PROHIBITED', '/declared_capabilities/env_allow/0']]);
  });

  it('§2 cross-references, reserved first-party prefixes: plugin_id "gmail" is refused with PLUGIN_NAMESPACE_CONFLICT', () => {
    const doc = { ...gumJson(), plugin_id: 'gmail' };
    const report = neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_NAMESPACE_CONFLICT', '/plugin_id']]);
  });

  it('§2 cross-references, reserved first-party prefixes: "gmail-labels" is reserved, "gmailer" is not', () => {
    expect(pairs(neutral.inspectValue({ ...gumJson(), plugin_id: 'gmail-labels' }, 'gum-json')._unsafeUnwrap().violations)).toEqual([
      ['PLUGIN_NAMESPACE_CONFLICT', '/plugin_id'],
    ]);
    expect(neutral.inspectValue({ ...gumJson(), plugin_id: 'gmailer' }, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });

  it('§2 the TOML form is held to the same rules (the plugin id is [plugin].name)', () => {
    const text = gumTomlText().replace('name = "fli"', 'name = "drive"');
    const report = neutral.inspectText(text, { form: 'gum-toml' })._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_NAMESPACE_CONFLICT', '/plugin/name']]);
  });

  it('§2 first-party bundled plugins may claim a reserved prefix', () => {
    const firstParty = new ManifestValidator({ preset: 'neutral', firstParty: true });
    expect(firstParty.inspectValue({ ...gumJson(), plugin_id: 'gmail' }, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });

  it('§2 the valid example manifest still passes under neutral', () => {
    expect(neutral.inspectValue(gumJson(), 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });
});

describe('seed 000 §2 install through PluginHost under the default preset', () => {
  const pool = new HostPool();
  const packages: string[] = [];
  afterEach(() => pool.cleanup());
  afterAll(() => Promise.all(packages.map((dir) => rm(dir, { recursive: true, force: true }))));

  /** The host-ndjson fixture package with its manifest bent by `edit`. */
  async function bentPackage(edit: (manifest: Record<string, unknown>) => void): Promise<string> {
    const dir = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/host-ndjson'), { bundle: ['bin/echo.mjs'] });
    packages.push(dir);
    const path = join(dir, 'manifest.json');
    const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    edit(manifest);
    await writeFile(path, JSON.stringify(manifest));
    return dir;
  }

  it('§2 declared_capabilities.env_allow: a neutral host refuses to install a GUM manifest allowing GUM_PROFILE', async () => {
    const host = await pool.open(await pool.profile());
    const pkg = await bentPackage((m) => {
      m.declared_capabilities = { network: false, fs_write_dir: '', env_allow: ['GUM_PROFILE'] };
    });
    expect((await host.install(pkg, { canary: false }))._unsafeUnwrapErr().code).toBe('PLUGIN_ENV_PROHIBITED');
  });

  it('§2 reserved first-party prefixes: a neutral host refuses to install a GUM manifest with plugin_id "gmail"', async () => {
    const host = await pool.open(await pool.profile());
    const pkg = await bentPackage((m) => {
      m.plugin_id = 'gmail';
    });
    expect((await host.install(pkg, { canary: false }))._unsafeUnwrapErr().code).toBe('PLUGIN_NAMESPACE_CONFLICT');
  });

  it.each(['bin/python3', 'bin/python3.11', 'bin/python'])(
    '§6 "executable … points to a shell interpreter (sh, bash, python)": a Python interpreter shipped as the executable (%s) is PLUGIN_EXECUTABLE_UNTRUSTED',
    async (executable) => {
      const host = await pool.open(await pool.profile());
      const pkg = await bentPackage((m) => {
        m.executable = executable;
      });
      await copyFile('/usr/bin/python3.11', join(pkg, executable));
      await chmod(join(pkg, executable), 0o755);
      const error = (await host.install(pkg, { canary: false }))._unsafeUnwrapErr();
      expect(error.code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
      expect(error.details).toMatchObject({ reason: 'shell_interpreter' });
      expect((await host.list())._unsafeUnwrap()).toEqual([]);
    },
  );
});

describe('seed 000 §2 field-by-field: "Every field below is required unless marked optional"', () => {
  const gum = new ManifestValidator({});

  it.each([
    ['manifest_schema_version', 'PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED'],
    ['plugin_id', 'PLUGIN_MANIFEST_INVALID'],
    ['name', 'PLUGIN_MANIFEST_INVALID'],
    ['version', 'PLUGIN_MANIFEST_INVALID'],
    ['namespace_owner', 'PLUGIN_NAMESPACE_CONFLICT'],
    ['shape', 'PLUGIN_MANIFEST_INVALID'],
    ['executable', 'PLUGIN_MANIFEST_INVALID'],
    ['advertised_tools', 'PLUGIN_MANIFEST_INVALID'],
    ['declared_capabilities', 'PLUGIN_MANIFEST_INVALID'],
  ])('§2 a third-party manifest without %s is refused with %s at that field', (field, code) => {
    const doc = gumJson();
    delete doc[field];
    expect(pairs(gum.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations)).toEqual([[code, `/${field}`]]);
  });

  it.each([
    ['advertised_tools', 'name'],
    ['advertised_tools', 'risk_class'],
    ['declared_capabilities', 'network'],
    ['declared_capabilities', 'fs_write_dir'],
    ['declared_capabilities', 'env_allow'],
  ])('§2 %s.%s is required: its absence is PLUGIN_MANIFEST_INVALID at the field', (parent, field) => {
    const doc = gumJson();
    const holder = parent === 'advertised_tools' ? (doc.advertised_tools as Array<Record<string, unknown>>)[0]! : (doc.declared_capabilities as Record<string, unknown>);
    delete holder[field];
    const pointer = parent === 'advertised_tools' ? `/advertised_tools/0/${field}` : `/declared_capabilities/${field}`;
    expect(pairs(gum.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations)).toEqual([['PLUGIN_MANIFEST_INVALID', pointer]]);
  });

  it('§2 plugin_id matches ^[a-z][a-z0-9-]{0,63}$: 1 and 64 characters pass, 65 and a non-letter start or other characters fail', () => {
    const violations = (id: string) => pairs(gum.inspectValue({ ...gumJson(), plugin_id: id }, 'gum-json')._unsafeUnwrap().violations);
    for (const id of ['a', 'a'.repeat(64), 'fli-2', 'x-']) expect(violations(id), id).toEqual([]);
    for (const id of ['a'.repeat(65), '1fli', '-fli', 'Fli', 'fli_2', 'fli.x', '']) expect(violations(id), id).toEqual([['PLUGIN_MANIFEST_INVALID', '/plugin_id']]);
  });

  it('§2 risk_class is one of read, write, destructive', () => {
    const withRisk = (risk: string) => {
      const doc = gumJson();
      (doc.advertised_tools as Array<Record<string, unknown>>)[0]!.risk_class = risk;
      return pairs(gum.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations);
    };
    for (const risk of ['read', 'write', 'destructive']) expect(withRisk(risk), risk).toEqual([]);
    for (const risk of ['admin', 'READ', '']) expect(withRisk(risk), risk).toEqual([['PLUGIN_MANIFEST_INVALID', '/advertised_tools/0/risk_class']]);
  });
});

describe('seed 001 Manifest ABI: "Every plugin manifest MUST declare" (the TOML contract form)', () => {
  const gum = new ManifestValidator({});
  const violationsOf = (text: string) => pairs(gum.inspectText(text, { form: 'gum-toml' })._unsafeUnwrap().violations);

  it('the contract fixture declaring everything passes', () => {
    expect(violationsOf(gumTomlText())).toEqual([]);
  });

  it.each([
    ['name', 'PLUGIN_MANIFEST_INVALID', '/plugin/name'],
    ['version', 'PLUGIN_MANIFEST_INVALID', '/plugin/version'],
    ['description', 'PLUGIN_MANIFEST_INVALID', '/plugin/description'],
    ['namespace_owner', 'PLUGIN_NAMESPACE_CONFLICT', '/plugin/namespace_owner'],
    ['shape', 'PLUGIN_MANIFEST_INVALID', '/plugin/shape'],
    ['command', 'PLUGIN_MANIFEST_INVALID', '/plugin/command'],
    ['license', 'PLUGIN_MANIFEST_INVALID', '/plugin/license'],
    ['tos', 'PLUGIN_MANIFEST_INVALID', '/plugin/tos'],
    ['risk', 'PLUGIN_MANIFEST_INVALID', '/plugin/risk'],
    ['source', 'PLUGIN_MANIFEST_INVALID', '/package/source'],
    ['ref', 'PLUGIN_MANIFEST_INVALID', '/package/ref'],
    ['checksum', 'PLUGIN_MANIFEST_INVALID', '/package/checksum'],
    ['cache_ttl', 'PLUGIN_MANIFEST_INVALID', '/requirements/cache_ttl'],
    ['op_id', 'PLUGIN_MANIFEST_INVALID', '/tools/0/op_id'],
    ['variant_id', 'PLUGIN_MANIFEST_INVALID', '/tools/0/variant_id'],
    ['backend_kind', 'PLUGIN_MANIFEST_INVALID', '/tools/0/backend_kind'],
    ['interface_kind', 'PLUGIN_MANIFEST_INVALID', '/tools/0/interface_kind'],
    ['risk_class', 'PLUGIN_MANIFEST_INVALID', '/tools/0/risk_class'],
    ['capabilities', 'PLUGIN_MANIFEST_INVALID', '/tools/0/capabilities'],
    ['scopes', 'PLUGIN_MANIFEST_INVALID', '/tools/0/scopes'],
    ['schema_ref', 'PLUGIN_SCHEMA_REF_INVALID', '/tools/0/schema_ref'],
    ['tool_name', 'PLUGIN_BINDING_INVALID', '/tools/0/tool_name'],
  ])('without %s the manifest is refused with %s at %s', (key, code, pointer) => {
    const text = gumTomlText().replace(new RegExp(`^${key} = .*\\n`, 'm'), '');
    expect(violationsOf(text)).toEqual([[code, pointer]]);
  });

  it.each([
    ['rate policy', '[requirements.rate_policy]\nrequests_per_minute = 60\nburst = 10\n', '/requirements/rate_policy'],
    ['canary', '[requirements.canary]\ntool = "search"\nargs = { origin = "SFO", destination = "JFK", depart_date = "+7d" }\n', '/requirements/canary'],
  ])('[requirements] without its %s is refused with PLUGIN_MANIFEST_INVALID', (_what, block, pointer) => {
    const text = gumTomlText();
    expect(text).toContain(block);
    expect(violationsOf(text.replace(block, ''))).toEqual([['PLUGIN_MANIFEST_INVALID', pointer]]);
  });
});

describe('seed 001 Plugin Shapes: "gum plugin install rejects third-party Shape 2 manifests with PLUGIN_SHAPE_UNSUPPORTED"', () => {
  // A host that runs first-party Shape 2 ABI fixtures lists grpc-subprocess; a third party still may not use it.
  const shape2Host = new ManifestValidator({ allowedShapes: ['mcp-plugin', 'grpc-subprocess'] });
  const grpcTool = '\n[[tools]]\nop_id = "fli.grpc"\nvariant_id = "fli.grpc.v1"\nbackend_kind = "grpc-plugin"\ninterface_kind = "rpc"\nrisk_class = "read"\ncapabilities = []\nscopes = []\nschema_ref = "fli.search"\noutput_profile = "fli.compact"\nnull_elision_safe_fields = ["*"]\nrpc_service = "fli.v1.Flights"\nrpc_method = "Search"\n';

  it('a third-party [plugin].shape = "grpc-subprocess" is refused even by a host that accepts the shape for first-party plugins', () => {
    const text = gumTomlText().replace('shape = "mcp-plugin"', 'shape = "grpc-subprocess"');
    expect(pairs(shape2Host.inspectText(text, { form: 'gum-toml' })._unsafeUnwrap().violations)).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/plugin/shape']]);
    expect(pairs(shape2Host.inspectValue({ ...gumJson(), shape: 'grpc-subprocess' }, 'gum-json')._unsafeUnwrap().violations)).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/shape']]);
  });

  it('a third-party backend_kind = "grpc-plugin" tool with complete selectors is refused there too; the same manifest as first-party passes', () => {
    expect(pairs(shape2Host.inspectText(gumTomlText() + grpcTool, { form: 'gum-toml' })._unsafeUnwrap().violations)).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/tools/1/backend_kind']]);
    expect(shape2Host.inspectText(gumTomlText() + grpcTool, { form: 'gum-toml', firstParty: true })._unsafeUnwrap().violations).toEqual([]);
  });
});

describe('seed 001 Plugin Shapes: the Shape 2 gate "happens before schema copy, executable staging, canary execution, or registry writes"', () => {
  let profile: TestProfile | undefined;
  afterEach(async () => {
    await profile?.dispose();
    profile = undefined;
  });

  it('a third-party grpc-subprocess package with schemas leaves the schema store, staging, install roots and catalog as they were; neither the trust question nor the status hook (the canary) runs', async () => {
    const hookRuns: string[] = [];
    profile = await testProfile('dev', { allowedShapes: ['mcp-plugin', 'grpc-subprocess'] });
    const pkg = await profile.copyFixture('install-schemas');
    await editManifest(pkg, (m) => {
      m.shape = 'grpc-subprocess';
    });
    const before = await profile.census();
    const installed = await profile.installer.install(pkg, {
      accept: () => {
        hookRuns.push('accept');
        return true;
      },
      initialStatus: () => {
        hookRuns.push('initialStatus');
        return 'active';
      },
    });
    const error = refusedWith(installed, 'PLUGIN_SHAPE_UNSUPPORTED');
    expect(violationCodes(error)).toEqual(['PLUGIN_SHAPE_UNSUPPORTED']);
    expect(await profile.census()).toEqual(before);
    expect(hookRuns).toEqual([]);
  });
});
