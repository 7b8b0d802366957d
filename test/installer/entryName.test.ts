import { resolve, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import reserved from '../../etc/windows-reserved-names.json' with { type: 'json' };
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
    // Names that only look like device names: a longer base, COM0/LPT0, a device name after the first dot.
    ['lib/console.js', ['lib', 'console.js'], false],
    ['COM10/LPT0.txt', ['COM10', 'LPT0.txt'], false],
    ['nullable/com0', ['nullable', 'com0'], false],
    ['docs/readme.con', ['docs', 'readme.con'], false],
    ['a/ CON', ['a', ' CON'], false],
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
    ['a/\u0085b', 'control_character'],
    ['a/b\u007f', 'control_character'],
    ['C-drive:/x', 'colon'],
    ['a/C:x', 'colon'],
    ['./a/C:x', 'colon'],
    ['bin/server:stream', 'colon'],
    ['bin/server::$DATA', 'colon'],
    ['a/b:', 'colon'],
    [':', 'colon'],
    ['CON', 'reserved_name'],
    ['con', 'reserved_name'],
    ['a/nul.txt', 'reserved_name'],
    ['Aux.tar.gz', 'reserved_name'],
    ['dir/PRN/', 'reserved_name'],
    ['lib/com1.js', 'reserved_name'],
    ['LPT9', 'reserved_name'],
    ['x/Con .json', 'reserved_name'],
    ['x/nul.', 'reserved_name'],
    ['CONIN$', 'reserved_name'],
    ['conout$.log', 'reserved_name'],
    ['COM\u00b9', 'reserved_name'],
    ['lpt\u00b3.txt', 'reserved_name'],
    ['a//b', 'empty_segment'],
    ['a/b//', 'empty_segment'],
    [`${'x'.repeat(256)}`, 'segment_too_long'],
  ])('refuses %j as %s', (name, reason) => {
    const result = validateEntryName(name);
    expect(result.isErr() && result.error.reason).toBe(reason);
  });

  const alphabet = fc.constantFrom('a', 'b', '.', '..', '/', '\\', '\0', 'C:', ':', ' ', '\u00e9', '\n', '~', '%2e', 'CON', 'nul', 'Com1', '\u00b9', '$', '\u0085');
  const deviceNames = new Set(reserved.names);
  const nameLike = fc.array(alphabet, { maxLength: 12 }).map((parts) => parts.join(''));

  it('never accepts a name that resolves outside the root or holds a Windows-only hazard, and never throws', () => {
    fc.assert(
      fc.property(fc.oneof(nameLike, fc.string(), fc.string({ unit: 'binary' })), (name) => {
        const result = validateEntryName(name);
        if (result.isErr()) return;
        const { segments } = result.value;
        const target = resolve(ROOT, ...segments);
        expect(target === ROOT || target.startsWith(ROOT + sep)).toBe(true);
        expect(target).toBe(segments.length === 0 ? ROOT : `${ROOT}/${segments.join('/')}`);
        for (const segment of segments) {
          expect(segment).not.toMatch(/^\.{1,2}$|[/\\\0:\u0001-\u001f\u007f-\u009f]/);
          expect(deviceNames.has(segment.split('.')[0]!.replace(/ +$/, '').toUpperCase()), segment).toBe(false);
        }
      }),
      { numRuns: 5000 },
    );
  });
});
