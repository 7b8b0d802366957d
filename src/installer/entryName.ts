import { err, ok, type Result } from 'neverthrow';
import windowsReservedNames from '../../etc/windows-reserved-names.json' with { type: 'json' };
import { refuseEntry, type EntryNameRefusalReason } from './refusal.js';

/** A package entry name that is safe to create below a staging root. */
export interface SafeEntryName {
  /** Path segments below the root; empty for the root itself (`.` or `./`). */
  readonly segments: readonly string[];
  /** The segments joined with `/`: the name duplicates are detected by. */
  readonly normalized: string;
  /** Whether the name ended with `/`, which archives use to mark directories. */
  readonly trailingSlash: boolean;
}

/** Why {@link validateEntryName} refused a name. */
export interface EntryNameRefusal {
  /** The stable reason, as in `details.reason` of `PLUGIN_ARCHIVE_INVALID`. */
  readonly reason: EntryNameRefusalReason;
  /** One sentence for the error message. */
  readonly message: string;
}

const MAX_SEGMENT_BYTES = 255;
// C0, DEL and C1: Windows refuses C0 in names, and none of them belong in a file name anywhere.
const CONTROL = /[\u0001-\u001f\u007f-\u009f]/;
const DRIVE_LETTER = /^[A-Za-z]:/;
const RESERVED = new Set(windowsReservedNames.names);

/**
 * Whether Win32 would open a device for this segment: its base name (before
 * the first `.`, trailing spaces dropped) is a reserved name, in any case.
 */
function isWindowsDeviceName(segment: string): boolean {
  const dot = segment.indexOf('.');
  const base = (dot === -1 ? segment : segment.slice(0, dot)).replace(/ +$/, '');
  return RESERVED.has(base.toUpperCase());
}

const refusal = (reason: EntryNameRefusal['reason'], message: string): Result<SafeEntryName, EntryNameRefusal> =>
  err({ reason, message });

/**
 * Checks one archive or directory entry name, as stored (`/`-separated).
 *
 * Accepted names are relative, made of non-empty segments other than `..`,
 * with no NUL, control character, backslash or `:`, no drive letter, no
 * Windows device name (`CON`, `nul.txt`, `COM1`, …; see
 * `etc/windows-reserved-names.json`), and no segment longer than 255 bytes;
 * `.` segments are dropped. Names are refused that are harmless on Linux but
 * would leave the root or mean something else on a Windows or macOS host:
 * a `:` selects a drive or an NTFS alternate data stream and is the path
 * separator of the macOS Carbon APIs. Any name with a `..` segment is
 * refused, even one that would resolve back inside the root, because tools
 * disagree on how to resolve it. Never throws.
 */
export function validateEntryName(name: string): Result<SafeEntryName, EntryNameRefusal> {
  if (name.length === 0) return refusal('empty_name', 'entry has an empty name');
  if (name.includes('\0')) return refusal('nul_character', 'entry name contains a NUL character');
  if (CONTROL.test(name)) return refusal('control_character', 'entry name contains a control character');
  if (name.includes('\\')) return refusal('backslash', 'entry name contains a backslash');
  if (name.startsWith('/') || DRIVE_LETTER.test(name)) return refusal('absolute_name', 'entry name is absolute');
  const trailingSlash = name.endsWith('/');
  const raw = (trailingSlash ? name.slice(0, -1) : name).split('/');
  const segments: string[] = [];
  for (const segment of raw) {
    if (segment === '..') return refusal('traversal', 'entry name has a ".." segment');
    if (segment === '') return refusal('empty_segment', 'entry name has an empty segment');
    if (segment === '.') continue;
    // `./C:/x` normalizes to `C:/x`, absolute on Windows.
    if (segments.length === 0 && DRIVE_LETTER.test(segment)) return refusal('absolute_name', 'entry name is absolute');
    if (segment.includes(':')) {
      return refusal('colon', `entry name segment ${JSON.stringify(segment)} contains ":", a drive or alternate-data-stream separator on Windows`);
    }
    if (isWindowsDeviceName(segment)) {
      return refusal('reserved_name', `entry name segment ${JSON.stringify(segment)} is a Windows device name`);
    }
    if (Buffer.byteLength(segment, 'utf8') > MAX_SEGMENT_BYTES) {
      return refusal('segment_too_long', `entry name has a segment longer than ${MAX_SEGMENT_BYTES} bytes`);
    }
    segments.push(segment);
  }
  return ok({ segments, normalized: segments.join('/'), trailingSlash });
}

/**
 * The safe form of an entry name, or a thrown PLUGIN_ARCHIVE_INVALID refusal
 * (see {@link refuseEntry}) whose message names the entry as
 * `<kind> entry '<name>'`.
 *
 * @param stored - The name as validated, when it differs from the one
 * reported (a directory walk adds the trailing `/` archives would carry).
 */
export function safeEntryName(kind: 'tar' | 'zip' | 'package', name: string, stored: string = name): SafeEntryName {
  const safe = validateEntryName(stored);
  if (safe.isErr()) refuseEntry(safe.error.reason, name, `${kind} entry '${name}': ${safe.error.message}`);
  return safe.value;
}
