/**
 * The grant rules as pure logic: a declaring manifest is the ceiling a grant
 * may only narrow; a source that declares nothing starts from the host
 * default and gets what the grant adds.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CAPABILITIES, checkGrant, grantedCapabilities, sameGrant } from '../../src/installer/grant.js';
import type { DeclaredCapabilities, NormalizedManifest } from '../../src/manifest/model.js';

function manifest(capabilities: DeclaredCapabilities, source?: 'host_default'): NormalizedManifest {
  return {
    form: 'gum-json',
    plugin_id: 'granted',
    name: 'Granted',
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

const declaring = manifest({ network: true, fs_write_dir: 'cache', env_allow: ['LANGUAGE', 'TZ'] });
const undeclared = manifest(DEFAULT_CAPABILITIES, 'host_default');

describe('grantedCapabilities', () => {
  it('keeps the declaration without a grant, and narrows each field a grant names', () => {
    expect(grantedCapabilities(declaring, undefined)._unsafeUnwrap()).toEqual(declaring.capabilities);
    expect(grantedCapabilities(declaring, { network: false, fs_write_dir: 'cache/small', env_allow: ['TZ'] })._unsafeUnwrap()).toEqual({
      network: false,
      fs_write_dir: 'cache/small',
      env_allow: ['TZ'],
    });
    expect(grantedCapabilities(declaring, { fs_write_dir: '' })._unsafeUnwrap()).toEqual({ ...declaring.capabilities, fs_write_dir: '' });
  });

  it('refuses a grant beyond the declaration with PLUGIN_GRANT_EXCEEDS_DECLARATION naming the field', () => {
    const offline = manifest({ network: false, fs_write_dir: '', env_allow: [] });
    const cases = [
      [offline, { network: true }, 'network'],
      [offline, { egress: ['api.github.com:443'] }, 'egress'],
      [declaring, { env_allow: ['TZ', 'HOME_OFFICE'] }, 'env_allow'],
      [declaring, { fs_write_dir: 'elsewhere' }, 'fs_write_dir'],
      [declaring, { fs_write_dir: 'cachet' }, 'fs_write_dir'],
      [offline, { fs_write_dir: 'files' }, 'fs_write_dir'],
    ] as const;
    for (const [m, grant, field] of cases) {
      const refused = grantedCapabilities(m, grant)._unsafeUnwrapErr();
      expect(refused.code).toBe('PLUGIN_GRANT_EXCEEDS_DECLARATION');
      expect(refused.details).toMatchObject({ plugin_id: 'granted', field });
      expect(refused.hint).toContain(`grant.${field}`);
    }
  });

  it('gives a source that declares nothing the default, and exactly what the grant adds', () => {
    expect(grantedCapabilities(undeclared, undefined)._unsafeUnwrap()).toEqual({ network: false, fs_write_dir: '', env_allow: [] });
    expect(grantedCapabilities(undeclared, { network: true, fs_write_dir: 'work', env_allow: ['TZ', 'TZ'] })._unsafeUnwrap()).toEqual({
      network: true,
      fs_write_dir: 'work',
      env_allow: ['TZ'],
    });
    expect(grantedCapabilities(undeclared, { fs_write_dir: '../out' })._unsafeUnwrapErr().code).toBe('PLUGIN_FS_WRITE_OUTSIDE_SANDBOX');
  });

  it('refuses a malformed grant as HOST_INVALID_OPTIONS naming the option', () => {
    expect(checkGrant({ network: 'yes' })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'grant.network' } });
    expect(checkGrant({ netwrok: true })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'grant.netwrok' } });
    expect(checkGrant({ env_allow: [''] })._unsafeUnwrapErr().details).toMatchObject({ option: 'grant.env_allow' });
    expect(grantedCapabilities(undeclared, { egress: [7] } as never)._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it('compares grants by the powers they give', () => {
    expect(sameGrant(undefined, undefined)).toBe(true);
    expect(sameGrant({ env_allow: ['A', 'B'] }, { env_allow: ['B', 'A'] })).toBe(true);
    expect(sameGrant({ network: false }, undefined)).toBe(false);
    expect(sameGrant({ network: false }, { network: true })).toBe(false);
  });
});
