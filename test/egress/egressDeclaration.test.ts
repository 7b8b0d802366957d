/**
 * The destination list as a declaration and a grant, pure logic: a GUM
 * manifest declares `declared_capabilities.egress`, checked entry by entry;
 * an install grant may narrow it (or the whole network) to destinations the
 * declaration covers, and gives a source that declares nothing exactly the
 * destinations granted.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CAPABILITIES, grantedCapabilities } from '../../src/installer/grant.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import type { DeclaredCapabilities, NormalizedManifest } from '../../src/manifest/model.js';

const hello = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'manifests', 'gum-json', 'valid', 'hello.json'), 'utf8')) as Record<string, unknown>;

function withCapabilities(capabilities: Record<string, unknown>): Record<string, unknown> {
  return { ...hello, declared_capabilities: capabilities };
}

function manifest(capabilities: DeclaredCapabilities, source?: 'host_default'): NormalizedManifest {
  return {
    form: 'gum-json',
    plugin_id: 'remote',
    name: 'Remote',
    version: '1.0.0',
    shape: 'mcp-plugin',
    tools: [],
    capabilities,
    ...(source === undefined ? {} : { capabilities_source: source }),
    requirements: { needs_user_creds: [], credential_descriptors: [] },
    output_profiles: {},
    dependencies: [],
    schemas: [],
    raw: {},
  };
}

describe('declared_capabilities.egress in a GUM manifest', () => {
  const validator = new ManifestValidator({ preset: 'gum' });

  it('is read into the capabilities', () => {
    const validated = validator.validateValue(withCapabilities({ network: false, fs_write_dir: '', env_allow: [], egress: ['api.github.com:443', '*.example.com'] }), 'gum-json');
    expect(validated._unsafeUnwrap().capabilities).toEqual({ network: false, fs_write_dir: '', env_allow: [], egress: ['api.github.com:443', '*.example.com'] });
  });

  it('refuses a malformed destination with PLUGIN_EGRESS_DESTINATION_INVALID at its pointer', () => {
    const refused = validator.validateValue(withCapabilities({ network: false, fs_write_dir: '', env_allow: [], egress: ['api.github.com:443', 'api.github.com:99999'] }), 'gum-json');
    expect(refused._unsafeUnwrapErr().details?.violations).toEqual([
      expect.objectContaining({ code: 'PLUGIN_EGRESS_DESTINATION_INVALID', pointer: '/declared_capabilities/egress/1' }),
    ]);
  });
});

describe('egress in the install grant', () => {
  const listed = manifest({ network: false, fs_write_dir: '', env_allow: [], egress: ['*.github.com', 'api.example.com:443'] });
  const networked = manifest({ network: true, fs_write_dir: '', env_allow: [] });

  it('keeps the declared list without a grant', () => {
    expect(grantedCapabilities(listed, {})._unsafeUnwrap().egress).toEqual(['*.github.com', 'api.example.com:443']);
  });

  it('narrows a declared list to destinations it covers, and refuses one it does not', () => {
    expect(grantedCapabilities(listed, { egress: ['api.github.com:443'] })._unsafeUnwrap()).toEqual({ network: false, fs_write_dir: '', env_allow: [], egress: ['api.github.com:443'] });
    expect(grantedCapabilities(listed, { egress: ['api.example.com:80', 'uploads.github.com'] })._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_GRANT_EXCEEDS_DECLARATION',
      details: { field: 'egress', granted: ['api.example.com:80'] },
    });
  });

  it('narrows a declared whole network to a destination list', () => {
    expect(grantedCapabilities(networked, { egress: ['api.github.com:443'] })._unsafeUnwrap()).toEqual({ network: false, fs_write_dir: '', env_allow: [], egress: ['api.github.com:443'] });
  });

  it('gives a source that declares nothing exactly the granted destinations', () => {
    const undeclared = manifest(DEFAULT_CAPABILITIES, 'host_default');
    expect(grantedCapabilities(undeclared, { egress: ['api.github.com:443'] })._unsafeUnwrap()).toEqual({ network: false, fs_write_dir: '', env_allow: [], egress: ['api.github.com:443'] });
    expect(grantedCapabilities(undeclared, { egress: ['not a host'] })._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EGRESS_DESTINATION_INVALID', details: { pointer: '/grant/egress/0' } });
  });
});
