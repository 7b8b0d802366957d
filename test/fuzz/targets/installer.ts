/**
 * Package input: archive entry names and declared checksums.
 */
import { posix, win32 } from 'node:path';
import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { parseChecksum } from '../../../src/installer/checksum.js';
import { validateEntryName } from '../../../src/installer/entryName.js';
import { pathLike } from '../arbitraries/strings.js';
import { expectResult, fuzzTarget } from '../harness.js';

const ROOT = '/staging/root';
const REASONS = ['empty_name', 'nul_character', 'control_character', 'backslash', 'absolute_name', 'traversal', 'empty_segment', 'segment_too_long', 'colon', 'reserved_name'];

const inside = (resolved: string, root: string, sep: string): boolean => resolved === root || resolved.startsWith(root + sep);

/** Registers the installer targets. */
export function installerTargets(): void {
  describe('package input', () => {
    fuzzTarget(
      'archive entry names: validateEntryName never lets a name leave the root',
      [pathLike],
      (name) => {
        const result = validateEntryName(name);
        if (result.isErr()) {
          expect(REASONS).toContain(result.error.reason);
          expect(typeof result.error.message).toBe('string');
          return;
        }
        const { segments, normalized } = result.value;
        expect(normalized).toBe(segments.join('/'));
        for (const segment of segments) {
          expect(segment === '' || segment === '.' || segment === '..', `segment ${JSON.stringify(segment)}`).toBe(false);
          expect(/[\0\\/]/.test(segment)).toBe(false);
          expect(Buffer.byteLength(segment)).toBeLessThanOrEqual(255);
        }
        // Both the raw name and the normalized one stay below the root, as POSIX and as Windows paths.
        for (const candidate of [name, normalized]) {
          expect(inside(posix.resolve(ROOT, candidate), ROOT, '/'), `${JSON.stringify(candidate)} escapes (posix)`).toBe(true);
          expect(inside(win32.resolve('C:\\root', candidate), 'C:\\root', '\\'), `${JSON.stringify(candidate)} escapes (win32)`).toBe(true);
        }
      },
      { weight: 4 },
    );

    const hex = fc.stringMatching(/^[0-9a-fA-F]{64}$/);
    const checksum = fc.oneof(
      hex,
      hex.map((h) => `sha256:${h}`),
      fc.tuple(fc.constantFrom('sha256:', 'SHA256:', 'sha512:', 'md5:', 'sha256=', ' ', '\t', '\n', '\u00a0', ''), hex, fc.constantFrom('', ' ', '\n', '0', 'g', '\u0000')).map(
        ([p, h, s]) => p + h + s,
      ),
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc.stringMatching(/^[0-9a-f]{60,70}$/),
    );
    fuzzTarget(
      'package checksum: parseChecksum',
      [checksum],
      (text) => {
        const result = parseChecksum(text);
        expectResult(result, ['PLUGIN_CHECKSUM_MISMATCH']);
        if (result.isErr()) {
          expect(result.error.details.reason).toBe('malformed');
          return;
        }
        expect(result.value).toMatch(/^sha256:[0-9a-f]{64}$/);
        expect(text.toLowerCase()).toContain(result.value.slice('sha256:'.length));
        expect(parseChecksum(result.value)._unsafeUnwrap(), 'canonical form is a fixed point').toBe(result.value);
      },
      { weight: 3 },
    );
  });
}
