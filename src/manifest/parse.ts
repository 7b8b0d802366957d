/**
 * Turning untrusted bytes into a plain JSON-like value without throwing,
 * hanging, overflowing the stack or touching a prototype: size first, then
 * strict UTF-8, then a bracket-depth scan before any recursive parser sees
 * the text, then the parser, then an iterative walk that rejects keys that
 * could reach a prototype in code that copies the value later.
 */
import { err, ok, type Result } from 'neverthrow';
import { parse as parseToml, TomlDate, TomlError } from 'smol-toml';
import { pointerOf, violation, type NonEmptyViolations, type Violation } from './violations.js';

/** Limits applied to every manifest before and while it is parsed. */
export interface ParseLimits {
  /** Largest manifest accepted, in bytes (UTF-8). */
  readonly maxBytes: number;
  /** Deepest nesting of objects and arrays accepted. */
  readonly maxDepth: number;
}

/** 1 MiB and 64 levels: far above any real manifest, far below what could hurt. */
export const DEFAULT_PARSE_LIMITS: ParseLimits = { maxBytes: 1024 * 1024, maxDepth: 64 };

/** Keys that reach a prototype when a later consumer assigns or merges them. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** The syntax a manifest text is written in. */
export type ManifestSyntax = 'json' | 'toml';

const fail = (message: string): Result<never, NonEmptyViolations> =>
  err([violation('parse', 'PLUGIN_MANIFEST_INVALID', '', message)]);

/** Decodes bytes as strict UTF-8 (a BOM is dropped) after the size check. */
export function decodeManifestBytes(bytes: Uint8Array, limits: ParseLimits): Result<string, NonEmptyViolations> {
  if (bytes.byteLength > limits.maxBytes) {
    return fail(`manifest is over the ${limits.maxBytes}-byte limit`);
  }
  try {
    return ok(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return fail('manifest is not valid UTF-8');
  }
}

/**
 * The deepest bracket nesting of a JSON text, stopping as soon as it passes
 * `limit`. Brackets inside strings do not count.
 */
export function jsonNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return deepest;
}

function checkTextSize(text: string, limits: ParseLimits): Result<string, NonEmptyViolations> {
  // A UTF-16 unit encodes to at most 3 UTF-8 bytes: only near the limit is an exact count needed.
  if (text.length * 3 > limits.maxBytes) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > limits.maxBytes) return fail(`manifest is over the ${limits.maxBytes}-byte limit`);
  }
  return ok(text);
}

/** Parses JSON text into a value whose keys and depth have been checked. */
export function parseJsonText(text: string, limits: ParseLimits): Result<unknown, NonEmptyViolations> {
  return checkTextSize(text, limits).andThen((t) => {
    if (jsonNestingDepth(t, limits.maxDepth) > limits.maxDepth) {
      return fail(`manifest nests deeper than ${limits.maxDepth} levels`);
    }
    let value: unknown;
    try {
      value = JSON.parse(t);
    } catch (cause) {
      return fail(jsonSyntaxMessage(t, cause instanceof Error ? cause.message : String(cause)));
    }
    return isCleanOrdinaryTree(value, limits.maxDepth) ? ok(value) : inspectTree(value, limits.maxDepth, false);
  });
}

/** What V8 appends to a JSON syntax message besides the reason: the offset, or a quote of the text. */
const JSON_WHERE = /\s*(?:(?:in|after) JSON at position \d+(?: \(line \d+ column \d+\))?|, (?:\.\.\.)?"[\s\S]*" is not valid JSON)$/;
const JSON_LITERAL = /true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const JSON_STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const JSON_SPACE = /[ \t\n\r]*/y;

/**
 * The offset of the first syntax error in a JSON text that JSON.parse
 * refused (V8 names it in some messages only). The text is already known to
 * nest no deeper than the limit, so the recursion is bounded.
 */
function jsonErrorOffset(text: string): number {
  let at = 0;
  const space = (): void => {
    JSON_SPACE.lastIndex = at;
    JSON_SPACE.exec(text);
    at = JSON_SPACE.lastIndex;
  };
  const token = (pattern: RegExp): boolean => {
    pattern.lastIndex = at;
    if (pattern.exec(text) === null) return false;
    at = pattern.lastIndex;
    return true;
  };
  const sequence = (close: string, item: () => boolean): boolean => {
    at++;
    space();
    if (text[at] === close) return (at++, true);
    for (;;) {
      if (!item()) return false;
      space();
      if (text[at] === close) return (at++, true);
      if (text[at] !== ',') return false;
      at++;
      space();
    }
  };
  const value = (): boolean => {
    space();
    if (text[at] === '{') {
      return sequence('}', () => {
        if (!token(JSON_STRING)) return false;
        space();
        if (text[at] !== ':') return false;
        at++;
        return value();
      });
    }
    if (text[at] === '[') return sequence(']', value);
    return token(JSON_STRING) || token(JSON_LITERAL);
  };
  if (value()) space();
  return at;
}

/** A JSON syntax error with the line and column a person looks for. */
function jsonSyntaxMessage(text: string, message: string): string {
  const offset = jsonErrorOffset(text);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `manifest is not valid JSON (line ${line}, column ${column}): ${firstLine(message.replace(JSON_WHERE, ''))}`;
}

/**
 * A caller's already parsed value as a tree of ordinary arrays and objects,
 * checked like parsed text. Values built elsewhere may carry null or foreign
 * prototypes, getters or proxies that the schema validator's equality and
 * walk would call into (and throw from); after the copy it sees own data
 * properties only. A value that cannot be read is a violation, not a throw.
 */
export function plainValueOf(value: unknown, limits: ParseLimits): Result<unknown, NonEmptyViolations> {
  try {
    // Copying costs about half of a validation; a tree of ordinary objects and arrays (what JSON.parse and most
    // callers build) is checked in place, and the validator catches what a getter or proxy throws later.
    if (isCleanOrdinaryTree(value, limits.maxDepth)) return ok(value);
    return inspectTree(value, limits.maxDepth, !isOrdinaryTree(value, limits.maxDepth));
  } catch (cause) {
    return err(unreadableValue(cause));
  }
}

/** The violation of a caller's value whose getter or proxy trap threw while it was read. */
export function unreadableValue(cause: unknown): NonEmptyViolations {
  return [violation('parse', 'PLUGIN_MANIFEST_INVALID', '', `manifest value cannot be read: ${cause instanceof Error ? firstLine(cause.message) : String(cause)}`)];
}

/** Parses TOML text into a plain JSON-like value (dates become ISO strings). */
export function parseTomlText(text: string, limits: ParseLimits): Result<unknown, NonEmptyViolations> {
  return checkTextSize(text, limits).andThen((t) => {
    let table: unknown;
    try {
      table = parseToml(t, { maxDepth: limits.maxDepth, unsafeKeyBehaviour: 'keep' });
    } catch (cause) {
      if (cause instanceof TomlError) {
        return fail(`manifest is not valid TOML (line ${cause.line}, column ${cause.column}): ${firstLine(cause.message)}`);
      }
      return fail(`manifest is not valid TOML: ${cause instanceof Error ? firstLine(cause.message) : String(cause)}`);
    }
    return inspectTree(table, limits.maxDepth, true);
  });
}

/** Parses a manifest text of the given syntax. */
export function parseManifestText(
  text: string,
  syntax: ManifestSyntax,
  limits: ParseLimits,
): Result<unknown, NonEmptyViolations> {
  return syntax === 'toml' ? parseTomlText(text, limits) : parseJsonText(text, limits);
}

function firstLine(message: string): string {
  const nl = message.indexOf('\n');
  return nl === -1 ? message : message.slice(0, nl);
}

interface Frame {
  readonly source: unknown;
  readonly parent: Frame | undefined;
  readonly key: string | number | undefined;
  readonly depth: number;
  readonly assign: ((value: unknown) => void) | undefined;
}

function framePointer(frame: Frame | undefined, last?: string | number): string {
  const tokens: Array<string | number> = last === undefined ? [] : [last];
  for (let f = frame; f !== undefined && f.key !== undefined; f = f.parent) tokens.push(f.key);
  return pointerOf(...tokens.reverse());
}

/**
 * Whether every container of `root` (down to `maxDepth`) is an array or an
 * object whose prototype is `Object.prototype`: the schema validator's
 * equality checks call methods such a tree inherits, which a null or foreign
 * prototype lacks.
 */
function isOrdinaryTree(root: unknown, maxDepth: number): boolean {
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value: root, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= maxDepth) continue;
    const prototype = Object.getPrototypeOf(value);
    if (prototype === Array.prototype) {
      if (!Array.isArray(value)) return false;
      for (const item of value as unknown[]) stack.push({ value: item, depth: depth + 1 });
    } else if (prototype === Object.prototype) {
      for (const key of Object.keys(value)) stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1 });
    } else {
      return false;
    }
  }
  return true;
}

/**
 * One walk for the common case of {@link plainValueOf}: a tree of ordinary
 * containers with no forbidden key and nothing at or past `maxDepth`, which
 * {@link inspectTree} would return as it is. Any other tree (false) takes
 * the two walks that say what is wrong with it or copy it.
 */
function isCleanOrdinaryTree(root: unknown, maxDepth: number): boolean {
  const values: unknown[] = [root];
  const depths: number[] = [0];
  while (values.length > 0) {
    const value = values.pop();
    const depth = depths.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= maxDepth) return false;
    const prototype = Object.getPrototypeOf(value);
    if (prototype === Array.prototype) {
      if (!Array.isArray(value)) return false;
      for (const item of value as unknown[]) {
        values.push(item);
        depths.push(depth + 1);
      }
    } else if (prototype === Object.prototype) {
      for (const key of Object.keys(value)) {
        if (FORBIDDEN_KEYS.has(key)) return false;
        values.push((value as Record<string, unknown>)[key]);
        depths.push(depth + 1);
      }
    } else {
      return false;
    }
  }
  return true;
}

function isPlainContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === 'object' && value !== null && !(value instanceof TomlDate);
}

/**
 * Walks a parsed tree with an explicit stack (no recursion), reporting
 * forbidden keys and excess depth. With `copy`, returns a copy made of
 * ordinary arrays and objects (built by data-property definition, so no key
 * can reach a setter) with TOML dates as ISO strings; otherwise returns the
 * tree as it is.
 */
export function inspectTree(root: unknown, maxDepth: number, copy: boolean): Result<unknown, NonEmptyViolations> {
  const violations: Violation[] = [];
  let result: unknown = root;
  const stack: Frame[] = [
    { source: root, parent: undefined, key: undefined, depth: 0, assign: copy ? (v) => (result = v) : undefined },
  ];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { source } = frame;
    if (!isPlainContainer(source)) {
      frame.assign?.(source instanceof TomlDate ? source.toISOString() : source);
      continue;
    }
    if (frame.depth >= maxDepth) {
      violations.push(violation('parse', 'PLUGIN_MANIFEST_INVALID', framePointer(frame), `nests deeper than ${maxDepth} levels`));
      continue;
    }
    if (Array.isArray(source)) {
      const out: unknown[] | undefined = copy ? new Array<unknown>(source.length) : undefined;
      frame.assign?.(out);
      for (let i = source.length - 1; i >= 0; i--) {
        stack.push({
          source: source[i],
          parent: frame,
          key: i,
          depth: frame.depth + 1,
          assign: out ? (v) => (out[i] = v) : undefined,
        });
      }
      continue;
    }
    const out: Record<string, unknown> | undefined = copy ? {} : undefined;
    frame.assign?.(out);
    const keys = Object.keys(source);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      if (FORBIDDEN_KEYS.has(key)) {
        violations.push(
          violation('parse', 'PLUGIN_MANIFEST_INVALID', framePointer(frame, key), `key "${key}" is not allowed in a manifest`),
        );
        continue;
      }
      stack.push({
        source: source[key],
        parent: frame,
        key,
        depth: frame.depth + 1,
        assign: out ? (v) => Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true }) : undefined,
      });
    }
  }
  const [first, ...rest] = violations;
  return first === undefined ? ok(result) : err([first, ...rest]);
}
