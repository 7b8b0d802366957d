/**
 * One rule per kind of option value, shared by the host, the sandbox and the
 * CLI, and a small schema check that refuses unknown keys with the closest
 * known name. Every refusal is HOST_INVALID_OPTIONS naming the option's path.
 */
import hostOptionData from '../../etc/host-options.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import { closestName } from './closestName.js';

/** The longest delay a Node timer honours (2^31 - 1 ms); a longer one would fire at once. */
export const MAX_TIMER_MS: number = hostOptionData.maxTimerMs;

/**
 * The kinds of number an option can be: `milliseconds` (a positive integer
 * no longer than a timer can wait), `millisecondsOrZero` (0 meaning never),
 * `count` and `bytes` (positive safe integers).
 */
export type NumberKind = 'milliseconds' | 'millisecondsOrZero' | 'count' | 'bytes';

const NUMBER_RULES: Readonly<Record<NumberKind, { readonly accepts: (n: number) => boolean; readonly says: string }>> = {
  milliseconds: { accepts: (n) => Number.isSafeInteger(n) && n > 0 && n <= MAX_TIMER_MS, says: `a whole number of milliseconds from 1 to ${MAX_TIMER_MS}` },
  millisecondsOrZero: {
    accepts: (n) => Number.isSafeInteger(n) && n >= 0 && n <= MAX_TIMER_MS,
    says: `0 (never) or a whole number of milliseconds up to ${MAX_TIMER_MS}`,
  },
  count: { accepts: (n) => Number.isSafeInteger(n) && n > 0, says: 'a positive whole number' },
  bytes: { accepts: (n) => Number.isSafeInteger(n) && n > 0, says: 'a positive whole number of bytes' },
};

/** What is wrong with `value` as a number of `kind` (a phrase like "must be …, got …"), or undefined when it is fine. */
export function numberProblem(kind: NumberKind, value: unknown): string | undefined {
  const rule = NUMBER_RULES[kind];
  return typeof value === 'number' && rule.accepts(value) ? undefined : `must be ${rule.says}, got ${describeValue(value)}`;
}

/** How a rejected value is shown in a message: short, and never a secret's whole text. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.length > 40 ? 'a long string' : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** The HOST_INVALID_OPTIONS error for the option at `path` (`sandbox.memoryLimitBytes`, `timeoutMs`). */
export function invalidOption(path: string, problem: string, closest?: string): HostError {
  return hostError('HOST_INVALID_OPTIONS', `option ${path} ${problem}${closest === undefined ? '' : `; did you mean ${closest}?`}`, {
    details: { option: path, ...(closest === undefined ? {} : { closest }) },
    ...(closest === undefined ? {} : { hint: `Rename ${path} to ${closest.slice(closest.lastIndexOf('.') + 1)}.` }),
  });
}

/** How one option's value is checked. */
export type OptionRule =
  | NumberKind
  | 'string'
  | 'boolean'
  | 'function'
  | 'object'
  | 'strings'
  | 'stringRecord'
  | 'pathSegment'
  | 'abortSignal'
  | 'signature'
  | { readonly oneOf: readonly (string | boolean)[] }
  | { readonly number: NumberKind; readonly orFalse: true }
  | { readonly listOf: NumberKind }
  | { readonly fields: OptionSchema }
  | { readonly recordOf: OptionRule };

/** The options an object may have, each with its rule; any other key is refused. */
export type OptionSchema = Readonly<Record<string, OptionRule>>;

/** Whether `value` is a plain object (not null, an array, or a class instance such as a Date). */
export function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Checks an options object against its schema: a plain object (or
 * undefined), no unknown key (named with the closest known one), and every
 * present value by its rule. `where` names the object in messages
 * (`PluginHost.open options`, `sandbox`).
 */
export function checkOptions(value: unknown, schema: OptionSchema, where: string, prefix = ''): HostError | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) return invalidOption(prefix === '' ? where : prefix.slice(0, -1), `must be an object, got ${describeValue(value)}`);
  // Checked on every host call: a path is spelled only for a refusal, and no entry pairs, key arrays or closures are
  // made (a plain object's own keys, in Object.keys order; the prototype's are skipped).
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const field = value[key];
    const rule = Object.hasOwn(schema, key) ? schema[key] : undefined;
    if (rule === undefined) {
      const closest = closestName(key, Object.keys(schema));
      return invalidOption(`${prefix}${key}`, `is not an option of ${where}`, closest === undefined ? undefined : `${prefix}${closest}`);
    }
    if (field === undefined) continue;
    const problem = checkRule(field, rule, where, prefix, key);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** The refusal of the option at `prefix` + `key` that `text` describes, if any. */
function problemAt(prefix: string, key: string, text: string | undefined): HostError | undefined {
  return text === undefined ? undefined : invalidOption(`${prefix}${key}`, text);
}

function checkRule(value: unknown, rule: OptionRule, where: string, prefix: string, key: string): HostError | undefined {
  if (typeof rule === 'string') {
    switch (rule) {
      case 'string':
        return problemAt(prefix, key, typeof value === 'string' ? undefined : `must be a string, got ${describeValue(value)}`);
      case 'boolean':
        return problemAt(prefix, key, typeof value === 'boolean' ? undefined : `must be true or false, got ${describeValue(value)}`);
      case 'function':
        return problemAt(prefix, key, typeof value === 'function' ? undefined : `must be a function, got ${describeValue(value)}`);
      case 'object':
        return problemAt(prefix, key, typeof value === 'object' && value !== null && !Array.isArray(value) ? undefined : `must be an object, got ${describeValue(value)}`);
      case 'strings':
        return problemAt(prefix, key, Array.isArray(value) && value.every((v) => typeof v === 'string') ? undefined : `must be a list of strings, got ${describeValue(value)}`);
      case 'stringRecord':
        return problemAt(prefix, key, isPlainObject(value) && Object.values(value).every((v) => v === undefined || typeof v === 'string') ? undefined : `must map names to strings`);
      case 'pathSegment':
        return problemAt(prefix, key, pathSegmentProblem(value));
      case 'signature':
        return problemAt(prefix, key, typeof value === 'string' || value instanceof Uint8Array ? undefined : `must be a string or bytes, got ${describeValue(value)}`);
      case 'abortSignal':
        return problemAt(prefix, key, value instanceof AbortSignal ? undefined : `must be an AbortSignal, got ${describeValue(value)}`);
      default:
        return problemAt(prefix, key, numberProblem(rule, value));
    }
  }
  if ('oneOf' in rule) {
    if (rule.oneOf.includes(value as string)) return undefined;
    const near = typeof value === 'string' ? closestName(value, rule.oneOf.filter((v): v is string => typeof v === 'string')) : undefined;
    const allowed = rule.oneOf.map((v) => JSON.stringify(v)).join(' or ');
    return problemAt(prefix, key, `must be ${allowed}, got ${describeValue(value)}${near === undefined ? '' : ` (did you mean ${JSON.stringify(near)}?)`}`);
  }
  if ('orFalse' in rule) return problemAt(prefix, key, value === false ? undefined : numberProblem(rule.number, value)?.replace(', got', ' or false, got'));
  if ('listOf' in rule) {
    if (!Array.isArray(value) || value.length === 0) return problemAt(prefix, key, `must list at least one value, got ${describeValue(value)}`);
    const bad = value.find((v) => numberProblem(rule.listOf, v) !== undefined);
    return bad === undefined ? undefined : problemAt(prefix, key, `lists ${describeValue(bad)}: each ${numberProblem(rule.listOf, bad)!.replace(/, got .*$/, '')}`);
  }
  if ('fields' in rule) return checkOptions(value, rule.fields, where, `${prefix}${key}.`);
  if (!isPlainObject(value)) return problemAt(prefix, key, `must be an object, got ${describeValue(value)}`);
  for (const [entryKey, entry] of Object.entries(value)) {
    if (entry === undefined) continue;
    const bad = checkRule(entry, rule.recordOf, where, `${prefix}${key}.`, entryKey);
    if (bad !== undefined) return bad;
  }
  return undefined;
}

/** What makes `value` unfit as one directory name inside another (a name that could climb out or nest), or undefined. */
function pathSegmentProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string, got ${describeValue(value)}`;
  if (value === '' || value === '.' || value === '..') return `must name a directory, got ${describeValue(value)}`;
  if (/[/\\\0]/.test(value)) return `must be one directory name, without / or \\, got ${describeValue(value)}`;
  return undefined;
}
