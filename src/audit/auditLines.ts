/**
 * Turning audit records into bounded JSON lines, and arguments into their
 * redacted copy. Pure: no I/O, so any sink can use them.
 */
import auditDefaults from '../../etc/audit-defaults.json' with { type: 'json' };
import type { AuditRecord } from './auditRecord.js';

/** The audit defaults, from `etc/audit-defaults.json`. */
export const AUDIT_DEFAULTS = Object.freeze({ ...auditDefaults, secretFieldNames: Object.freeze([...auditDefaults.secretFieldNames]) });

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
function isSecretField(name: string, secrets: ReadonlySet<string>): boolean {
  const normalized = normalizedName(name);
  for (const secret of secrets) if (normalized === secret || normalized.endsWith(secret)) return true;
  return false;
}

/**
 * A copy of call arguments with the value of every secret field, at any
 * depth, replaced by `[redacted]`. Values JSON cannot hold are left out as
 * JSON.stringify would; cycles and nesting past 32 levels become `[cut]`.
 */
export function redactArguments(args: unknown, secrets: ReadonlySet<string>): unknown {
  const seen = new Set<object>();
  const copy = (value: unknown, depth: number): unknown => {
    if (typeof value !== 'object' || value === null) return typeof value === 'bigint' ? value.toString() : value;
    if (depth >= MAX_DEPTH || seen.has(value)) return '[cut]';
    seen.add(value);
    try {
      if (Array.isArray(value)) return value.map((item) => copy(item, depth + 1));
      const out: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(value)) {
        out[key] = isSecretField(key, secrets) ? AUDIT_DEFAULTS.redactedValue : copy(field, depth + 1);
      }
      return out;
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
