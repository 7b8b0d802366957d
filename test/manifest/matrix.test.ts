/**
 * The GUM test-matrix rows this module owns, named after them: manifest
 * schema-version placement, third-party Shape 2 rejection, binding schema,
 * credential descriptors, schema ref collision, strip-nulls safety, and the
 * check order that decides which code wins.
 */
import { describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import type { Violation } from '../../src/manifest/violations.js';
import { gumJson, gumTomlText, pairs } from './helpers.js';

const gum = new ManifestValidator({ preset: 'gum' });
const toml = (text: string, firstParty = false): readonly Violation[] =>
  gum.inspectText(text, { form: 'gum-toml', firstParty })._unsafeUnwrap().violations;
const json = (doc: unknown, validator = gum): readonly Violation[] =>
  validator.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations;

const GRPC_TOOL = `
[[tools]]
op_id = "fli.grpc"
variant_id = "fli.grpc.v1"
backend_kind = "grpc-plugin"
interface_kind = "rpc"
risk_class = "read"
capabilities = []
scopes = []
schema_ref = "fli.grpc"
raw_result_allowed = true
token_budget_exception = { max_tokens = 1000, reason = "ABI fixture" }
`;

describe('TestManifestSchemaVersionPlacement', () => {
  it('rejects manifest_schema_version nested inside [plugin] even when the top level has it too', () => {
    const text = gumTomlText().replace('[plugin]\n', '[plugin]\nmanifest_schema_version = 1\n');
    expect(pairs(toml(text))).toEqual([['PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED', '/plugin/manifest_schema_version']]);
  });

  it('rejects a nested version for first-party manifests as well', () => {
    const text = gumTomlText().replace('manifest_schema_version = 1\n', '').replace('[plugin]\n', '[plugin]\nmanifest_schema_version = 1\n');
    expect(pairs(toml(text, true))).toEqual([['PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED', '/plugin/manifest_schema_version']]);
  });

  it('rejects a missing version on a third-party manifest and allows it on a first-party one', () => {
    const text = gumTomlText().replace('manifest_schema_version = 1\n', '');
    expect(pairs(toml(text))).toEqual([['PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED', '/manifest_schema_version']]);
    expect(toml(text, true)).toEqual([]);
  });

  it('rejects versions other than exactly 1 in both GUM forms', () => {
    for (const v of [0, 2, '1', true, null, 1.5]) {
      expect(pairs(json({ ...gumJson(), manifest_schema_version: v }))).toEqual([
        ['PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED', '/manifest_schema_version'],
      ]);
    }
    expect(pairs(toml(gumTomlText().replace('manifest_schema_version = 1', 'manifest_schema_version = 2')))).toEqual([
      ['PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED', '/manifest_schema_version'],
    ]);
  });

  it('fails before anything else: a Shape 2, binding-less, descriptor-less manifest reports only the version', () => {
    const text = gumTomlText()
      .replace('manifest_schema_version = 1', 'manifest_schema_version = 3')
      .replace('shape = "mcp-plugin"', 'shape = "grpc-subprocess"')
      .replace('tool_name = "search"\n', '');
    const error = gum.validateText(text, { form: 'gum-toml' })._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED');
    expect(error.details.violations).toHaveLength(1);
  });
});

describe('TestThirdPartyShape2Rejection', () => {
  it('rejects [plugin].shape = "grpc-subprocess"', () => {
    const text = gumTomlText().replace('shape = "mcp-plugin"', 'shape = "grpc-subprocess"');
    expect(pairs(toml(text))).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/plugin/shape']]);
  });

  it('rejects a grpc-plugin tool and wins over PLUGIN_BINDING_INVALID for its missing rpc selectors', () => {
    const error = gum.validateText(gumTomlText() + GRPC_TOOL, { form: 'gum-toml' })._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_SHAPE_UNSUPPORTED');
    expect(pairs(error.details.violations as Violation[])).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/tools/1/backend_kind']]);
  });

  it('rejects a grpc-plugin tool regardless of selector completeness', () => {
    const complete = `${GRPC_TOOL}rpc_service = "fli.v1.Flights"\nrpc_method = "Search"\n`;
    expect(pairs(toml(gumTomlText() + complete))).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/tools/1/backend_kind']]);
  });

  it('rejects Shape 2 in the JSON form too', () => {
    expect(pairs(json({ ...gumJson(), shape: 'grpc-subprocess' }))).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/shape']]);
  });

  it('lets first-party ABI fixtures through only when the host lists grpc-subprocess, then checks their selectors', () => {
    const abi = new ManifestValidator({ allowedShapes: ['mcp-plugin', 'grpc-subprocess'], firstParty: true });
    const incomplete = abi.inspectText(gumTomlText() + GRPC_TOOL, { form: 'gum-toml' })._unsafeUnwrap();
    expect(pairs(incomplete.violations)).toEqual([
      ['PLUGIN_BINDING_INVALID', '/tools/1/rpc_method'],
      ['PLUGIN_BINDING_INVALID', '/tools/1/rpc_service'],
    ]);
    const complete = abi.validateText(`${gumTomlText()}${GRPC_TOOL}rpc_service = "fli.v1.Flights"\nrpc_method = "Search"\n`, { form: 'gum-toml' });
    expect(complete._unsafeUnwrap().tools[1]).toMatchObject({ name: 'grpc', backend_kind: 'grpc-plugin', rpc_method: 'Search' });
    const firstPartyUnderGum = gum.inspectText(gumTomlText() + GRPC_TOOL, { form: 'gum-toml', firstParty: true })._unsafeUnwrap();
    expect(pairs(firstPartyUnderGum.violations)).toEqual([['PLUGIN_SHAPE_UNSUPPORTED', '/tools/1/backend_kind']]);
  });
});

describe('TestPluginBindingSchema', () => {
  it('requires tool_name on mcp-plugin tools', () => {
    expect(pairs(toml(gumTomlText().replace('tool_name = "search"\n', '')))).toEqual([
      ['PLUGIN_BINDING_INVALID', '/tools/0/tool_name'],
    ]);
  });

  it('rejects a malformed or prefixed tool_name', () => {
    for (const bad of ['"search flights"', '"plug.fli.search"', '""', '42']) {
      expect(pairs(toml(gumTomlText().replace('tool_name = "search"', `tool_name = ${bad}`)))).toEqual([
        ['PLUGIN_BINDING_INVALID', '/tools/0/tool_name'],
      ]);
    }
  });

  it('derives the unprefixed tool name from tool_name', () => {
    const text = gumTomlText().replace('tool_name = "search"', 'tool_name = "find"').replace('tool = "search"', 'tool = "find"');
    const manifest = gum.validateText(text, { form: 'gum-toml' })._unsafeUnwrap();
    expect(manifest.tools.map((t) => [t.name, t.tool_name, t.op_id])).toEqual([['find', 'find', 'fli.search']]);
  });
});

describe('TestCredentialDescriptors', () => {
  const descriptor = (env: string, alias: string): Record<string, string> => ({
    alias,
    env,
    kind: 'api_key',
    display_name: `${alias} key`,
    setup_hint: 'from the dashboard',
  });
  const withCreds = (needs: string[], descriptors?: unknown[]): unknown => ({
    ...gumJson(),
    requirements: descriptors === undefined ? { needs_user_creds: needs } : { needs_user_creds: needs, credential_descriptors: descriptors },
  });

  it('accepts exactly one descriptor per needs_user_creds entry, in any order', () => {
    expect(json(withCreds(['A_KEY', 'B_KEY'], [descriptor('B_KEY', 'b'), descriptor('A_KEY', 'a')]))).toEqual([]);
    expect(json(withCreds([], []))).toEqual([]);
  });

  it('reports missing, duplicate and extra descriptors, every one of them', () => {
    expect(pairs(json(withCreds(['A_KEY'])))).toEqual([['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors']]);
    const violations = json(
      withCreds(['A_KEY', 'B_KEY', 'C_KEY'], [descriptor('A_KEY', 'a'), descriptor('A_KEY', 'a'), descriptor('X_KEY', 'x')]),
    );
    expect(pairs(violations)).toEqual([
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors/1/alias'],
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors/1/env'],
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors/2/env'],
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/needs_user_creds/1'],
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/needs_user_creds/2'],
    ]);
  });

  it('reports descriptors without needs_user_creds as extra', () => {
    expect(pairs(json(withCreds([], [descriptor('A_KEY', 'a')])))).toEqual([
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors/0/env'],
    ]);
  });

  it('requires all five descriptor fields and codes their absence as a descriptor problem', () => {
    const { setup_hint: _dropped, ...partial } = descriptor('A_KEY', 'a');
    expect(pairs(json(withCreds(['A_KEY'], [{ ...partial, display_name: '' }])))).toEqual([
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors/0/display_name'],
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors/0/setup_hint'],
    ]);
  });
});

describe('TestProfileStripNullsSafety', () => {
  const withProfile = (profile: Record<string, unknown>, safe?: string[]): unknown => {
    const doc = gumJson();
    doc.advertised_tools = [{ name: 'search', risk_class: 'read', output_profile: 'p', ...(safe ? { null_elision_safe_fields: safe } : {}) }];
    doc.output_profiles = { p: profile };
    return doc;
  };
  const cases: Array<[string, Record<string, unknown>, string[] | undefined, boolean]> = [
    ['strip_nulls false passes', { strip_nulls: false }, undefined, true],
    ['"*" passes', { strip_nulls: true }, ['*'], true],
    ['no safe list rejects', { strip_nulls: true, keep_fields: ['id'] }, undefined, false],
    ['empty safe list rejects', { strip_nulls: true, keep_fields: ['id'] }, [], false],
    ['keep fields within the safe list pass', { strip_nulls: true, keep_fields: ['id', 'subject'] }, ['id', 'subject', 'threadId'], true],
    ['keep fields beyond the safe list reject', { strip_nulls: true, keep_fields: ['id', 'payload'] }, ['id'], false],
    ['an unbounded profile needs "*"', { strip_nulls: true }, ['id'], false],
  ];
  for (const [name, profile, safe, passes] of cases) {
    it(name, () => {
      const violations = json(withProfile(profile, safe));
      expect(pairs(violations)).toEqual(passes ? [] : [['PROFILE_STRIP_NULLS_UNSAFE', '/advertised_tools/0/null_elision_safe_fields']]);
    });
  }

  it('names the uncovered fields', () => {
    const [v] = json(withProfile({ strip_nulls: true, keep_fields: ['id', 'payload'] }, ['id']));
    expect(v?.message).toContain('"payload"');
  });

  it('asks the host resolver for profiles the manifest does not ship, and refuses a profile nobody knows', () => {
    const doc = gumJson();
    doc.advertised_tools = [
      { name: 'a', risk_class: 'read', output_profile: 'host.lean' },
      { name: 'b', risk_class: 'read', output_profile: 'unknown' },
    ];
    const validator = new ManifestValidator({
      preset: 'gum',
      resolveProfile: (name) => (name === 'host.lean' ? { strip_nulls: true, keep_fields: ['id'] } : undefined),
    });
    expect(pairs(json(doc, validator))).toEqual([
      ['PROFILE_STRIP_NULLS_UNSAFE', '/advertised_tools/0/null_elision_safe_fields'],
      ['PROFILE_INVALID', '/advertised_tools/1/output_profile'],
    ]);
  });
});

describe('check order and reporting', () => {
  it('reports every violation in contract order (structure, namespace, credentials, schema refs, strip nulls), the code being the first', () => {
    const doc = gumJson();
    delete doc.namespace_owner;
    doc.plugin_id = 'Bad';
    doc.requirements = { needs_user_creds: ['A_KEY'] };
    doc.advertised_tools = [{ name: 'search', risk_class: 'read', schema_ref: 'a/b', output_profile: 'p' }];
    doc.output_profiles = { p: { strip_nulls: true } };
    const error = gum.validateValue(doc, 'gum-json')._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MANIFEST_INVALID');
    expect(pairs(error.details.violations as Violation[])).toEqual([
      ['PLUGIN_MANIFEST_INVALID', '/plugin_id'],
      ['PLUGIN_NAMESPACE_CONFLICT', '/namespace_owner'],
      ['PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', '/requirements/credential_descriptors'],
      ['PLUGIN_SCHEMA_REF_INVALID', '/advertised_tools/0/schema_ref'],
      ['PROFILE_STRIP_NULLS_UNSAFE', '/advertised_tools/0/null_elision_safe_fields'],
    ]);
    expect(error.message).toContain('/plugin_id');
  });

  it('orders array indices numerically and is the same on every run', () => {
    const doc = gumJson();
    doc.advertised_tools = Array.from({ length: 12 }, (_, i) => ({ name: `t${i}`, risk_class: i % 5 === 0 ? 'bogus' : 'read' }));
    const first = json(doc).map((v) => v.pointer);
    expect(first).toEqual(['/advertised_tools/0/risk_class', '/advertised_tools/5/risk_class', '/advertised_tools/10/risk_class']);
    expect(json(structuredClone(doc)).map((v) => v.pointer)).toEqual(first);
  });

  it('exempts first-party manifests from namespace_owner', () => {
    const doc = gumJson();
    delete doc.namespace_owner;
    expect(pairs(json(doc))).toEqual([['PLUGIN_NAMESPACE_CONFLICT', '/namespace_owner']]);
    expect(gum.validateValue(doc, 'gum-json', { firstParty: true }).isOk()).toBe(true);
  });
});
