/**
 * Redacting secret values the host itself knows (a plugin's stored
 * credentials, the host environment values its install granted) wherever
 * they show up in text: as written, and in the encodings a program prints a
 * secret in without meaning to (JSON-escaped, percent-encoded, base64 and
 * base64url at any byte offset, hex). Name-based redaction misses a value
 * printed with no name before it, and every encoded copy.
 */
import auditDefaults from '../../etc/audit-defaults.json' with { type: 'json' };
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { TRUNCATION_MARK } from '../process/StderrRing.js';
import { EXCERPT_CUT_MARK } from '../shapes/mcp/PluginProcessTransport.js';

/**
 * What the host writes where it cut a plugin's text short: a stderr line at
 * its bound, a stdout line's excerpt. A secret straddling the cut leaves its
 * first characters just before the mark, which no whole form matches.
 */
const CUT_MARKS: readonly string[] = [TRUNCATION_MARK, EXCERPT_CUT_MARK];
/** What ends V8's quote of the text `JSON.parse` failed on, in PLUGIN_INVALID_JSON's and PLUGIN_MALFORMED_RESPONSE's messages (and `details.reason`), and so in log records of them. */
export const PARSER_QUOTE_END = '"...';
const MAX_CUT_MARKS_LOOKED_AT = 16;
// A byte cut inside a multi-byte character decodes as U+FFFD (one per cut sequence) before the mark.
const REPLACEMENT_CHAR = '\uFFFD';

const BASE64_BITS_PER_CHAR = 6;

/**
 * The base64 characters that depend on `value` alone, wherever it starts in a
 * larger encoded stream: for each of the three byte offsets modulo 3, the
 * characters past those that hold bits of the bytes before it and before the
 * last one, which holds bits of the bytes after it.
 */
function base64Cores(value: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), value]).toString('base64');
    const first = Math.ceil((offset * 8) / BASE64_BITS_PER_CHAR);
    const last = Math.floor(((offset + value.length) * 8) / BASE64_BITS_PER_CHAR);
    cores.push(encoded.slice(first, last));
  }
  return cores;
}

/**
 * `json` (a JSON string's inside) with every character past ASCII as a
 * `\uXXXX` escape, lower-case hex, as Python's `json.dumps` writes by default.
 */
function asciiJson(json: string): string {
  return json.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * `value` percent-encoded the ways programs put it in a URL:
 * `encodeURIComponent` (leaves `!'()*`); every byte but the unreserved
 * `-_.~` escaped (RFC 3986), as is, keeping `/` (Python's `quote`), and with
 * `+` for a space (Python's `quote_plus`, Go's `QueryEscape`); and
 * form-encoded (`URLSearchParams`: `+` for a space, `~` escaped, `*` not).
 */
function percentEncodings(value: string): string[] {
  const component = encodeURIComponent(value);
  const strict = component.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return [component, strict, strict.replace(/%2F/g, '/'), strict.replace(/%20/g, '+'), new URLSearchParams([['', value]]).toString().slice(1)];
}

/**
 * Every form of `values` that is redacted: each value of at least
 * `minRedactedValueChars` characters as written, JSON-escaped (also with
 * `\uXXXX` past ASCII, and with `\/`) and percent-encoded (as `encodeURIComponent`,
 * RFC 3986's unreserved set alone, keeping `/`, `+` for a space, and
 * form-encoded; upper- and lower-case hex); for values of at
 * least `minEncodedSecretChars`, also its base64 and base64url cores and its
 * hex (lower and upper case). Longest
 * first, so a form that holds another is replaced whole.
 */
export function secretForms(values: Iterable<string>): string[] {
  const forms = new Set<string>();
  for (const value of values) {
    if (value.length < auditDefaults.minRedactedValueChars) continue;
    const json = JSON.stringify(value).slice(1, -1);
    forms.add(value).add(json).add(asciiJson(json)).add(json.replace(/\//g, '\\/'));
    for (const encoded of percentEncodings(value)) forms.add(encoded).add(encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()));
    if (value.length < auditDefaults.minEncodedSecretChars) continue;
    const bytes = Buffer.from(value, 'utf8');
    for (const core of base64Cores(bytes)) forms.add(core).add(core.replace(/\+/g, '-').replace(/\//g, '_'));
    const hex = bytes.toString('hex');
    forms.add(hex).add(hex.toUpperCase());
  }
  return [...forms].filter((form) => form.length >= auditDefaults.minRedactedValueChars).sort((a, b) => b.length - a.length);
}

// The window hash of a form's first minRedactedValueChars characters picks the places worth a look; 2^16 filter bits keep false looks rare for thousands of forms.
const PREFIX_FILTER_BITS = 1 << 16;
const PREFIX_HASH_BASE = 31;

/** The hash of `width` characters of `text` from `at`, as the rolling hash in {@link SecretRedactor.redact} keeps it. */
function prefixHash(text: string, at: number, width: number): number {
  let hash = 0;
  for (let i = 0; i < width; i++) hash = (Math.imul(hash, PREFIX_HASH_BASE) + text.charCodeAt(at + i)) | 0;
  return hash;
}

/** The forms sharing their first `minRedactedValueChars` characters. */
interface PrefixBucket {
  /** Their lengths, longest first, each once. */
  readonly lengths: number[];
  readonly forms: Set<string>;
  /** The same forms in code unit order, for the prefix search at a cut. */
  readonly sorted: string[];
}

/** Whether a form of `sorted` longer than `length` begins with `head` (of `length` characters): the first form not below `head` is the one to look at. */
function longerFormStarting(sorted: readonly string[], head: string, length: number): boolean {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle]! < head) low = middle + 1;
    else high = middle;
  }
  // A form equal to `head` sorts first among those beginning with it; the next may be longer.
  for (let i = low; i < sorted.length && sorted[i]!.startsWith(head); i++) if (sorted[i]!.length > length) return true;
  return false;
}

/**
 * Replaces known secret values, and their encoded copies, with
 * `[redacted]`. One pass over the text whatever the number of forms: a
 * rolling hash of the next `minRedactedValueChars` characters is looked up in
 * a bit filter of the forms' first characters, and only where it is set are
 * the forms with those first characters looked up, one set lookup per length
 * they come in, longest first. One regular expression alternating every form
 * was as fast up to a few hundred forms and 20-50 times slower beyond (V8
 * leaves its fast path); trying each form sharing the first characters in
 * turn cost the number of such forms at every place they begin (values with
 * a common vendor prefix, `sk-live-`, and text repeating it).
 */
export class SecretRedactor {
  /** A redactor that knows no secret and returns text as it is. */
  static readonly none = new SecretRedactor([]);

  readonly #forms: readonly string[];
  readonly #byPrefix = new Map<string, PrefixBucket>();
  readonly #prefixFilter = new Uint8Array(PREFIX_FILTER_BITS / 8);
  // What the window's first character weighs in its hash: removed from it as the window moves on.
  readonly #leavingWeight: number;

  /** @param values - The secret values as the host holds them. */
  constructor(values: Iterable<string>) {
    const width = auditDefaults.minRedactedValueChars;
    this.#forms = secretForms(values);
    for (const form of this.#forms) {
      const prefix = form.slice(0, width);
      let bucket = this.#byPrefix.get(prefix);
      if (bucket === undefined) {
        bucket = { lengths: [], forms: new Set(), sorted: [] };
        this.#byPrefix.set(prefix, bucket);
      }
      // Forms come longest first, so the lengths do too.
      if (bucket.lengths.at(-1) !== form.length) bucket.lengths.push(form.length);
      bucket.forms.add(form);
      bucket.sorted.push(form);
      const slot = prefixHash(prefix, 0, width) & (PREFIX_FILTER_BITS - 1);
      this.#prefixFilter[slot >>> 3]! |= 1 << (slot & 7);
    }
    for (const bucket of this.#byPrefix.values()) bucket.sorted.sort();
    let weight = 1;
    for (let i = 1; i < width; i++) weight = Math.imul(weight, PREFIX_HASH_BASE);
    this.#leavingWeight = weight;
  }

  /** Whether it knows any secret. */
  get empty(): boolean {
    return this.#forms.length === 0;
  }

  /**
   * `text` with every known secret form replaced by `[redacted]`, leftmost
   * first, the longest form at a place; and, when `text` ends with a mark the
   * host writes where it cut text short (a stderr line at its bound, a stdout
   * excerpt), the first characters of a form just before the mark
   * (`minRedactedValueChars` or more of them).
   */
  redact(text: string): string {
    const whole = this.#redactWhole(text);
    const mark = this.#forms.length === 0 ? undefined : CUT_MARKS.find((m) => whole.endsWith(m));
    if (mark === undefined) return whole;
    let body = whole.slice(0, whole.length - mark.length);
    while (body.endsWith(REPLACEMENT_CHAR)) body = body.slice(0, -REPLACEMENT_CHAR.length);
    const at = this.#cutFormStart(body);
    return at === -1 ? whole : `${body.slice(0, at)}${auditDefaults.redactedValue}${mark}`;
  }

  /**
   * `text`, cut from a longer one at its end (an excerpt with no mark, as a
   * bounded copy of a plugin's line is), with a form's first characters it
   * ends with replaced, then redacted as a whole.
   */
  redactCutEnd(text: string): string {
    const whole = this.#redactWhole(text);
    const at = this.#cutFormStart(whole);
    return at === -1 ? whole : `${whole.slice(0, at)}${auditDefaults.redactedValue}`;
  }

  /**
   * `text` (a short message, such as an error's), redacted, with the first
   * characters of a form replaced where they end right before `mark`
   * anywhere in it: V8's `JSON.parse` errors quote up to 10 characters of
   * the line they failed on, then `"...` (`Unexpected token 'g',
   * "good-6f1d0"... is not valid JSON`), and the host puts that error in its
   * own messages. Each place the mark is costs a look back the length of the
   * longest form, so this is for messages, not a plugin's output.
   */
  redactCutBefore(text: string, mark: string): string {
    const whole = this.redact(text);
    if (this.#forms.length === 0 || !whole.includes(mark)) return whole;
    let out = '';
    let copied = 0;
    // A parser's message quotes once; a text full of marks (plugin text in a message) is not looked back from at each.
    let looks = 0;
    for (let at = whole.indexOf(mark); at !== -1 && looks++ < MAX_CUT_MARKS_LOOKED_AT; at = whole.indexOf(mark, at + mark.length)) {
      const start = this.#cutFormStart(whole.slice(copied, at));
      if (start === -1) continue;
      out += whole.slice(copied, copied + start) + auditDefaults.redactedValue;
      copied = at;
    }
    return copied === 0 ? whole : out + whole.slice(copied);
  }

  /** Where in `text` the first characters of a form begin that run to its end, at least `minRedactedValueChars` of them and fewer than the whole form; -1 if none. */
  #cutFormStart(text: string): number {
    const width = auditDefaults.minRedactedValueChars;
    const longest = this.#forms[0]?.length ?? 0;
    // Leftmost first: the longest cut prefix, so no characters of it are left before the replacement.
    for (let at = Math.max(0, text.length - longest + 1); at <= text.length - width; at++) {
      const rest = text.length - at;
      const sorted = this.#byPrefix.get(text.slice(at, at + width))?.sorted;
      if (sorted !== undefined && longerFormStarting(sorted, text.slice(at), rest)) return at;
    }
    return -1;
  }

  /** The length of the longest form that begins at `at` in `text`, 0 if none. */
  #formLengthAt(text: string, at: number, width: number): number {
    const bucket = this.#byPrefix.get(text.slice(at, at + width));
    if (bucket === undefined) return 0;
    for (const length of bucket.lengths) {
      if (at + length <= text.length && bucket.forms.has(text.slice(at, at + length))) return length;
    }
    return 0;
  }

  #redactWhole(text: string): string {
    const width = auditDefaults.minRedactedValueChars;
    if (this.#forms.length === 0 || text.length < width) return text;
    const lastStart = text.length - width;
    let redacted = '';
    let copied = 0;
    let at = 0;
    let hash = prefixHash(text, 0, width);
    while (at <= lastStart) {
      const slot = hash & (PREFIX_FILTER_BITS - 1);
      if ((this.#prefixFilter[slot >>> 3]! & (1 << (slot & 7))) !== 0) {
        const length = this.#formLengthAt(text, at, width);
        if (length !== 0) {
          redacted += text.slice(copied, at) + auditDefaults.redactedValue;
          // Another known form beginning inside this one and running past it (two secrets overlapping) is replaced with it, so none of it is left.
          let end = at + length;
          for (let inside = at + 1; inside < end && inside <= lastStart; inside++) end = Math.max(end, inside + this.#formLengthAt(text, inside, width));
          at = end;
          copied = at;
          if (at <= lastStart) hash = prefixHash(text, at, width);
          continue;
        }
      }
      if (at < lastStart) hash = (Math.imul(hash - Math.imul(text.charCodeAt(at), this.#leavingWeight), PREFIX_HASH_BASE) + text.charCodeAt(at + width)) | 0;
      at++;
    }
    return copied === 0 ? text : redacted + text.slice(copied);
  }

  /**
   * `text`, cut from a longer one at its start (a wrapped ring buffer), with
   * what it begins with replaced when that is the end of a known form
   * (`minRedactedValueChars` or more of it), then redacted as a whole.
   */
  redactCutStart(text: string): string {
    const min = auditDefaults.minRedactedValueChars;
    const head = text.slice(0, min);
    for (const form of head.length < min ? [] : this.#forms) {
      for (let from = form.indexOf(head, 1); from !== -1 && from <= form.length - min; from = form.indexOf(head, from + 1)) {
        if (text.startsWith(form.slice(from))) return auditDefaults.redactedValue + this.redact(text.slice(form.length - from));
      }
    }
    return this.redact(text);
  }
}

/**
 * A copy of a JSON value with every string and object key passed through
 * `redactor`, to the depth a plugin's answer may nest
 * (etc/plugin-answers.json maxNestingDepth; the transport refuses deeper
 * lines, and anything past it is left as it is). `value` itself when
 * nothing in it was redacted.
 */
export function redactJsonStrings(value: unknown, redactor: SecretRedactor, depth = 0): unknown {
  if (typeof value === 'string') return redactor.redact(value);
  if (redactor.empty || typeof value !== 'object' || value === null || depth > pluginAnswerLimits.maxNestingDepth) return value;
  if (Array.isArray(value)) {
    const items = value.map((item) => redactJsonStrings(item, redactor, depth + 1));
    return items.every((item, i) => item === value[i]) ? value : items;
  }
  const entries = Object.entries(value);
  const redacted = entries.map(([key, field]) => [redactor.redact(key), redactJsonStrings(field, redactor, depth + 1)] as const);
  return redacted.every(([key, field], i) => key === entries[i]![0] && field === entries[i]![1]) ? value : Object.fromEntries(redacted);
}

/**
 * The secret values one host gave its plugins (stored credentials, granted
 * host values), as of each plugin's latest launch, and one redactor for all
 * of them: audit records, log messages and stdout lines a plugin sends are
 * passed through it, whichever plugin they come from.
 */
export class KnownSecrets {
  readonly #byPlugin = new Map<string, readonly string[]>();
  #redactor = SecretRedactor.none;

  /** Records the values `pluginId` was launched with; the redactor is rebuilt only when they changed. */
  know(pluginId: string, values: readonly string[]): void {
    const before = this.#byPlugin.get(pluginId);
    if (before !== undefined && before.length === values.length && before.every((value, i) => value === values[i])) return;
    this.#byPlugin.set(pluginId, values);
    this.#redactor = new SecretRedactor([...this.#byPlugin.values()].flat());
  }

  /** The redactor of every value known now. */
  get redactor(): SecretRedactor {
    return this.#redactor;
  }
}
