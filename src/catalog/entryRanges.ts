/**
 * Where each entry of a catalog file's top-level collections lies in the
 * file's bytes, found by one scan, for files whose text is exactly what
 * `JSON.stringify` writes for the content it parses to.
 *
 * The first transaction after a store is opened rewrites every entry it did
 * not change; with these ranges it copies their bytes from the file it read
 * instead of stringifying them again. That is only sound when copying gives
 * the bytes a fresh encode would give, so the scan gives up (the caller then
 * stringifies) on anything `JSON.stringify` would write differently: a
 * non-ASCII file (the caller checks), a backslash anywhere (an escape may
 * have another form), white space between tokens, a number not in its
 * shortest form, or a member name starting with a digit (`JSON.parse` moves
 * array-index names to the front of an object). A member name that occurs
 * twice in one entry, which `JSON.parse` resolves to the last value, keeps
 * its text: the copy parses to the same content, it is just not normalized.
 */

/**
 * Numbers per entry in {@link CollectionRanges.entries}: the index of the
 * first character of its member name (inside the quotes; -1 for an array
 * element), the index just past the name, the index of the comma before the
 * entry (the collection's opening bracket for its first entry), and the
 * index just past its value.
 */
export const RANGE_FIELDS = 4;

/** A top-level member whose value is an array or an object, with its entries in text order. */
export interface CollectionRanges {
  /** Whether the collection is an array. */
  readonly array: boolean;
  /** How many entries it has. */
  readonly count: number;
  /** {@link RANGE_FIELDS} numbers per entry (numbers, not an object per entry: a catalog has thousands). */
  readonly entries: Int32Array;
}

/** Entry ranges, grown as the scan finds entries. */
class RangeList {
  values = new Int32Array(64 * RANGE_FIELDS);
  count = 0;

  push(keyStart: number, keyEnd: number, start: number, end: number): void {
    if ((this.count + 1) * RANGE_FIELDS > this.values.length) {
      const grown = new Int32Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    const at = this.count * RANGE_FIELDS;
    this.values[at] = keyStart;
    this.values[at + 1] = keyEnd;
    this.values[at + 2] = start;
    this.values[at + 3] = end;
    this.count++;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

const isDigit = (c: number): boolean => c >= DIGIT_0 && c <= DIGIT_9;
/** Characters of a JSON number after its first (digits, `.`, `e`, `E`, `+`, `-`). */
const inNumber = (c: number): boolean => isDigit(c) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === MINUS;

/**
 * The entries of each top-level collection of `bytes` (a JSON object and a
 * final newline, valid JSON, pure ASCII), by member name; `undefined` when
 * the text is not in the form `JSON.stringify` gives (see above). A name met
 * twice at the top level keeps its last collection, as `JSON.parse` does.
 * Bytes, not a string: the caller reads the file for this scan alone, and
 * decoding a megabyte to a string would cost more than the scan.
 */
export function entryRanges(bytes: Buffer): Map<string, CollectionRanges> | undefined {
  const last = bytes.length - 1;
  if (bytes[0] !== OPEN_OBJECT || bytes[last] !== 0x0a || bytes[last - 1] !== CLOSE_OBJECT) return undefined;
  if (bytes.includes(BACKSLASH)) return undefined;
  const collections = new Map<string, CollectionRanges>();
  let depth = 0;
  let member = '';
  let entries = new RangeList();
  let entryStart = -1;
  let keyStart = -1;
  let keyEnd = -1;
  let array = false;
  for (let i = 0; i < last; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      // Without backslashes a string ends at the next quote.
      const close = bytes.indexOf(QUOTE, i + 1);
      if (bytes[close + 1] === COLON) {
        if (isDigit(bytes[i + 1]!)) return undefined;
        if (depth === 1) member = bytes.toString('latin1', i + 1, close);
        else if (depth === 2 && keyStart < 0 && !array) {
          keyStart = i + 1;
          keyEnd = close;
        }
      }
      i = close;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth === 2) {
        array = c === OPEN_ARRAY;
        entries = new RangeList();
        entryStart = i;
        keyStart = -1;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 2) {
        if (i > entryStart + 1) entries.push(keyStart, keyEnd, entryStart, i);
        collections.set(member, { array, count: entries.count, entries: entries.values });
      }
      depth--;
    } else if (c === COMMA) {
      if (depth === 2) {
        entries.push(keyStart, keyEnd, entryStart, i);
        entryStart = i;
        keyStart = -1;
      }
    } else if (c === MINUS || isDigit(c)) {
      let end = i + 1;
      while (end < last && inNumber(bytes[end]!)) end++;
      const number = bytes.toString('latin1', i, end);
      if (String(Number(number)) !== number) return undefined;
      i = end - 1;
    } else if (c !== COLON && !(c >= 0x61 && c <= 0x7a)) {
      // Letters are the literals true, false and null; anything else here is white space.
      return undefined;
    }
  }
  return collections;
}
