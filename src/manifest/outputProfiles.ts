/**
 * Output profiles: the GUM contract's expression-profile DSL, the stages this
 * host implements. A profile shapes every successful result of the variants
 * bound to it (fewer fields, shorter arrays and strings) so a result fits an
 * agent's token budget; a lossy profile keeps the full result recoverable.
 * Pure: definitions, their semantic checks, inheritance and the stages.
 */
import profileData from '../../etc/output-profiles.json' with { type: 'json' };
import type { HostErrorCode } from '../errors/registry.js';
import type { ManifestForm } from './model.js';
import { ownString, toolEntries, type ToolEntry } from './access.js';
import { pointerOf, violation, type Violation } from './violations.js';

/** How a result's recovery copy is kept when a profile loses information. */
export type ProfileRecovery = 'none' | 'local_artifact';

/**
 * One output profile definition, as a manifest's `output_profiles` table or
 * a profile file writes it. Stages run in the order the fields are listed.
 */
export interface OutputProfile {
  /** One-level base profile: its fields apply where this one sets none. */
  readonly inherits?: string;
  /** Top-level keys kept (of the body, or of each element of a top-level array). */
  readonly projection?: readonly string[];
  /** Dot paths kept (`price.currency`, `segments[].aircraft`); everything else is removed. */
  readonly keep_fields?: readonly string[];
  /** Dot paths removed, after `keep_fields`. */
  readonly drop_fields?: readonly string[];
  /** Removes null, empty-string, empty-object and empty-array fields where the variant's `null_elision_safe_fields` allow it. */
  readonly strip_nulls?: boolean;
  /** Unwraps an object whose only key is an envelope (`items`, `data`, `results`, `messages`). */
  readonly flatten?: boolean;
  /** Removes a record of the record array that equals an earlier one (after the stages before it), counting it as omitted. */
  readonly dedupe?: boolean;
  /** Orders the record array by these dot paths, the first deciding; `-path` descending. Stable; records without a number or string there go last. */
  readonly sort_by?: readonly string[];
  /** Caps every array at `max_items`, recording how many were omitted beside it. */
  readonly collapse_arrays?: { readonly max_items: number };
  /** Caps strings at `fields[path or key]`, else `default_chars`, in code points. */
  readonly truncate_strings?: { readonly default_chars?: number; readonly fields?: Readonly<Record<string, number>> };
  /** Caps the record array; `0` means no cap. */
  readonly limit?: number;
  /** Said whenever the shaped result has an empty record array (NFC, at most 500 code points). */
  readonly on_empty?: string;
  /** `local_artifact` (the default of a lossy profile) writes the unshaped result to the profile directory. */
  readonly recovery?: ProfileRecovery;
}

/** A profile with its base merged in and its recovery settled: what a call applies. */
export interface EffectiveOutputProfile extends Omit<OutputProfile, 'inherits' | 'recovery'> {
  /** The name the variant binds. */
  readonly name: string;
  /** Whether any stage of the profile can remove information. */
  readonly lossy: boolean;
  /** The recovery in force. */
  readonly recovery: ProfileRecovery;
}

/** One thing wrong with a profile definition. */
export interface ProfileProblem {
  /** JSON pointer into the document the definitions came from. */
  readonly pointer: string;
  /** Stable code. */
  readonly code: Extract<HostErrorCode, 'PROFILE_INVALID' | 'PROFILE_RECOVERY_DISABLED'>;
  /** What is wrong. */
  readonly message: string;
}

/** What shaping did to one result. */
export interface ProfileOutcome {
  /** The profile applied. */
  readonly profile: string;
  /** Whether this result lost information (fields, items or characters). */
  readonly lossy: boolean;
  /** Fields removed by projection, keep/drop and strip_nulls. */
  readonly removed_fields: number;
  /** Array items omitted by collapse_arrays and limit. */
  readonly omitted_count: number;
  /** Strings shortened. */
  readonly truncated_strings: number;
  /** The length of the shaped record array, when the body has one. */
  readonly result_count?: number;
  /** The profile's `on_empty`, NFC-normalized, when the shaped record array is empty. */
  readonly on_empty_message?: string;
  /** Where the unshaped result was kept (`<profile>/results/<sha256>.json`), when the result was lossy and recovery is on. */
  readonly full_result_path?: string;
}

/** The built-in profiles a tool may name without shipping one (`etc/output-profiles.json`). */
export const BUILTIN_OUTPUT_PROFILES: Readonly<Record<string, OutputProfile>> = Object.freeze(profileData.builtins as Record<string, OutputProfile>);

const ENVELOPE_KEYS: readonly string[] = profileData.envelopeKeys;
const LOSSY_STAGES: readonly (keyof OutputProfile)[] = profileData.lossyStages as (keyof OutputProfile)[];
const ON_EMPTY_MAX = profileData.onEmptyMaxCodepoints;
const MARKER = profileData.truncationMarker;
const RAW_PROFILE = profileData.rawProfile;

const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined => (Object.hasOwn(record, key) ? record[key] : undefined);
const escapeToken = (token: string): string => token.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The size of a text in estimated tokens: its UTF-8 bytes over
 * `tokenEstimateBytesPerToken` (etc/output-profiles.json), rounded up. The
 * seeds name no tokenizer, so one fixed ratio keeps a budget, and a profile
 * test's `expect_max_tokens`, the same on every host.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / profileData.tokenEstimateBytesPerToken);
}

/** Whether any stage of `profile` can remove information. */
export function isLossyProfile(profile: OutputProfile): boolean {
  return LOSSY_STAGES.some((stage) => {
    const value = profile[stage];
    if (value === undefined || value === false) return false;
    if (Array.isArray(value)) return value.length > 0;
    return !(stage === 'limit' && value === 0);
  });
}

/**
 * Merges `name`'s base into it and settles its recovery. Looks names up in
 * `defined` first, then the built-ins. Inheritance is one level: a base's own
 * `inherits` is not followed.
 */
export function effectiveProfile(name: string, defined: Readonly<Record<string, OutputProfile>>): EffectiveOutputProfile | undefined {
  const lookup = (n: string): OutputProfile | undefined => own(defined, n) ?? own(BUILTIN_OUTPUT_PROFILES, n);
  const profile = lookup(name);
  if (profile === undefined) return undefined;
  const base = profile.inherits === undefined ? {} : (lookup(profile.inherits) ?? {});
  const { inherits: _ownBase, ...ownFields } = profile;
  const { inherits: _baseBase, ...baseFields } = base;
  const merged: OutputProfile = { ...baseFields, ...ownFields };
  const lossy = isLossyProfile(merged);
  const { recovery, ...stages } = merged;
  return { ...stages, name, lossy, recovery: recovery ?? (lossy ? 'local_artifact' : 'none') };
}

/**
 * The semantic checks of a set of definitions (their structure is the JSON
 * Schema's): a base must exist and not lead back to the profile; `on_empty`
 * at most 500 code points after NFC; `collapse_arrays.max_items = 0` only
 * with `on_empty`; a lossy profile may not turn recovery off (the contract:
 * lossy plugin profiles keep recovery enabled). `at` is the pointer of the
 * definitions' table.
 */
export function checkProfileDefinitions(defined: Readonly<Record<string, OutputProfile>>, at: string): ProfileProblem[] {
  const problems: ProfileProblem[] = [];
  for (const [name, profile] of Object.entries(defined)) {
    const pointer = `${at}/${escapeToken(name)}`;
    const base = profile.inherits;
    if (base !== undefined) {
      const found = own(defined, base) ?? own(BUILTIN_OUTPUT_PROFILES, base);
      if (base === name || found?.inherits === name) {
        problems.push({ pointer: `${pointer}/inherits`, code: 'PROFILE_INVALID', message: `output profile ${JSON.stringify(name)} inherits from itself through ${JSON.stringify(base)}` });
      } else if (found === undefined) {
        problems.push({ pointer: `${pointer}/inherits`, code: 'PROFILE_INVALID', message: `output profile ${JSON.stringify(name)} inherits ${JSON.stringify(base)}, which is neither defined here nor built in` });
      }
    }
    const merged = effectiveProfile(name, defined);
    if (merged === undefined) continue;
    if (typeof merged.on_empty === 'string' && [...merged.on_empty.normalize('NFC')].length > ON_EMPTY_MAX) {
      problems.push({ pointer: `${pointer}/on_empty`, code: 'PROFILE_INVALID', message: `on_empty has more than ${ON_EMPTY_MAX} code points (after NFC normalization)` });
    }
    if (merged.collapse_arrays?.max_items === 0 && merged.on_empty === undefined) {
      problems.push({ pointer: `${pointer}/collapse_arrays/max_items`, code: 'PROFILE_INVALID', message: 'collapse_arrays.max_items 0 empties every array; it needs on_empty to say so' });
    }
    if (merged.lossy && merged.recovery === 'none') {
      problems.push({
        pointer: `${pointer}/recovery`,
        code: 'PROFILE_RECOVERY_DISABLED',
        message: `output profile ${JSON.stringify(name)} can remove information but sets recovery "none"; a lossy profile keeps recovery (local_artifact)`,
      });
    }
  }
  return problems;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The definitions of a GUM manifest's (or profile file's) `output_profiles` table; entries that are not tables are left to the schema. */
export function definedProfiles(doc: unknown): Record<string, OutputProfile> {
  const table = isRecord(doc) && Object.hasOwn(doc, 'output_profiles') ? doc.output_profiles : undefined;
  if (!isRecord(table)) return {};
  return Object.fromEntries(Object.entries(table).filter(([, body]) => isRecord(body))) as Record<string, OutputProfile>;
}

/**
 * The profile checks of a GUM-form manifest: its `output_profiles` (see
 * {@link checkProfileDefinitions}), and each tool's `output_profile`, which
 * must be defined there, built in, or `known` to the host; otherwise every
 * call of the tool would fail (PROFILE_NOT_FOUND), so it is refused now.
 */
export function checkOutputProfiles(doc: unknown, form: ManifestForm, known?: (name: string) => boolean): Violation[] {
  if (form !== 'gum-json' && form !== 'gum-toml') return [];
  const defined = definedProfiles(doc);
  const out = checkProfileDefinitions(defined, '/output_profiles').map((p) => violation('output_profiles', p.code, p.pointer, p.message));
  for (const entry of toolEntries(doc, form)) {
    const { at, tool } = entry;
    out.push(...checkRawResultDeclaration(entry, form));
    const name = ownString(tool, 'output_profile');
    if (name === undefined || own(defined, name) !== undefined || own(BUILTIN_OUTPUT_PROFILES, name) !== undefined || known?.(name) === true) continue;
    const message = `output profile ${JSON.stringify(name)} is neither defined in output_profiles nor built in (${Object.keys(BUILTIN_OUTPUT_PROFILES).join(', ')})`;
    out.push(violation('output_profiles', 'PROFILE_INVALID', pointerOf(...at, 'output_profile'), message));
  }
  return out;
}

/**
 * The contract's exception to "each tool declares output_profile", beyond
 * what the schema requires: a token_budget_exception belongs to a
 * raw_result_allowed tool only, and (TOML, where a profile is required) the
 * built-in `raw` profile, which shapes nothing, is not a way around it.
 */
function checkRawResultDeclaration({ at, tool }: ToolEntry, form: ManifestForm): Violation[] {
  const code = 'PLUGIN_OUTPUT_PROFILE_REQUIRED';
  if (own(tool, 'raw_result_allowed') === true) return [];
  const out: Violation[] = [];
  if (Object.hasOwn(tool, 'token_budget_exception')) {
    out.push(violation('output_profiles', code, pointerOf(...at, 'token_budget_exception'), 'token_budget_exception applies only to a tool that declares raw_result_allowed = true'));
  }
  if (form === 'gum-toml' && ownString(tool, 'output_profile') === RAW_PROFILE) {
    const message = `binds the built-in ${JSON.stringify(RAW_PROFILE)} profile, which shapes nothing; declare raw_result_allowed = true with a token_budget_exception instead`;
    out.push(violation('output_profiles', code, pointerOf(...at, 'output_profile'), message));
  }
  return out;
}

/** A JSON object (not an array, not null). */
type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A path tree: each step a key (`segments[]` and `segments` both step into `segments`), a leaf keeping or dropping the whole subtree. */
interface PathTree {
  leaf: boolean;
  readonly children: Map<string, PathTree>;
}

function pathTree(paths: readonly string[]): PathTree {
  const root: PathTree = { leaf: false, children: new Map() };
  for (const path of paths) {
    let node = root;
    for (const step of path.split('.').map((s) => s.replace(/\[\]$/, ''))) {
      let next = node.children.get(step);
      if (next === undefined) {
        next = { leaf: false, children: new Map() };
        node.children.set(step, next);
      }
      node = next;
    }
    node.leaf = true;
  }
  return root;
}

/** Mutable tallies of one shaping run. */
interface Tally {
  removed: number;
  omitted: number;
  truncated: number;
}

/** Counts the fields a removed value carried (itself included). */
function fieldCount(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + fieldCount(v) - 1, 0) + 1;
  if (isObject(value)) return Object.values(value).reduce((n: number, v) => n + fieldCount(v), 0) + 1;
  return 1;
}

/** Applies `step` to the body, or to each element when the body is an array. */
const perRecord = (body: unknown, step: (value: unknown) => unknown): unknown => (Array.isArray(body) ? body.map(step) : step(body));

function project(value: unknown, keys: ReadonlySet<string>, tally: Tally): unknown {
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    if (keys.has(key)) out[key] = v;
    else tally.removed += fieldCount(v);
  }
  return out;
}

function keep(value: unknown, tree: PathTree, tally: Tally): unknown {
  if (tree.leaf) return value;
  if (Array.isArray(value)) return value.map((v) => keep(v, tree, tally));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    const child = tree.children.get(key);
    if (child === undefined) tally.removed += fieldCount(v);
    else out[key] = keep(v, child, tally);
  }
  return out;
}

function drop(value: unknown, tree: PathTree, tally: Tally): unknown {
  if (Array.isArray(value)) return value.map((v) => drop(v, tree, tally));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    const child = tree.children.get(key);
    if (child?.leaf === true) tally.removed += fieldCount(v);
    else out[key] = child === undefined ? v : drop(v, child, tally);
  }
  return out;
}

const isEmptyValue = (value: unknown): boolean =>
  value === null || value === '' || (Array.isArray(value) && value.length === 0) || (isObject(value) && Object.keys(value).length === 0);

/** Removes empty fields whose dot path (`a.b`, `a[].b`) the safe list names, or every one under `*`; children first. */
function stripNulls(value: unknown, path: string, safe: ReadonlySet<string>, tally: Tally): unknown {
  if (Array.isArray(value)) return value.map((v) => stripNulls(v, `${path}[]`, safe, tally));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    const at = path === '' ? key : `${path}.${key}`;
    const stripped = stripNulls(v, at, safe, tally);
    if (isEmptyValue(stripped) && (safe.has('*') || safe.has(at))) tally.removed += 1;
    else out[key] = stripped;
  }
  return out;
}

function flatten(body: unknown): unknown {
  if (!isObject(body)) return body;
  const keys = Object.keys(body);
  const only = keys.length === 1 ? keys[0] : undefined;
  return only !== undefined && ENVELOPE_KEYS.includes(only) ? body[only] : body;
}

/** Caps arrays; an object's capped field `k` gets `k_omitted_count`, a capped top-level array becomes `{items, omitted_count}`. */
function collapse(value: unknown, max: number, tally: Tally, top: boolean): unknown {
  if (Array.isArray(value)) {
    const kept = value.slice(0, max).map((v) => collapse(v, max, tally, false));
    const omitted = value.length - kept.length;
    tally.omitted += omitted;
    return top && omitted > 0 ? { items: kept, omitted_count: omitted } : kept;
  }
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = collapse(v, max, tally, false);
    if (Array.isArray(v) && v.length > max) out[`${key}_omitted_count`] = v.length - max;
  }
  return out;
}

function truncate(value: unknown, path: string, key: string | undefined, rule: NonNullable<OutputProfile['truncate_strings']>, tally: Tally): unknown {
  if (typeof value === 'string') {
    const limit = own(rule.fields ?? {}, path) ?? (key === undefined ? undefined : own(rule.fields ?? {}, key)) ?? rule.default_chars;
    const points = [...value];
    if (limit === undefined || points.length <= limit) return value;
    tally.truncated += 1;
    return points.slice(0, limit).join('') + MARKER;
  }
  if (Array.isArray(value)) return value.map((v) => truncate(v, `${path}[]`, key, rule, tally));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) out[k] = truncate(v, path === '' ? k : `${path}.${k}`, k, rule, tally);
  return out;
}

/** The key of the body's record array: `''` for a top-level array, an envelope key, else an object's one array field. */
function recordKey(body: unknown): string | undefined {
  if (Array.isArray(body)) return '';
  if (!isObject(body)) return undefined;
  const envelope = ENVELOPE_KEYS.find((k) => Object.hasOwn(body, k) && Array.isArray(body[k]));
  if (envelope !== undefined) return envelope;
  const arrays = Object.keys(body).filter((k) => Array.isArray(body[k]));
  return arrays.length === 1 ? arrays[0] : undefined;
}

function recordsOf(body: unknown, key: string): unknown[] {
  return (key === '' ? body : (body as JsonObject)[key]) as unknown[];
}

function limitRecords(body: unknown, limit: number, tally: Tally): unknown {
  const key = recordKey(body);
  if (key === undefined || limit === 0) return body;
  const records = recordsOf(body, key);
  if (records.length <= limit) return body;
  tally.omitted += records.length - limit;
  return key === '' ? records.slice(0, limit) : { ...(body as JsonObject), [key]: records.slice(0, limit) };
}

/** The record array with `step` applied to it; the body as it is when it has none. */
function withRecords(body: unknown, step: (records: unknown[]) => unknown[]): unknown {
  const key = recordKey(body);
  if (key === undefined) return body;
  const records = step(recordsOf(body, key));
  return key === '' ? records : { ...(body as JsonObject), [key]: records };
}

function dedupeRecords(records: unknown[], tally: Tally): unknown[] {
  const seen = new Set<string>();
  const kept = records.filter((record) => {
    const text = canonicalJson(record);
    if (seen.has(text)) return false;
    seen.add(text);
    return true;
  });
  tally.omitted += records.length - kept.length;
  return kept;
}

/** JSON with object keys sorted, so records that differ only in key order are equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** A sort key's value: a number or string at the dot path, else undefined (sorted last). */
function sortValue(record: unknown, path: readonly string[]): number | string | undefined {
  let value = record;
  for (const step of path) value = isObject(value) && Object.hasOwn(value, step) ? value[step] : undefined;
  return typeof value === 'number' || typeof value === 'string' ? value : undefined;
}

/** Numbers before strings; numbers by value, strings by UTF-16 code units (not the locale, so every host orders alike). */
function compareValues(a: number | string, b: number | string): number {
  if (typeof a !== typeof b) return typeof a === 'number' ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function sortRecords(records: unknown[], keys: readonly string[]): unknown[] {
  const order = keys.map((key) => ({ descending: key.startsWith('-'), path: key.replace(/^-/, '').split('.') }));
  const compare = (a: unknown, b: unknown): number => {
    for (const { descending, path } of order) {
      const x = sortValue(a, path);
      const y = sortValue(b, path);
      if (x === undefined || y === undefined) {
        if (x !== y) return x === undefined ? 1 : -1;
        continue;
      }
      const c = compareValues(x, y);
      if (c !== 0) return descending ? -c : c;
    }
    return 0;
  };
  return [...records].sort(compare);
}

/**
 * Shapes one result body by `profile`, stage by stage (projection,
 * keep_fields, drop_fields, strip_nulls, flatten, dedupe, sort_by,
 * collapse_arrays, truncate_strings, limit), and says what was lost. `safeFields` is the
 * variant's `null_elision_safe_fields`: strip_nulls removes only there.
 */
export function applyOutputProfile(profile: EffectiveOutputProfile, body: unknown, safeFields: readonly string[]): { readonly body: unknown; readonly outcome: ProfileOutcome } {
  const tally: Tally = { removed: 0, omitted: 0, truncated: 0 };
  let shaped = body;
  const keys = profile.projection;
  if (keys !== undefined && keys.length > 0) shaped = perRecord(shaped, (v) => project(v, new Set(keys), tally));
  if (profile.keep_fields !== undefined && profile.keep_fields.length > 0) shaped = perRecord(shaped, (v) => keep(v, pathTree(profile.keep_fields ?? []), tally));
  if (profile.drop_fields !== undefined && profile.drop_fields.length > 0) shaped = perRecord(shaped, (v) => drop(v, pathTree(profile.drop_fields ?? []), tally));
  if (profile.strip_nulls === true && safeFields.length > 0) shaped = stripNulls(shaped, '', new Set(safeFields), tally);
  if (profile.flatten === true) shaped = flatten(shaped);
  if (profile.dedupe === true) shaped = withRecords(shaped, (records) => dedupeRecords(records, tally));
  const sortKeys = profile.sort_by;
  if (sortKeys !== undefined && sortKeys.length > 0) shaped = withRecords(shaped, (records) => sortRecords(records, sortKeys));
  if (profile.collapse_arrays !== undefined) shaped = collapse(shaped, profile.collapse_arrays.max_items, tally, true);
  if (profile.truncate_strings !== undefined) shaped = truncate(shaped, '', undefined, profile.truncate_strings, tally);
  if (profile.limit !== undefined) shaped = limitRecords(shaped, profile.limit, tally);
  const key = recordKey(shaped);
  const count = key === undefined ? undefined : recordsOf(shaped, key).length;
  const onEmpty = count === 0 && profile.on_empty !== undefined ? profile.on_empty.normalize('NFC') : undefined;
  const outcome: ProfileOutcome = {
    profile: profile.name,
    lossy: tally.removed + tally.omitted + tally.truncated > 0,
    removed_fields: tally.removed,
    omitted_count: tally.omitted,
    truncated_strings: tally.truncated,
    ...(count === undefined ? {} : { result_count: count }),
    ...(onEmpty === undefined ? {} : { on_empty_message: onEmpty }),
  };
  return { body: shaped, outcome };
}
