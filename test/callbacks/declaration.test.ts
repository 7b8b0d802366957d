/**
 * The client_requests declaration (pure logic): which manifests may declare
 * sampling, elicitation and roots, the stable code of a bad declaration, the
 * Open Discovery spelling (permission hints), and what an install grant may
 * do with it. The integration tests in clientRequests.test.ts run the same
 * rules through real installs and plugin processes.
 */
import { describe, expect, it } from 'vitest';
import { grantedCapabilities } from '../../src/installer/grant.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { gumJson, pairs } from '../manifest/helpers.js';

const validator = new ManifestValidator();

function withClientRequests(requests: unknown, shape = 'mcp-plugin'): Record<string, unknown> {
  const doc = gumJson();
  return { ...doc, shape, declared_capabilities: { ...(doc.declared_capabilities as object), client_requests: requests } };
}

describe('declared_capabilities.client_requests', () => {
  it('is normalized into the capabilities of a GUM manifest', () => {
    const manifest = validator.validateValue(withClientRequests(['sampling', 'roots']), 'gum-json')._unsafeUnwrap();
    expect(manifest.capabilities.client_requests).toEqual(['sampling', 'roots']);
  });

  it('refuses an unknown kind or a repeated one with PLUGIN_CLIENT_REQUESTS_INVALID at its pointer', () => {
    expect(pairs(validator.inspectValue(withClientRequests(['sampling', 'telepathy']), 'gum-json')._unsafeUnwrap().violations)).toEqual([
      ['PLUGIN_CLIENT_REQUESTS_INVALID', '/declared_capabilities/client_requests/1'],
    ]);
    expect(pairs(validator.inspectValue(withClientRequests(['roots', 'roots']), 'gum-json')._unsafeUnwrap().violations)).toEqual([
      ['PLUGIN_CLIENT_REQUESTS_INVALID', '/declared_capabilities/client_requests'],
    ]);
  });

  it('refuses it from a shape that cannot send requests to a client', () => {
    const report = validator.inspectValue(withClientRequests(['sampling'], 'ndjson-rpc'), 'gum-json')._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_CLIENT_REQUESTS_INVALID', '/declared_capabilities/client_requests']]);
    expect(report.violations[0]?.message).toContain('ndjson-rpc');
  });

  it('is spelled as permission hints in an Open Discovery manifest', () => {
    const doc = { name: 'asker', version: '1.0.0', sdk: '1.x', entry: 'index.js', capabilities: {}, permissions: [{ id: 'sampling' }, { id: 'elicitation', reason: 'asks the user' }] };
    expect(validator.validateValue(doc, 'open-discovery')._unsafeUnwrap().capabilities.client_requests).toEqual(['sampling', 'elicitation']);
  });
});

describe('the install grant and client_requests', () => {
  const declared = { plugin_id: 'asker', capabilities: { network: false, fs_write_dir: '', env_allow: [], client_requests: ['sampling', 'roots'] as const } };
  const undeclaring = { plugin_id: 'bundle', capabilities_source: 'host_default' as const, capabilities: { network: false, fs_write_dir: '', env_allow: [] } };

  it('narrows a declaration and refuses to widen it', () => {
    expect(grantedCapabilities(declared, { client_requests: ['roots'] })._unsafeUnwrap().client_requests).toEqual(['roots']);
    expect(grantedCapabilities(declared, { client_requests: [] })._unsafeUnwrap().client_requests).toBeUndefined();
    expect(grantedCapabilities(declared, { env_allow: [] })._unsafeUnwrap().client_requests).toEqual(['sampling', 'roots']);
    expect(grantedCapabilities(declared, { client_requests: ['elicitation'] })._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_GRANT_EXCEEDS_DECLARATION',
      details: { field: 'client_requests', granted: ['elicitation'] },
    });
  });

  it('gives them to a source that declares nothing (an MCP Bundle, an npm server), and refuses an unknown kind', () => {
    expect(grantedCapabilities(undeclaring, { client_requests: ['elicitation'] })._unsafeUnwrap().client_requests).toEqual(['elicitation']);
    expect(grantedCapabilities(undeclaring, undefined)._unsafeUnwrap().client_requests).toBeUndefined();
    expect(grantedCapabilities(undeclaring, { client_requests: ['mind-reading'] } as never)._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_CLIENT_REQUESTS_INVALID',
      details: { pointer: '/grant/client_requests/0' },
    });
  });
});
