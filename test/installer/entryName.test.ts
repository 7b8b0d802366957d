import { resolve, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateEntryName } from '../../src/installer/entryName.js';

const ROOT = resolve('/staging/root');

describe('validateEntryName', () => {
  it.each([
    ['manifest.json', ['manifest.json'], false],
    ['bin/server', ['bin', 'server'], false],
    ['dist/', ['dist'], true],
    ['./a/./b', ['a', 'b'], false],
    ['./', [], true],
    ['.', [], false],
    ['a..b/..c', ['a..b', '..c'], false],
    ['C-drive:/x', ['C-drive:', 'x'], false],
  ])('accepts %j', (name, segments, trailingSlash) => {
    const result = validateEntryName(name);
    expect(result.isOk() && result.value).toEqual({ segments, normalized: segments.join('/'), trailingSlash });
  });

  it.each([
    ['', 'empty_name'],
    ['../x', 'traversal'],
    ['a/../b', 'traversal'],
    ['a/..', 'traversal'],
    ['..', 'traversal'],
    ['/etc/passwd', 'absolute_name'],
    ['/', 'absolute_name'],
    ['C:/Windows', 'absolute_name'],
    ['c:evil', 'absolute_name'],
    ['..\\evil', 'backslash'],
    ['a\0b', 'nul_character'],
    ['a\nb', 'control_character'],
    ['a//b', 'empty_segment'],
    ['a/b//', 'empty_segment'],
    [`${'x'.repeat(256)}`, 'segment_too_long'],
  ])('refuses %j as %s', (name, reason) => {
    const result = validateEntryName(name);
    expect(result.isErr() && result.error.reason).toBe(reason);
  });

  const alphabet = fc.constantFrom('a', 'b', '.', '..', '/', '\\', '\0', 'C:', ':', ' ', '\u00e9', '\n', '~', '%2e');
  const nameLike = fc.array(alphabet, { maxLength: 12 }).map((parts) => parts.join(''));

  it('never accepts a name that resolves outside the root, and never throws', () => {
    fc.assert(
      fc.property(fc.oneof(nameLike, fc.string(), fc.string({ unit: 'binary' })), (name) => {
        const result = validateEntryName(name);
        if (result.isErr()) return;
        const { segments } = result.value;
        const target = resolve(ROOT, ...segments);
        expect(target === ROOT || target.startsWith(ROOT + sep)).toBe(true);
        expect(target).toBe(segments.length === 0 ? ROOT : `${ROOT}/${segments.join('/')}`);
        for (const segment of segments) {
          expect(segment).not.toMatch(/^\.{1,2}$|[/\\\0]/);
        }
      }),
      { numRuns: 5000 },
    );
  });
});
