/**
 * Schemas within every compile bound of src/manifest/schemaLimits.ts whose
 * one validation walks exponentially many paths (review R13 F2), shared by
 * the unit, manifest and running-plugin tests of the expansion bound.
 */

/** R13's repro: $defs dI = allOf of two refs to dI-1, by JSON pointer or by `$anchor`. 2^levels paths per validation. */
export function refDag(levels: number, anchors = false): Record<string, unknown> {
  const defs: Record<string, unknown> = { d0: { type: 'object' } };
  for (let i = 1; i <= levels; i++) {
    const previous = anchors && i > 1 ? `#a${i - 1}` : `#/$defs/d${i - 1}`;
    defs[`d${i}`] = { ...(anchors ? { $anchor: `a${i}` } : {}), allOf: [{ $ref: previous }, { $ref: previous }] };
  }
  return { type: 'object', $defs: defs, allOf: [{ $ref: `#/$defs/d${levels}` }] };
}

/** Recursion with fan-out 2 on one member: the paths double per level of the value's nesting. */
export function anyOfRecursion(): Record<string, unknown> {
  const step = (): Record<string, unknown> => ({ type: 'object', properties: { x: { $ref: '#/$defs/d' } } });
  return { $defs: { d: { anyOf: [step(), step()] } }, $ref: '#/$defs/d' };
}

/**
 * `count` recursions on member a, each entering the next in place: each is one back-edge per step, but a value n deep
 * meets about n^(count-1) / (count-1)! paths (count 6, 575 bytes: 0.9 s at depth 60 with the output validator's Ajv).
 */
export function nestedRecursions(count: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = {};
  for (let i = 1; i <= count; i++) {
    $defs[`A${i}`] = { type: 'object', properties: { a: { $ref: `#/$defs/A${i}` } }, ...(i < count ? { allOf: [{ $ref: `#/$defs/A${i + 1}` }] } : {}) };
  }
  return { $defs, $ref: '#/$defs/A1' };
}

/** A value `levels` deep along member x: what makes anyOfRecursion() cost 2^levels. */
export function nestedX(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < levels; i++) value = { x: value };
  return value;
}

/**
 * An object whose member `a` is an array each element of which is checked against refDag(levels)'s top: within every
 * bound at 11 levels (about 8190 subschemas expanded), and a validation costs that times the elements (a 1 MiB answer
 * of `{}` elements held the host's thread for seconds).
 */
export function dagUnderItems(levels: number): Record<string, unknown> {
  const { $defs } = refDag(levels) as { $defs: Record<string, unknown> };
  return { type: 'object', $defs, properties: { a: { type: 'array', items: { $ref: `#/$defs/d${levels}` } } }, required: ['a'] };
}

/** A pattern RE2 cannot run (a lookahead) that backtracks for ever on V8's engine against backtrackingText(). */
export const BACKTRACKING_PATTERN = '^(?=a)(a+)+$';

/** Forty `a`s and a `!`: 2^40 steps for BACKTRACKING_PATTERN. */
export function backtrackingText(): string {
  return `${'a'.repeat(40)}!`;
}
