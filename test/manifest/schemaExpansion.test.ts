/**
 * The expansion bound of measureSchema (src/manifest/schemaExpansion.ts,
 * etc/plugin-answers.json maxSchemaExpandedNodes): schemas within every
 * compile bound whose one validation walks exponentially many paths (review
 * R13 F2) are past it; the recursive and shared shapes real servers and zod
 * output list stay within it.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { measureExpansion } from '../../src/manifest/schemaExpansion.js';
import { measureSchema, MAX_SCHEMA_BYTES, MAX_SCHEMA_NODES } from '../../src/manifest/schemaLimits.js';
import { anyOfRecursion, nestedRecursions, refDag } from '../support/expensiveSchemas.js';

const CAP = pluginAnswerLimits.maxSchemaExpandedNodes;

/** Shaped like an OpenAPI-derived output schema (GitHub's): components shared by $ref from many places, four levels deep. */
function openApiLike(): Record<string, unknown> {
  const field = (prefix: string, i: number) => ({ type: 'string', description: `The ${prefix} field ${i} as the API returns it, described at the length an OpenAPI document gives its fields.` });
  const fields = (prefix: string, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}_${i}`, field(prefix, i)]));
  const ref = (name: string) => ({ $ref: `#/$defs/${name}` });
  const object = (properties: Record<string, unknown>) => ({ type: 'object', properties });
  const nullable = (schema: unknown) => ({ anyOf: [{ type: 'null' }, schema] });
  const $defs: Record<string, unknown> = {
    'simple-user': object(fields('user', 24)),
    license: object(fields('license', 5)),
    label: object(fields('label', 6)),
    milestone: object({ ...fields('milestone', 10), creator: ref('simple-user') }),
    reactions: object(fields('reaction', 8)),
    repository: object({
      ...fields('repo', 45),
      owner: ref('simple-user'),
      license: nullable(ref('license')),
      template_repository: nullable(object({ ...fields('template', 6), owner: ref('simple-user') })),
    }),
    issue: object({
      ...fields('issue', 30),
      user: ref('simple-user'),
      assignee: nullable(ref('simple-user')),
      assignees: { type: 'array', items: ref('simple-user') },
      closed_by: ref('simple-user'),
      labels: { type: 'array', items: ref('label') },
      milestone: ref('milestone'),
      repository: ref('repository'),
      reactions: ref('reactions'),
    }),
    comment: object({ ...fields('comment', 10), user: ref('simple-user'), reactions: ref('reactions') }),
    'pull-request': object({
      ...fields('pull', 30),
      user: ref('simple-user'),
      head: object({ repo: ref('repository'), user: ref('simple-user') }),
      base: object({ repo: ref('repository'), user: ref('simple-user') }),
      requested_reviewers: { type: 'array', items: ref('simple-user') },
      labels: { type: 'array', items: ref('label') },
      milestone: ref('milestone'),
    }),
  };
  return {
    type: 'object',
    $defs,
    properties: {
      issues: { type: 'array', items: ref('issue') },
      pulls: { type: 'array', items: ref('pull-request') },
      comments: { type: 'array', items: ref('comment') },
      repository: ref('repository'),
      total_count: { type: 'integer' },
    },
  };
}

const over = (schema: unknown): string => {
  const measured = measureSchema(schema);
  if (measured.ok) throw new Error('within the bounds');
  expect(measured.bound).toBe('expansion');
  return measured.problem;
};

describe('the expansion bound', () => {
  it('refuses R13 F2’s $ref DAG, by pointer and by $anchor, though it is within every compile bound', () => {
    for (const anchors of [false, true]) {
      const schema = refDag(29, anchors);
      const text = JSON.stringify(schema);
      expect(text.length).toBeLessThan(MAX_SCHEMA_BYTES / 8);
      expect(over(schema)).toBe(`expands to more than ${CAP} subschemas through its $refs, the most one validation may visit`);
    }
    // The cap is the rule: a level is itself and two ref objects each reaching the level below, 2^(levels + 2) - 1 in all.
    const atCap = Math.floor(Math.log2(CAP + 1)) - 2;
    expect(measureExpansion(refDag(atCap))).toEqual({ ok: true, size: 2 ** (atCap + 2) - 1 });
    expect(measureSchema(refDag(atCap)).ok).toBe(true);
    expect(measureSchema(refDag(atCap + 1)).ok).toBe(false);
  });

  it('refuses recursion that two keywords apply to the same member, recursions nested on one member, and a $ref cycle that takes no step down the data', () => {
    expect(over(anyOfRecursion())).toBe("has 2 $ref back-edges along one path down the data inside its own recursion, so one validation multiplies its work per level of the value's nesting");
    // One back-edge per step each, but each recursion enters the next on the same member: a power of the depth.
    expect(over(nestedRecursions(6))).toMatch(/^has 2 \$ref back-edges/);
    expect(over(nestedRecursions(2))).toMatch(/^has 2 \$ref back-edges/);
    // properties and additionalProperties both apply to member x; allOf branches reaching x at two depths (Fibonacci).
    expect(over({ properties: { x: { $ref: '#' } }, patternProperties: { '^x': { $ref: '#' } } })).toMatch(/^has 2 \$ref back-edges/);
    expect(over({ allOf: [{ properties: { a: { $ref: '#' } } }, { properties: { a: { properties: { b: { $ref: '#' } } } } }] })).toMatch(/^has 2 \$ref back-edges/);
    // Through a $def reached twice in place from inside the cycle.
    expect(over({ $defs: { u: { $ref: '#' } }, properties: { a: { allOf: [{ $ref: '#/$defs/u' }, { $ref: '#/$defs/u' }] } } })).toMatch(/^has 2 \$ref back-edges/);
    // A discriminated union recursing on one member in two branches: the output-schema validator runs with allErrors,
    // which checks each anyOf branch through even after its `kind` failed (an `abs` chain 20 deep: 2^20 paths).
    const unary = (kind: string) => ({ type: 'object', properties: { kind: { const: kind }, x: { $ref: '#' } }, required: ['kind'] });
    expect(over({ anyOf: [unary('neg'), unary('abs'), { type: 'object', properties: { kind: { const: 'num' } } }] })).toMatch(/^has 2 \$ref back-edges/);
    // Branches of distinct types: each branch's allOf still applies to the object (3 s at depth 20 with Ajv).
    const typed = (type: string) => ({ type, allOf: [{ properties: { x: { $ref: '#/$defs/d' } } }] });
    expect(over({ $defs: { d: { anyOf: [typed('string'), typed('number')] } }, $ref: '#/$defs/d' })).toMatch(/^has 2 \$ref back-edges/);
    // A pointer token holding an encoded '/' and '~': resolved as Ajv resolves it (split first, then decoded).
    const slashed = { type: 'object', properties: { x: { $ref: '#/$defs/a~1b%20c' } } };
    expect(over({ $defs: { 'a/b c': { anyOf: [slashed, slashed] } }, $ref: '#/$defs/a~1b%20c' })).toMatch(/^has 2 \$ref back-edges/);
    expect(over({ $defs: { 'a/b': { anyOf: [{ properties: { x: { $ref: '#/$defs/a%2Fb' } } }, { properties: { x: { $ref: '#/$defs/a%2Fb' } } }] } }, $ref: '#/$defs/a%2Fb' })).toMatch(/^has 2 \$ref back-edges/);
    // Array elements: items and contains apply to the same element.
    expect(over({ type: 'array', items: { $ref: '#' }, contains: { $ref: '#' } })).toMatch(/^has 2 \$ref back-edges/);
    // $dynamicRef counts as a ref to its anchor.
    expect(over({ $dynamicAnchor: 'n', anyOf: [{ properties: { x: { $dynamicRef: '#n' } } }, { properties: { x: { $dynamicRef: '#n' } } }] })).toMatch(/^has 2 \$ref back-edges/);
    expect(over({ anyOf: [{ type: 'string' }, { $ref: '#' }] })).toBe('has a $ref cycle that reaches the same value again without a step down the data');
    expect(over({ $defs: { a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { not: { $ref: '#/$defs/a' } } }, $ref: '#/$defs/a' })).toMatch(/without a step down the data/);
  });

  it('reads $id and anchors only where Ajv reads them (review R14)', () => {
    const levels = Math.floor(Math.log2(CAP + 1)) - 1;
    const dag = (prefix: string): Record<string, unknown> => {
      const defs: Record<string, unknown> = { d0: { type: 'object' } };
      for (let i = 1; i <= levels; i++) defs[`d${i}`] = { allOf: [{ $ref: `${prefix}/d${i - 1}` }, { $ref: `${prefix}/d${i - 1}` }] };
      return defs;
    };
    // A decoy $id under `default` (data to Ajv, which never registers it), met first: $ref 'lib.json' reached the decoy.
    const decoy = {
      $id: 'https://example.test/root.json',
      type: 'object',
      properties: { a: { $ref: 'lib.json' } },
      $defs: { real: { $id: 'lib.json', allOf: [{ $ref: `#/$defs/d${levels}` }], $defs: dag('#/$defs') } },
      default: { decoy: { $id: 'lib.json' } },
    };
    expect(over(decoy)).toMatch(/^expands to more than/);
    for (const place of ['const', 'enum']) expect(over({ ...decoy, default: undefined, [place]: place === 'enum' ? [{ $id: 'lib.json' }] : { $id: 'lib.json' } })).toMatch(/^expands to more than/);
    // A definition named $id (a string, no schema to Ajv): the `definitions` map is no resource, its members' refs resolve against the root.
    expect(over({ type: 'object', properties: { a: { $ref: `#/definitions/d${levels}` } }, definitions: { $id: 'https://decoy.test/x', ...dag('#/definitions') } })).toMatch(/^expands to more than/);
    // An $anchor under `default` is no target either: the ref to the real one is followed.
    expect(over({ $defs: { ...dag('#/$defs'), top: { $anchor: 'top', allOf: [{ $ref: `#/$defs/d${levels}` }] } }, default: { $anchor: 'top' }, properties: { a: { $ref: '#top' } } })).toMatch(/^expands to more than/);
    // A pointer through an $id (here under `default`) moves the base Ajv resolves its target's refs against.
    const box = { box: { $id: 'lib.json', t: { allOf: [{ $ref: `#/$defs/d${levels}` }] } } };
    expect(over({ $id: 'https://example.test/root.json', properties: { a: { $ref: '#/default/box/t' } }, default: box, $defs: { real: { $id: 'lib.json', $defs: dag('#/$defs') } } })).toMatch(/^names a \$ref \("#\/default\/box\/t"\) whose pointer passes an \$id/);
    // An $id where Ajv's traversal registers none (prefixItems, 2020-12) still moves the base Ajv compiles its refs against.
    expect(over({ $id: 'https://example.test/root.json', properties: { a: { prefixItems: [{ $id: 'lib.json', allOf: [{ $ref: `#/$defs/d${levels}` }] }] } }, $defs: { real: { $id: 'lib.json', $defs: dag('#/$defs') } } })).toMatch(/^has an \$id \("lib.json"\) where Ajv does not register it/);
    // Resources keyed as Ajv keys them: WHATWG's URL read 'lib<TAB>.json' as 'lib.json', one resource where Ajv has two.
    expect(over({ $id: 'https://example.test/root.json', properties: { a: { $ref: 'lib\t.json' } }, $defs: { real: { $id: 'lib\t.json', allOf: [{ $ref: `#/$defs/d${levels}` }], $defs: dag('#/$defs') }, zcheap: { $id: 'lib.json' } } })).toMatch(/^expands to more than/);
    // A pointer into a nested resource ends on its base, as the walk resolves it.
    expect(measureSchema({ $defs: { s: { $id: 'https://example.com/s.json', $defs: { t: { type: 'string' }, u: { $ref: '#/$defs/t' } } } }, properties: { q: { $ref: '#/$defs/s/$defs/u' } } }).ok).toBe(true);
    // A schema with an annotation object holding $id and a real nested resource still passes.
    expect(measureSchema({ $defs: { s: { $id: 'https://example.com/s.json', type: 'string' } }, default: { $id: 'https://example.com/s.json' }, properties: { q: { $ref: 'https://example.com/s.json' } } }).ok).toBe(true);
  });

  it('refuses a $ref to another document (its cost is not known) and leaves a local $ref to nothing to Ajv', () => {
    expect(over({ properties: { s: { $ref: 'https://json-schema.org/draft/2020-12/schema' } } })).toMatch(/^names a \$ref the host does not follow \("https:\/\/json-schema.org/);
    expect(over({ properties: { s: { $ref: 'other.json#/x' } } })).toMatch(/^names a \$ref the host does not follow/);
    // Ajv refuses this at compile (the list fails, as before), so the bound does not turn it unchecked.
    expect(measureSchema({ type: 'object', properties: { n: { $ref: '#/definitions/nowhere' } } }).ok).toBe(true);
  });

  it('keeps the recursive and shared shapes of real servers within it', () => {
    const value = { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }, { type: 'array', items: { $ref: '#/$defs/value' } }, { type: 'object', additionalProperties: { $ref: '#/$defs/value' } }] };
    const within: Record<string, unknown> = {
      'a binary tree': { type: 'object', properties: { value: { type: 'number' }, left: { $ref: '#' }, right: { $ref: '#' } } },
      'a JSON value type (zod json())': { type: 'object', $defs: { value }, properties: { a: { $ref: '#/$defs/value' }, b: { $ref: '#/$defs/value' } } },
      'a linked list': { type: 'object', properties: { value: {}, next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } } },
      'mutual recursion': { $defs: { A: { properties: { b: { $ref: '#/$defs/B' } } }, B: { properties: { a: { $ref: '#/$defs/A' } } } }, properties: { x: { $ref: '#/$defs/A' }, y: { $ref: '#/$defs/B' } } },
      'recursion on two members in two branches': { anyOf: [{ properties: { x: { $ref: '#' } } }, { properties: { y: { $ref: '#' } } }] },
      'a $dynamicRef tree': { $dynamicAnchor: 'node', type: 'object', properties: { children: { type: 'array', items: { $dynamicRef: '#node' } } } },
      'refs inside a nested $id': { $defs: { s: { $id: 'https://example.com/s.json', $defs: { t: { type: 'string' } }, properties: { a: { $ref: '#/$defs/t' } } } }, properties: { q: { $ref: 'https://example.com/s.json' } } },
      'an OpenAPI-derived schema': openApiLike(),
    };
    for (const [name, schema] of Object.entries(within)) expect(measureSchema(schema).ok, name).toBe(true);
    const openApi = openApiLike();
    const text = JSON.stringify(openApi);
    // About 28 KB in fewer than maxSchemaNodes objects: near the compile bounds, far from this one.
    expect(text.length).toBeGreaterThan(25_000);
    expect(text.length).toBeLessThanOrEqual(MAX_SCHEMA_BYTES);
    const expanded = measureExpansion(openApi);
    expect(expanded.ok && expanded.size).toBeGreaterThan(MAX_SCHEMA_NODES);
    expect(expanded.ok && expanded.size).toBeLessThan(CAP / 4);
    // Each is a schema Ajv compiles and that takes a real value.
    const ajv = new Ajv2020({ strict: false });
    expect(ajv.validate(within['a JSON value type (zod json())'] as object, { a: { x: [1, 'two', { y: null }] }, b: [[[]]] })).toBe(true);
    expect(ajv.validate(within['a binary tree'] as object, { value: 1, left: { value: 2, right: { value: 3 } } })).toBe(true);
    expect(ajv.validate(openApi, { issues: [{ user: { user_0: 'x' }, labels: [{ label_1: 'bug' }] }], total_count: 1 })).toBe(true);
  });
});
