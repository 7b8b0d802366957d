/**
 * What a CLI built from the public API needs to find and classify a manifest
 * file: the accepted file names and the form of a JSON document, as statics
 * of ManifestValidator.
 */
import { describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/index.js';

describe('ManifestValidator statics', () => {
  it('lists the manifest file names in lookup order', () => {
    expect(ManifestValidator.fileNames).toEqual(['manifest.json', 'plugin.toml', 'manifest.toml', 'mcp-plugin.json']);
  });

  it('tells an Open Discovery document from a GUM one by its keys', () => {
    expect(ManifestValidator.formOf({ sdk: 'x', entry: 'index.js' })).toBe('open-discovery');
    expect(ManifestValidator.formOf({ manifest_schema_version: 1, entry: 'index.js' })).toBe('gum-json');
    expect(ManifestValidator.formOf({})).toBe('gum-json');
  });
});
