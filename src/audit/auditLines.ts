/**
 * Turning audit records into bounded JSON lines, and arguments into their
 * redacted copy. Pure: no I/O, so any sink can use them.
 */
import auditDefaults from '../../etc/audit-defaults.json' with { type: 'json' };
import type { AuditRecord } from './auditRecord.js';
import { SecretRedactor } from '../secrets/knownSecrets.js';

/** The audit defaults, from `etc/audit-defaults.json`. */
export const AUDIT_DEFAULTS = Object.freeze({
  ...auditDefaults,
  secretFieldNames: Object.freeze([...auditDefaults.secretFieldNames]),
  authorizationSchemes: Object.freeze([...auditDefaults.authorizationSchemes]),
  lineValueFieldNames: Object.freeze([...auditDefaults.lineValueFieldNames]),
  namingFields: Object.freeze([...auditDefaults.namingFields]),
});

// Nested deeper than this, arguments are cut: a record is evidence, not a copy of every payload.
const MAX_DEPTH = 32;
// Past the first cut, strings shrink to this so that even escaped control characters fit the smallest line bound.
const LAST_RESORT_CHARS = 24;

/** A field name as matched against secret names: lower case, without `-` and `_`. */
function normalizedName(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

/** The set of secret field names to match: the defaults and the host's own, normalized. */
export function secretNameSet(extra: readonly string[] = []): ReadonlySet<string> {
  return new Set([...AUDIT_DEFAULTS.secretFieldNames, ...extra].map(normalizedName).filter((n) => n.length > 0));
}

/**
 * Whether a field holds a secret: its normalized name is a secret name or
 * ends with one (`github_token`, `X-Api-Key`, `dbPassword`), so that
 * `max_tokens` or `tokenizer` are kept.
 */
export function isSecretField(name: string, secrets: ReadonlySet<string>): boolean {
  const normalized = normalizedName(name);
  for (const secret of secrets) if (normalized === secret || normalized.endsWith(secret)) return true;
  return false;
}

// A name written before its value in text (`password=`, `"api_key": "`, `Authorization: `, `--token=`), and the quote that
// opens its value if one does. A name starts where no name character precedes it, and the lookahead takes it whole, so a
// match that fails costs one pass over the name and never retries its prefixes: the scan stays linear in the string's length.
// The separators: `:` and `=`, and the two-character `=>` (Ruby, Perl, PHP) and `:=` (Go, Make), whose second character
// would otherwise be taken for the value.
const NAME_IN_TEXT = /(?<![\w-])(?=(-{0,2}[A-Za-z_][\w-]*))\1["']?\s*(?:=>|:=|[:=])\s*(["']?)/g;
const schemeAlternatives = AUDIT_DEFAULTS.authorizationSchemes.map((scheme) => scheme.replace(/[^A-Za-z0-9]/g, '\\$&')).join('|');
// An HTTP authorization scheme in front of a header's value (`Bearer `, `Token `): kept, so a record still says what kind of credential it was.
const SCHEME_BEFORE_VALUE = new RegExp(`(?:${schemeAlternatives})[ \\t]+`, 'iy');
// A value that is not quoted and whose name does not hold a whole line: up to a space, quote or separator.
const WORD_VALUE = /[^\s"'&,;}\]]+/y;
// A password in a URL (`scheme://user:password@host`).
const URL_PASSWORD = /(?<![\w+.-])(?=([A-Za-z][\w+.-]*:\/\/[^/\s:@]*:))\1[^/\s@]+(?=@)/g;
// A bearer token standing alone, long enough that prose ("bearer bonds") is left as it is.
const BEARER_TOKEN = new RegExp(`(?<![\\w-])(bearer\\s+)[\\w.~+/=-]{${AUDIT_DEFAULTS.bearerTokenMinChars},}`, 'gi');
// A command-line flag naming its value's field (`--token`, `-password`), its value being the next argument.
const FLAG = /^-{1,2}[A-Za-z][\w-]*$/;
const LINE_VALUE_NAMES = new Set(AUDIT_DEFAULTS.lineValueFieldNames.map(normalizedName));

/** Where a value opened by `quote` at `from` ends: its closing quote (one after a backslash is escaped), or the line's end. */
function quotedValueEnd(text: string, from: number, quote: string): number {
  for (let at = from; at < text.length; at++) {
    const char = text[at];
    if (char === quote || char === '\n' || char === '\r') return at;
    if (char === '\\') at++;
  }
  return text.length;
}

/**
 * Where a JSON array or object written in text (`"password": ["…"]`) that
 * opens at `from` closes, quoted strings skipped; the text's end when it
 * never does. As an object field the whole value would be redacted: JSON
 * text of the same data must not keep all but its first character.
 */
function bracketedValueEnd(text: string, from: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let at = from; at < text.length; at++) {
    const char = text[at];
    if (quote !== undefined) {
      if (char === '\\') at++;
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === '[' || char === '{') depth++;
    else if (char === ']' || char === '}') {
      depth--;
      if (depth === 0) return at + 1;
    }
  }
  return text.length;
}

/**
 * Where the value of `name` starting at `from` ends: at its closing quote when
 * a quote opens it; for a name whose value is a whole header line (`Cookie`,
 * `Authorization`), at the line's end or the quote written before the name
 * (`-H 'Cookie: a=1; b=2'`); at the bracket closing a JSON array or object
 * that opens it; otherwise after one word.
 */
function valueEnd(text: string, from: number, holdsLine: boolean, openingQuote: string, quoteBeforeName: string | undefined): number {
  if (openingQuote !== '') return quotedValueEnd(text, from, openingQuote);
  if (holdsLine) return quotedValueEnd(text, from, quoteBeforeName === '"' || quoteBeforeName === "'" ? quoteBeforeName : '\n');
  if (text[from] === '[' || text[from] === '{') return bracketedValueEnd(text, from);
  WORD_VALUE.lastIndex = from;
  return WORD_VALUE.test(text) ? WORD_VALUE.lastIndex : from;
}

/** `text` with the value after every secret name in it, a URL's password and a bearer token replaced by `[redacted]`. */
function redactText(text: string, secrets: ReadonlySet<string>): string {
  const redacted = AUDIT_DEFAULTS.redactedValue;
  let out = '';
  let copied = 0;
  for (const match of text.matchAll(NAME_IN_TEXT)) {
    const name = match[1] ?? '';
    if (match.index < copied || !isSecretField(name, secrets)) continue;
    const holdsLine = LINE_VALUE_NAMES.has(normalizedName(name));
    let start = match.index + match[0].length;
    SCHEME_BEFORE_VALUE.lastIndex = start;
    if (holdsLine && SCHEME_BEFORE_VALUE.test(text)) start = SCHEME_BEFORE_VALUE.lastIndex;
    const end = valueEnd(text, start, holdsLine, match[2] ?? '', text[match.index - 1]);
    if (end === start) continue;
    out += text.slice(copied, start) + redacted;
    copied = end;
  }
  out += text.slice(copied);
  return out.replace(URL_PASSWORD, (_whole, head: string) => `${head}${redacted}`).replace(BEARER_TOKEN, (_whole, scheme: string) => `${scheme}${redacted}`);
}

/** Whether `item`, an array's element, names the secret that follows it: a flag (`--token`), or the name of a `[name, value]` pair. */
function namesNext(item: unknown, index: number, array: readonly unknown[], secrets: ReadonlySet<string>): boolean {
  if (typeof item !== 'string' || !isSecretField(item, secrets)) return false;
  return FLAG.test(item) || (array.length === 2 && index === 0);
}

/**
 * A copy of call arguments with secrets replaced by `[redacted]`, at any
 * depth: the value of every secret field; the element after a flag or the
 * second of a `[name, value]` pair that names one; the `value` of an object
 * whose `name` or `key` names one; and, inside strings, the value written
 * after a secret name (`password=…`, `"api_key": "…"`, `Authorization:
 * Bearer …`), a URL's password and a bearer token; and, wherever they are,
 * the secret values `known` holds and their encoded copies. Values JSON
 * cannot hold are left out as JSON.stringify would; cycles and nesting past
 * 32 levels become `[cut]`.
 */
export function redactArguments(args: unknown, secrets: ReadonlySet<string>, known: SecretRedactor = SecretRedactor.none): unknown {
  const seen = new Set<object>();
  const redacted = AUDIT_DEFAULTS.redactedValue;
  const copy = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return known.redact(redactText(value, secrets));
    if (typeof value !== 'object' || value === null) return typeof value === 'bigint' ? value.toString() : value;
    if (depth >= MAX_DEPTH || seen.has(value)) return '[cut]';
    seen.add(value);
    try {
      if (Array.isArray(value)) return value.map((item, index) => (index > 0 && namesNext(value[index - 1], index - 1, value, secrets) ? redacted : copy(item, depth + 1)));
      const entries = Object.entries(value);
      const namesValue = entries.some(([key, field]) => AUDIT_DEFAULTS.namingFields.includes(key) && typeof field === 'string' && isSecretField(field, secrets));
      // Defined, not assigned: an argument named `__proto__` (an own key of what JSON.parse made, and sent to the
      // plugin as such) assigned to a plain object would set its prototype and vanish from the record.
      return Object.fromEntries(entries.map(([key, field]) => [key, isSecretField(key, secrets) || (namesValue && key === AUDIT_DEFAULTS.namedValueField) ? redacted : copy(field, depth + 1)]));
    } finally {
      seen.delete(value);
    }
  };
  return copy(args, 0);
}

function byteLength(line: string): number {
  return Buffer.byteLength(line, 'utf8');
}

function cutStrings(value: unknown, chars: number): unknown {
  if (typeof value === 'string') return value.length > chars ? value.slice(0, chars) : value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, cutStrings(field, chars)]));
}

/**
 * One record as one JSON line (without its newline) of at most `maxBytes`
 * UTF-8 bytes: a call's arguments go first (`arguments_omitted`), then every
 * string is cut (`truncated`), and at last only the kind, time and outcome
 * are kept.
 */
export function auditLine(record: AuditRecord, maxBytes: number): string {
  const whole = JSON.stringify(record);
  if (byteLength(whole) <= maxBytes) return whole;
  let smaller: Record<string, unknown> = { ...record };
  if (record.kind === 'call' && 'arguments' in record) {
    const { arguments: _dropped, ...rest } = record;
    smaller = { ...rest, arguments_omitted: 'too_large' };
    const line = JSON.stringify(smaller);
    if (byteLength(line) <= maxBytes) return line;
  }
  for (const chars of [AUDIT_DEFAULTS.truncatedStringChars, LAST_RESORT_CHARS]) {
    const line = JSON.stringify({ ...(cutStrings(smaller, chars) as Record<string, unknown>), truncated: true });
    if (byteLength(line) <= maxBytes) return line;
  }
  return JSON.stringify({ kind: record.kind, at: record.at, ...(record.kind === 'call' ? { outcome: record.outcome } : {}), truncated: true });
}
