/**
 * Redacting secret values the host itself knows (a plugin's stored
 * credentials, the host environment values its install granted) wherever
 * they show up in text: as written, and in the encodings a program prints a
 * secret in without meaning to (JSON-escaped, percent-encoded, base64 and
 * base64url at any byte offset, hex). Name-based redaction misses a value
 * printed with no name before it, and every encoded copy.
 */
import auditDefaults from '../../etc/audit-defaults.json' with { type: 'json' };

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
 * Every form of `values` that is redacted: each value of at least
 * `minRedactedValueChars` characters as written, JSON-escaped and
 * percent-encoded; for values of at least `minEncodedSecretChars`, also its
 * base64 and base64url cores and its hex (lower and upper case). Longest
 * first, so a form that holds another is replaced whole.
 */
export function secretForms(values: Iterable<string>): string[] {
  const forms = new Set<string>();
  for (const value of values) {
    if (value.length < auditDefaults.minRedactedValueChars) continue;
    forms.add(value).add(JSON.stringify(value).slice(1, -1)).add(encodeURIComponent(value));
    if (value.length < auditDefaults.minEncodedSecretChars) continue;
    const bytes = Buffer.from(value, 'utf8');
    for (const core of base64Cores(bytes)) forms.add(core).add(core.replace(/\+/g, '-').replace(/\//g, '_'));
    const hex = bytes.toString('hex');
    forms.add(hex).add(hex.toUpperCase());
  }
  return [...forms].filter((form) => form.length >= auditDefaults.minRedactedValueChars).sort((a, b) => b.length - a.length);
}

const escapedForRegExp = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

/**
 * Replaces known secret values, and their encoded copies, with
 * `[redacted]`. One pass over the text: the forms are one alternation, so
 * the cost is the text's length times the forms that start at each place,
 * not a rescan per form.
 */
export class SecretRedactor {
  /** A redactor that knows no secret and returns text as it is. */
  static readonly none = new SecretRedactor([]);

  readonly #pattern: RegExp | undefined;
  readonly #forms: readonly string[];

  /** @param values - The secret values as the host holds them. */
  constructor(values: Iterable<string>) {
    const forms = secretForms(values);
    this.#forms = forms;
    this.#pattern = forms.length === 0 ? undefined : new RegExp(forms.map(escapedForRegExp).join('|'), 'g');
  }

  /** Whether it knows any secret. */
  get empty(): boolean {
    return this.#pattern === undefined;
  }

  /** `text` with every known secret form replaced by `[redacted]`. */
  redact(text: string): string {
    return this.#pattern === undefined ? text : text.replace(this.#pattern, auditDefaults.redactedValue);
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
