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

// Deeper than this, a value is left as it is: the transport already bounds the nesting of what a plugin sends.
const MAX_JSON_DEPTH = 64;

/** A copy of a JSON value with every string, at any depth up to 64, passed through `redactor`. */
export function redactJsonStrings(value: unknown, redactor: SecretRedactor, depth = 0): unknown {
  if (typeof value === 'string') return redactor.redact(value);
  if (redactor.empty || typeof value !== 'object' || value === null || depth >= MAX_JSON_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => redactJsonStrings(item, redactor, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, redactJsonStrings(field, redactor, depth + 1)]));
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
