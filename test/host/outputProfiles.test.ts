/**
 * The output profile stages and checks as pure functions (the call-time path
 * through PluginHost is test/conformance/gum-output-profiles.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { applyOutputProfile, checkProfileDefinitions, effectiveProfile, isLossyProfile, type OutputProfile } from '../../src/manifest/outputProfiles.js';
import { checkHostOutputProfiles } from '../../src/host/resultShaping.js';

const shape = (profile: OutputProfile, body: unknown, safe: readonly string[] = []) => {
  const effective = effectiveProfile('p', { p: profile });
  if (effective === undefined) throw new Error('no profile');
  return applyOutputProfile(effective, body, safe);
};

describe('output profile stages', () => {
  it('projection keeps top-level keys of the body or of each record of a top-level array', () => {
    expect(shape({ projection: ['id'] }, [{ id: 1, x: 2 }, { id: 3, y: { z: 1 } }]).body).toEqual([{ id: 1 }, { id: 3 }]);
    expect(shape({ projection: ['id'] }, { id: 1, x: 2 }).outcome.removed_fields).toBe(1);
  });

  it('drop_fields removes dot paths through arrays, after keep_fields', () => {
    const { body } = shape({ keep_fields: ['rows'], drop_fields: ['rows[].secret'] }, { rows: [{ a: 1, secret: 's' }], meta: 1 });
    expect(body).toEqual({ rows: [{ a: 1 }] });
  });

  it('strip_nulls without safe fields removes nothing; "*" removes every empty field, children first', () => {
    const body = { a: null, b: { c: '' }, d: [], e: 0 };
    expect(shape({ strip_nulls: true }, body).body).toEqual(body);
    expect(shape({ strip_nulls: true }, body, ['*']).body).toEqual({ e: 0 });
  });

  it('flatten unwraps an object whose only key is an envelope, and only then', () => {
    expect(shape({ flatten: true }, { data: [1, 2] }).body).toEqual([1, 2]);
    expect(shape({ flatten: true }, { data: [1, 2], next: 'x' }).body).toEqual({ data: [1, 2], next: 'x' });
  });

  it('truncate_strings takes a dot path, then a key, then the default, in code points', () => {
    const { body, outcome } = shape({ truncate_strings: { default_chars: 3, fields: { 'a.b': 1, c: 5 } } }, { a: { b: 'xyz', c: 'abcdefg' }, d: '😀😀😀😀' });
    expect(body).toEqual({ a: { b: 'x…', c: 'abcde…' }, d: '😀😀😀…' });
    expect(outcome.truncated_strings).toBe(3);
  });

  it('limit caps the record array (an envelope key first) and on_empty speaks when it is empty', () => {
    expect(shape({ limit: 1 }, { results: [1, 2, 3], other: [9, 9] }).body).toEqual({ results: [1], other: [9, 9] });
    const empty = shape({ on_empty: 'Cafe\u0301 is closed.' }, { items: [] });
    expect(empty.outcome).toMatchObject({ result_count: 0, on_empty_message: 'Café is closed.', lossy: false });
  });

  it('dedupe drops records equal to an earlier one once the stages before it have run (key order aside), as omitted items', () => {
    const { body, outcome } = shape({ drop_fields: ['items[].seen_at'], dedupe: true }, { items: [{ id: 1, b: 2, seen_at: 1 }, { b: 2, id: 1, seen_at: 2 }, { id: 3 }], next: 'x' });
    expect(body).toEqual({ items: [{ id: 1, b: 2 }, { id: 3 }], next: 'x' });
    expect(outcome).toMatchObject({ omitted_count: 1, result_count: 2, lossy: true });
    expect(isLossyProfile({ dedupe: true })).toBe(true);
  });

  it('sort_by orders the record array by dot paths before limit, "-" descending, stable, records without a value last', () => {
    const rows = [{ n: 'a', p: { v: 2 } }, { n: 'b' }, { n: 'c', p: { v: 9 } }, { n: 'd', p: { v: 2 } }, { n: 'e', p: { v: 'x' } }];
    expect(shape({ sort_by: ['-p.v'], limit: 4 }, rows).body).toEqual([rows[4], rows[2], rows[0], rows[3]]);
    expect(shape({ sort_by: ['p.v', '-n'] }, rows).body).toEqual([rows[3], rows[0], rows[2], rows[4], rows[1]]);
    expect(shape({ sort_by: ['n'] }, rows).outcome.lossy).toBe(false);
  });
});

describe('output profile checks', () => {
  it('inheritance is one level, and a lossy profile defaults to recovery local_artifact', () => {
    const defined = { base: { limit: 2, inherits: 'other' }, other: { flatten: true }, child: { inherits: 'base', truncate_strings: { default_chars: 9 } } };
    expect(effectiveProfile('child', defined)).toMatchObject({ limit: 2, truncate_strings: { default_chars: 9 }, lossy: true, recovery: 'local_artifact' });
    expect(effectiveProfile('child', defined)?.flatten).toBeUndefined();
    expect(effectiveProfile('other', defined)).toMatchObject({ lossy: false, recovery: 'none' });
    expect(isLossyProfile({ limit: 0 })).toBe(false);
  });

  it('reports a base that leads back, an on_empty over 500 code points and max_items 0 without on_empty', () => {
    const problems = checkProfileDefinitions(
      { a: { inherits: 'b' }, b: { inherits: 'a' }, long: { on_empty: 'x'.repeat(501) }, zero: { collapse_arrays: { max_items: 0 } } },
      '/output_profiles',
    );
    expect(problems.map((p) => [p.code, p.pointer])).toEqual([
      ['PROFILE_INVALID', '/output_profiles/a/inherits'],
      ['PROFILE_INVALID', '/output_profiles/b/inherits'],
      ['PROFILE_INVALID', '/output_profiles/long/on_empty'],
      ['PROFILE_INVALID', '/output_profiles/zero/collapse_arrays/max_items'],
    ]);
  });
});

describe('host-supplied output profiles', () => {
  it('are checked as a manifest\'s definitions, and each binding must name one of them or a built-in', () => {
    expect(checkHostOutputProfiles({ definitions: { top: { sort_by: ['-score'], limit: 3 } }, bindings: { 'plug.a.b': 'top', 'plug.a.c': 'raw' } })).toBeUndefined();
    const error = checkHostOutputProfiles({ definitions: { top: { limit: -1 } }, bindings: { 'plug.a/b': 'missing' } });
    expect(error?.code).toBe('HOST_INVALID_OPTIONS');
    expect((error?.details.problems as Array<{ code: string; pointer: string }>).map((p) => [p.code, p.pointer])).toEqual([
      ['PROFILE_INVALID', '/definitions/top/limit'],
      ['PROFILE_INVALID', '/bindings/plug.a~1b'],
    ]);
  });
});
