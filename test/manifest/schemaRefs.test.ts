/**
 * TestSchemaRefCollision and the schema-ref rules around it: the safe
 * grammar (checked before any path exists), bundle shape, JCS digests,
 * identical-body reuse and collisions.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { checkSchemaRefs, jcsDigest, schemaRefProblem } from '../../src/manifest/schemaRefs.js';
import { fixturesRoot, gumJson, pairs } from './helpers.js';

const bundle = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $defs: {
    request: { type: 'object', properties: { q: { type: 'string' } } },
    response: { type: 'object', properties: { hits: { type: 'array' } } },
  },
};

function docWithRefs(...refs: string[]): Record<string, unknown> {
  const doc = gumJson();
  doc.advertised_tools = refs.map((schema_ref, i) => ({ name: `t${i}`, risk_class: 'read', schema_ref }));
  return doc;
}

describe('schema ref grammar', () => {
  it.each(['fli.search', 'a', 'a-b_c.1', '0day'])('accepts %j', (ref) => {
    expect(schemaRefProblem(ref)).toBeUndefined();
  });

  it.each([
    ['', 'is empty'],
    ['../etc', 'path separator'],
    ['a/b', 'path separator'],
    ['a\\b', 'path separator'],
    ['a%2Fb', 'percent-encoded'],
    ['a%5cb', 'percent-encoded'],
    ['%2e%2e', 'percent-encoded'],
    ['a..b', 'traversal'],
    ['a\u0000b', 'control character'],
    ['a\nb', 'control character'],
    ['Fli', 'must match'],
    ['.hidden', 'must match'],
    ['x'.repeat(120), 'derived refs'],
  ])('rejects %j (%s)', (ref, why) => {
    expect(schemaRefProblem(ref)).toContain(why);
  });

  it('never hands an unsafe ref to the bundle reader', async () => {
    const asked: string[] = [];
    const outcome = await checkSchemaRefs(docWithRefs('../secrets', 'ok.ref'), 'gum-json', {
      readBundle: async (ref) => {
        asked.push(ref);
        return bundle;
      },
    });
    expect(asked).toEqual(['ok.ref']);
    expect(pairs(outcome.violations)).toEqual([['PLUGIN_SCHEMA_REF_INVALID', '/advertised_tools/0/schema_ref']]);
  });
});

describe('TestSchemaRefCollision', () => {
  const read = async (): Promise<unknown> => structuredClone(bundle);

  it('derives <ref>.request and <ref>.response with JCS SHA-256 digests, independent of key order', async () => {
    const outcome = await checkSchemaRefs(docWithRefs('fli.search'), 'gum-json', { readBundle: read });
    expect(outcome.violations).toEqual([]);
    expect(outcome.schemas.map((s) => [s.ref, s.digest])).toEqual([
      ['fli.search.request', jcsDigest(bundle.$defs.request)],
      ['fli.search.response', jcsDigest(bundle.$defs.response)],
    ]);
    expect(jcsDigest({ b: 1, a: [1, { d: 2, c: 3 }] })).toBe(jcsDigest({ a: [1, { c: 3, d: 2 }], b: 1 }));
    expect(jcsDigest(bundle.$defs.request)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('allows reuse of a known ref with an identical canonical body', async () => {
    const knownDigests = new Map([['fli.search.request', jcsDigest({ properties: { q: { type: 'string' } }, type: 'object' })!]]);
    const outcome = await checkSchemaRefs(docWithRefs('fli.search'), 'gum-json', { readBundle: read, knownDigests });
    expect(outcome.violations).toEqual([]);
  });

  it('rejects a known ref whose canonical body differs with SCHEMA_REF_COLLISION', async () => {
    const knownDigests = new Map([['fli.search.response', jcsDigest({ type: 'object' })!]]);
    const outcome = await checkSchemaRefs(docWithRefs('fli.search'), 'gum-json', { readBundle: read, knownDigests });
    expect(pairs(outcome.violations)).toEqual([['SCHEMA_REF_COLLISION', '/advertised_tools/0/schema_ref']]);
    expect(outcome.violations[0]!.message).toContain('fli.search.response');
  });

  it('reads a bundle shared by several tools once', async () => {
    let reads = 0;
    const outcome = await checkSchemaRefs(docWithRefs('shared', 'shared', 'shared'), 'gum-json', {
      readBundle: async () => {
        reads++;
        return bundle;
      },
    });
    expect(reads).toBe(1);
    expect(outcome.schemas).toHaveLength(2);
  });

  it.each([
    ['a missing bundle', undefined, 'does not exist'],
    ['a bundle that is not an object', [1, 2], 'not a JSON object'],
    ['a non-object $defs.response', { $defs: { request: { type: 'object' }, response: true } }, '$defs.response'],
    ['a bundle without $defs', { type: 'object' }, '$defs.request'],
    ['a draft-07 bundle', { ...bundle, $schema: 'http://json-schema.org/draft-07/schema#' }, '2020-12'],
    ['a bundle that is not a valid schema', { $defs: { request: { type: 'object' }, response: { type: 'nope' } } }, 'not a valid JSON Schema'],
  ])('rejects %s with PLUGIN_SCHEMA_REF_INVALID', async (_name, body, why) => {
    const outcome = await checkSchemaRefs(docWithRefs('fli.search'), 'gum-json', { readBundle: async () => body });
    expect(pairs(outcome.violations)).toEqual([['PLUGIN_SCHEMA_REF_INVALID', '/advertised_tools/0/schema_ref']]);
    expect(outcome.violations[0]!.message).toContain(why);
  });

  it('reports a bundle the reader cannot read', async () => {
    const outcome = await checkSchemaRefs(docWithRefs('fli.search'), 'gum-json', {
      readBundle: () => Promise.reject(new Error('EACCES')),
    });
    expect(outcome.violations[0]!.message).toContain('EACCES');
  });

  it('resolves bundles from the schemas folder beside a real manifest file', async () => {
    const manifest = await new ManifestValidator().validateFile(join(fixturesRoot, 'plugins/schema-refs-ok/manifest.json'));
    expect(manifest._unsafeUnwrap().schemas.map((s) => s.ref)).toEqual(['fli.search.request', 'fli.search.response']);
  });

  it('reports a malformed bundle file with its parse problem', async () => {
    const reader = async (): Promise<unknown> => {
      throw new Error('schemas/fli.search.json: manifest is not valid JSON');
    };
    const inspected = await new ManifestValidator().inspectFile(join(fixturesRoot, 'plugins/schema-refs-ok/manifest.json'), {
      readSchemaBundle: reader,
    });
    const report = inspected._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_SCHEMA_REF_INVALID', '/advertised_tools/0/schema_ref']]);
  });
});
