/**
 * One construction style (issue 13, item 7): `new ManifestValidator(options)` cannot fail, and a host's own Open
 * Discovery schema, given as a file or as an object, only comes through `ManifestValidator.create()`, which reports
 * a bad schema before any manifest is seen instead of on the first open-discovery validation.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import type { Violation } from '../../src/manifest/violations.js';
import { fixturesRoot, pairs } from './helpers.js';

const minimal = (): Buffer => readFileSync(join(fixturesRoot, 'open-discovery/valid/minimal.json'));
const withLicense = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  required: ['name', 'version', 'sdk', 'entry', 'capabilities', 'license'],
  properties: { license: { type: 'string' } },
};

describe('ManifestValidator.create with an Open Discovery schema object', () => {
  it('refuses a schema that does not compile before any manifest is seen, and validates with one that compiles', async () => {
    const created = await ManifestValidator.create({ openDiscoverySchema: { type: 'object', properties: { a: { type: 'nope' } } } });
    expect(created._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');

    const validator = (await ManifestValidator.create({ openDiscoverySchema: withLicense }))._unsafeUnwrap();
    const missingLicense = validator.validateText(minimal(), { form: 'open-discovery' });
    expect(pairs(missingLicense._unsafeUnwrapErr().details.violations as Violation[])).toEqual([['PLUGIN_MANIFEST_INVALID', '/license']]);
  });

  it('refuses a schema given both as a path and as an object', async () => {
    const created = await ManifestValidator.create({ openDiscoverySchema: withLicense, openDiscoverySchemaPath: '/dev/null' });
    expect(created._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'openDiscoverySchema' } });
  });
});
