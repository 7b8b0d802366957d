/**
 * Encodes catalog files as bytes, exactly `JSON.stringify(file) + "\n"` in
 * UTF-8. Every transaction rewrites all three files although it changes one
 * or two entries, so each entry's bytes (an element of a top-level array or a
 * member of a top-level object) are kept per entry object and reused while
 * that very object stays in the catalog. Catalog content is immutable (a
 * mutator returns new objects for what it changes), so an object's bytes never
 * go stale; the same assumption lets a transaction schema-check only the
 * entries that are not the very objects of the previous generation.
 *
 * An entry is cached the second time it is written (when it was already in
 * the collection this encoder last wrote under the same name). The first time
 * it is stringified together with its uncached neighbours. The first
 * transaction after a store is opened meets every entry uncached: given the
 * file as read, it takes each entry's bytes from that text instead (one scan
 * of the text, several times cheaper than stringifying it; see
 * entryRanges.ts for when the text qualifies), and otherwise costs no more
 * than `JSON.stringify` of the whole file.
 *
 * Building the file from cached bytes avoids both stringifying the whole
 * catalog and encoding a megabyte-long string to UTF-8 on every transaction.
 */
import { entryRanges, RANGE_FIELDS } from './entryRanges.js';

/** A file as read: its bytes (pure ASCII) and the value they parsed to. */
export interface SourceFile {
  /** The file's bytes; copied entries are ranges of them. */
  readonly bytes: Buffer;
  /** `JSON.parse` of the bytes' text. */
  readonly data: object;
}

/** Whether `bytes[start, end)` spells `key` (ASCII). */
function spells(bytes: Buffer, start: number, end: number, key: string): boolean {
  if (end - start !== key.length) return false;
  for (let i = 0; i < key.length; i++) if (bytes[start + i] !== key.charCodeAt(i)) return false;
  return true;
}

/** A byte range of a buffer. */
interface Segment {
  buffer: Uint8Array;
  start: number;
  end: number;
}

/** An entry's bytes: `,` then its JSON (`,"key":value` for an object member). */
interface EncodedEntry extends Readonly<Segment> {
  /** The member name it was encoded under, or `undefined` for an array element. */
  readonly key: string | undefined;
}

/** A file's bytes as consecutive chunks, to be written with one `writev`. */
export interface EncodedFile {
  /** The chunks, in order. */
  readonly chunks: readonly Uint8Array[];
  /** Their total length. */
  readonly byteLength: number;
}

/** Text of this encoding, not turned into bytes yet. */
interface Pending {
  readonly segment: Segment;
  readonly text: string;
  /** Leading bytes left out of the output (the comma of a first entry). */
  readonly skip: number;
  /** The entry to cache the bytes for. */
  readonly entry: object | undefined;
  readonly key: string | undefined;
}

const utf8 = new TextEncoder();
const NOT_YET = new Uint8Array(0);

/** Thrown inside `encode` when a value needs `JSON.stringify`'s own handling (e.g. `toJSON`); the file is then stringified whole. */
class NotPlain extends Error {}

/** Plain data: an array, or an object of the default prototype without `toJSON`. `JSON.stringify` treats these alike at any depth. */
function isPlainContainer(value: object): boolean {
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

function whole(file: object): EncodedFile {
  // The newline as a chunk of its own: appending it to a megabyte-long string would copy the string.
  const bytes = utf8.encode(JSON.stringify(file));
  return { chunks: [bytes, Uint8Array.of(0x0a)], byteLength: bytes.byteLength + 1 };
}

/** One encoding in progress: the file's segments in order, and the text still to encode. */
class FileBuilder {
  readonly segments: Readonly<Segment>[] = [];
  readonly pending: Pending[] = [];
  /** Whether the next entry of the current collection is its first (written without a comma). */
  first = true;

  text(text: string, skip = 0, entry?: object, key?: string): void {
    const segment: Segment = { buffer: NOT_YET, start: 0, end: 0 };
    this.segments.push(segment);
    this.pending.push({ segment, text, skip, entry, key });
  }

  /** One entry's text, which starts with its comma. */
  entryText(text: string, entry?: object, key?: string): void {
    this.text(text, this.first ? 1 : 0, entry, key);
    this.first = false;
  }

  reuse(bytes: EncodedEntry): void {
    this.segments.push(this.first ? { buffer: bytes.buffer, start: bytes.start + 1, end: bytes.end } : bytes);
    this.first = false;
  }

  /** Entries stringified together as `[…]` or `{…}`, brackets dropped. */
  run(json: string): void {
    if (json.length > 2) this.entryText(`,${json.slice(1, -1)}`);
  }
}

/** Encodes catalog files, reusing the bytes of entries already encoded by this encoder. */
export class CatalogEncoder {
  readonly #entries = new WeakMap<object, EncodedEntry>();
  /** Per file, the collections last encoded, by member name. */
  readonly #previous = new Map<string, ReadonlyMap<string, object>>();

  /**
   * `JSON.stringify(file) + "\n"` as UTF-8 bytes; `slot` names the file, so
   * that its next generation is compared with this one. `source` is the
   * file's previous generation as read (pure ASCII text and what it parsed
   * to): the first encoding of a slot copies the bytes of the entries it
   * still holds from that text, when the text is what this encoder writes.
   */
  encode(slot: string, file: object, source?: SourceFile): EncodedFile {
    let previous = this.#previous.get(slot);
    this.#previous.delete(slot);
    if (!isPlainContainer(file) || Array.isArray(file)) return whole(file);
    if (previous === undefined && source !== undefined) previous = this.#adopt(source);
    // Nothing of this slot is cached yet: the entry-by-entry walk would stringify everything in one run anyway.
    if (previous === undefined) return this.#wholeFirst(slot, file);
    const out = new FileBuilder();
    const collections = new Map<string, object>();
    try {
      let separator = '{';
      for (const key of Object.keys(file)) {
        const value = (file as Record<string, unknown>)[key];
        const head = `${separator}${JSON.stringify(key)}:`;
        if (typeof value === 'object' && value !== null) {
          if (!isPlainContainer(value)) throw new NotPlain();
          out.text(`${head}${Array.isArray(value) ? '[' : '{'}`);
          out.first = true;
          if (Array.isArray(value)) this.#addArray(out, value, previous?.get(key));
          else this.#addRecord(out, value as Readonly<Record<string, unknown>>, previous?.get(key));
          out.text(Array.isArray(value) ? ']' : '}');
          collections.set(key, value);
        } else {
          const json = JSON.stringify(value) as string | undefined;
          if (json === undefined) continue;
          out.text(`${head}${json}`);
        }
        separator = ',';
      }
      out.text(separator === '{' ? '{}\n' : '}\n');
    } catch (e) {
      if (e instanceof NotPlain) return whole(file);
      throw e;
    }
    this.#encodePending(out.pending);
    this.#previous.set(slot, collections);
    return joinSegments(out.segments);
  }

  /** Whether the next encoding of `slot` would use a `source`: none of the slot was encoded yet. */
  wantsSource(slot: string): boolean {
    return !this.#previous.has(slot);
  }

  /**
   * Caches the bytes of every entry of `source` (but each collection's first,
   * which has no comma before it in the text) as ranges of its text; returns
   * its collections, or `undefined` when its text is not this encoder's
   * output. A collection whose entries do not match the parsed content one
   * for one (a member name given twice) is left out.
   */
  #adopt(source: SourceFile): ReadonlyMap<string, object> | undefined {
    const buffer = source.bytes;
    const ranges = entryRanges(buffer);
    if (ranges === undefined) return undefined;
    const collections = new Map<string, object>();
    for (const [member, found] of ranges) {
      const value = (source.data as Record<string, unknown>)[member];
      if (typeof value !== 'object' || value === null || Array.isArray(value) !== found.array) continue;
      // Names in parse order, which is text order here: entry i is matched with name i, compared in place.
      const keys = found.array ? undefined : Object.keys(value);
      const items = found.array ? (value as readonly unknown[]) : undefined;
      if ((keys ?? items)!.length !== found.count) continue;
      collections.set(member, value);
      const ranges = found.entries;
      for (let i = 1; i < found.count; i++) {
        const at = i * RANGE_FIELDS;
        const keyStart = ranges[at]!;
        let entry: unknown;
        let key: string | undefined;
        if (keys === undefined) entry = items![i];
        else {
          key = keys[i]!;
          if (!spells(buffer, keyStart, ranges[at + 1]!, key)) continue;
          entry = (value as Readonly<Record<string, unknown>>)[key];
        }
        if (typeof entry === 'object' && entry !== null) this.#entries.set(entry, { key, buffer, start: ranges[at + 2]!, end: ranges[at + 3]! });
      }
    }
    return collections;
  }

  /** The first encoding of a slot: the whole file at once, its collections remembered so that the next encoding caches their entries. */
  #wholeFirst(slot: string, file: object): EncodedFile {
    const collections = new Map<string, object>();
    for (const key of Object.keys(file)) {
      const value = (file as Record<string, unknown>)[key];
      if (typeof value === 'object' && value !== null) collections.set(key, value);
    }
    const encoded = whole(file);
    this.#previous.set(slot, collections);
    return encoded;
  }

  #addArray(out: FileBuilder, items: readonly unknown[], previous: object | undefined): void {
    const before = Array.isArray(previous) ? (previous as readonly unknown[]) : [];
    let runStart = -1;
    const endRun = (end: number): void => {
      if (runStart < 0) return;
      out.run(JSON.stringify(runStart === 0 && end === items.length ? items : items.slice(runStart, end)));
      runStart = -1;
    };
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (typeof item === 'object' && item !== null) {
        const cached = this.#entries.get(item);
        if (cached !== undefined && cached.key === undefined) {
          endRun(i);
          out.reuse(cached);
          continue;
        }
        if (!isPlainContainer(item)) throw new NotPlain();
        // Compared by position only: an entry moved by a removal before it is cached a generation later.
        if (before[i] === item) {
          endRun(i);
          out.entryText(`,${JSON.stringify(item)}`, item, undefined);
          continue;
        }
      }
      if (runStart < 0) runStart = i;
    }
    endRun(items.length);
  }

  #addRecord(out: FileBuilder, record: Readonly<Record<string, unknown>>, previous: object | undefined): void {
    const before = previous !== undefined && !Array.isArray(previous) ? (previous as Readonly<Record<string, unknown>>) : undefined;
    const keys = Object.keys(record);
    let run: string[] = [];
    const endRun = (): void => {
      if (run.length === 0) return;
      if (run.length === keys.length) {
        out.run(JSON.stringify(record));
      } else {
        // A null prototype keeps a member named "__proto__" an ordinary member.
        const part = Object.create(null) as Record<string, unknown>;
        for (const key of run) part[key] = record[key];
        out.run(JSON.stringify(part));
      }
      run = [];
    };
    for (const key of keys) {
      const value = record[key];
      if (typeof value === 'object' && value !== null) {
        const cached = this.#entries.get(value);
        if (cached !== undefined && cached.key === key) {
          endRun();
          out.reuse(cached);
          continue;
        }
        if (!isPlainContainer(value)) throw new NotPlain();
        if (before !== undefined && Object.hasOwn(before, key) && before[key] === value) {
          endRun();
          out.entryText(`,${JSON.stringify(key)}:${JSON.stringify(value)}`, value, key);
          continue;
        }
      }
      run.push(key);
    }
    endRun();
  }

  /**
   * Encodes all pending text with one UTF-8 encoding into one buffer and
   * points each pending segment at its part. New entries remember their
   * part, so the buffer lives while one of them is still cached.
   */
  #encodePending(pending: readonly Pending[]): void {
    const joined = pending.map((p) => p.text).join('');
    const buffer = utf8.encode(joined);
    // Equal lengths mean pure ASCII, where string offsets are byte offsets.
    const ascii = buffer.byteLength === joined.length;
    let offset = 0;
    for (const p of pending) {
      const end = offset + (ascii ? p.text.length : Buffer.byteLength(p.text));
      if (p.entry !== undefined) this.#entries.set(p.entry, { key: p.key, buffer, start: offset, end });
      p.segment.buffer = buffer;
      p.segment.start = offset + p.skip;
      p.segment.end = end;
      offset = end;
    }
  }
}

/** Views of the segments, adjacent ranges of one buffer merged into one view (consecutive entries usually are). */
function joinSegments(segments: readonly Readonly<Segment>[]): EncodedFile {
  const chunks: Uint8Array[] = [];
  let byteLength = 0;
  let run: Segment | undefined;
  const flush = (): void => {
    if (run === undefined || run.end === run.start) return;
    chunks.push(run.buffer.subarray(run.start, run.end));
    byteLength += run.end - run.start;
  };
  for (const segment of segments) {
    if (run !== undefined && run.buffer === segment.buffer && run.end === segment.start) run.end = segment.end;
    else {
      flush();
      run = { buffer: segment.buffer, start: segment.start, end: segment.end };
    }
  }
  flush();
  return { chunks, byteLength };
}
