/**
 * Which registry changes count as another publisher's (src/installer/trustRegistry.ts): a lock row from before
 * registries were recorded counts as npm's default registry; other sources and unrecorded owner records compare nothing.
 */
import { describe, expect, it } from 'vitest';
import { acceptedOriginOf, DEFAULT_NPM_REGISTRY, packageChangeOf, registryChangeOf, registryChangeText } from '../../src/installer/trustRegistry.js';

const PRIVATE = 'https://npm.internal.example/';
const row = (source: string, registry?: string) => ({ source, ref: '1.0.0', checksum: '', ...(registry === undefined ? {} : { registry }) });

describe('registryChangeOf', () => {
  it('compares the registry the installed row or the owner record names, as URLs', () => {
    expect(registryChangeOf(acceptedOriginOf(row('npm:a@1.0.0', PRIVATE), undefined), PRIVATE)).toBeUndefined();
    expect(registryChangeOf(acceptedOriginOf(row('npm:a@1.0.0', 'HTTPS://NPM.internal.example'), undefined), PRIVATE)).toBeUndefined();
    expect(registryChangeOf(acceptedOriginOf(row('npm:a@1.0.0', PRIVATE), undefined), DEFAULT_NPM_REGISTRY)).toEqual({ from: PRIVATE, to: DEFAULT_NPM_REGISTRY });
    expect(registryChangeOf(acceptedOriginOf(undefined, { namespace_owner: 'npm:a', registry: PRIVATE }), DEFAULT_NPM_REGISTRY)).toEqual({ from: PRIVATE, to: DEFAULT_NPM_REGISTRY });
  });

  it('counts a row recorded before registries were as the default registry', () => {
    const unrecorded = acceptedOriginOf(row('npm:a@1.0.0'), undefined);
    expect(unrecorded).toEqual({ registry: null, name: 'a' });
    expect(registryChangeOf(unrecorded, DEFAULT_NPM_REGISTRY)).toBeUndefined();
    const change = registryChangeOf(unrecorded, PRIVATE);
    expect(change).toEqual({ from: null, to: PRIVATE });
    expect(registryChangeText(change ?? { from: null, to: '' })).toBe(`${DEFAULT_NPM_REGISTRY} (not recorded: installed before registries were) → ${PRIVATE}`);
  });

  it('has nothing to compare for other sources, a first install, or an owner record without a registry', () => {
    expect(registryChangeOf(acceptedOriginOf(row('npm:/tmp/a-1.0.0.tgz'), undefined), PRIVATE)).toBeUndefined();
    expect(registryChangeOf(acceptedOriginOf(row('archive:/tmp/a.tgz'), undefined), PRIVATE)).toBeUndefined();
    expect(registryChangeOf(acceptedOriginOf(undefined, undefined), PRIVATE)).toBeUndefined();
    expect(registryChangeOf(acceptedOriginOf(undefined, { namespace_owner: 'npm:a' }), PRIVATE)).toBeUndefined();
    // A package from no registry (an archive, a directory) is no registry change, whatever came before.
    expect(registryChangeOf(acceptedOriginOf(row('npm:a@1.0.0', PRIVATE), undefined), undefined)).toBeUndefined();
  });

  it('names another npm package than the one accepted, from the lock row or the owner record a remove kept', () => {
    expect(packageChangeOf(acceptedOriginOf(row('npm:@acme/files@1.0.0', PRIVATE), undefined), '@acme/files-helper')).toEqual({ from: '@acme/files', to: '@acme/files-helper' });
    expect(packageChangeOf(acceptedOriginOf(row('npm:@acme/files@1.0.0', PRIVATE), undefined), '@acme/files')).toBeUndefined();
    expect(packageChangeOf(acceptedOriginOf(undefined, { registry: PRIVATE, package_name: 'a' }), 'b')).toEqual({ from: 'a', to: 'b' });
    // Nothing to compare: a local tarball, an owner record from before names were kept, a source that is no registry package.
    expect(packageChangeOf(acceptedOriginOf(row('npm:/tmp/a-1.0.0.tgz'), undefined), 'b')).toBeUndefined();
    expect(packageChangeOf(acceptedOriginOf(undefined, { registry: PRIVATE }), 'b')).toBeUndefined();
    expect(packageChangeOf(acceptedOriginOf(row('npm:a@1.0.0'), undefined), undefined)).toBeUndefined();
  });
});
