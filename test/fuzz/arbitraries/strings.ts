/**
 * Strings for the name validators: path-like names assembled from the
 * pieces that break path handling, and env names built from the denylist
 * itself (case variants, separators, NUL, lookalikes).
 */
import fc from 'fast-check';

/** Path pieces: separators, traversal markers in every spelling, NUL, drive letters, long segments. */
const PATH_PIECES = [
  '/',
  '//',
  '\\',
  '.',
  '..',
  '...',
  './',
  '../',
  '..\\',
  '\0',
  '\u0001',
  '\u007f',
  '\n',
  '%2e',
  '%2E%2E',
  '%2f',
  '%5c',
  '%00',
  '%252e',
  'C:',
  'c:\\',
  '\\\\?\\',
  '\u2215',
  '\u2025',
  '\uff0e\uff0e',
  '~',
  ' ',
  'a',
  'bin',
  'manifest.json',
  'é',
  '💥',
  'x'.repeat(255),
  'é'.repeat(128),
] as const;

/** Names made of path pieces and arbitrary text. */
export const pathLike: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.array(fc.oneof(fc.constantFrom(...PATH_PIECES), fc.string({ maxLength: 4 })), { maxLength: 10 }).map((p) => p.join('')) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('', './', '././', './/', 'a/'), fc.constantFrom('C:', 'c:', 'Z:', 'C:/', 'C:x', ':'), fc.constantFrom('', '/', 'x', '/..', '/x'))
      .map((p) => p.join('')),
  },
  { weight: 1, arbitrary: fc.array(fc.stringMatching(/^[a-z0-9._-]{1,12}$/), { minLength: 1, maxLength: 5 }).map((s) => s.join('/')) },
);

/** Flips the case of the characters `mask` selects. */
export function caseVariant(name: string, mask: readonly boolean[]): string {
  return [...name].map((c, i) => (mask[i % Math.max(1, mask.length)] === true ? (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) : c)).join('');
}

/** Env names derived from some seed names (denylisted ones, allowed ones) plus arbitrary ones. */
export function envNameFrom(seeds: readonly string[]): fc.Arbitrary<string> {
  const seed = fc.constantFrom(...seeds);
  return fc.oneof(
    { weight: 4, arbitrary: seed },
    { weight: 2, arbitrary: fc.tuple(seed, fc.array(fc.boolean(), { minLength: 1, maxLength: 8 })).map(([n, m]) => caseVariant(n, m)) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(seed, fc.constantFrom('', '_', '=', '\0', 'X', '1', 'ſ', 'ı', '\u200b', ' ', '\u00a0', '*', '=x'), fc.boolean())
        .map(([n, extra, before]) => (before ? extra + n : n + extra)),
    },
    { weight: 1, arbitrary: fc.constantFrom('', '=', '\0', 'A=B', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'PATH', 'Path', 'path') },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 16 }) },
  );
}
