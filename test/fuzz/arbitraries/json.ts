/**
 * Mostly-valid documents: a valid base, then a few structural mutations at
 * random places (drop, replace with a hostile value, add a hostile key,
 * duplicate an array item, change a type, nest deeply), then sometimes a
 * mutation of the serialized text. Valid bases keep the validators busy
 * past their first check; the mutations reach every later one.
 */
import fc from 'fast-check';

/** Keys that reach a prototype when code assigns or merges them. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/** Keys a hostile document likes to use. */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS, 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', '', ' ', '~1', '/') },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
);

/** A string that nests `depth` levels of arrays or objects around `1`. */
export function deeplyNested(depth: number, objects: boolean): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = objects ? { a: value } : [value];
  return value;
}

/** Strings that break naive code: huge, invisible, bidi, lookalikes, paths, escapes. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      ' padded ',
      '\u0000',
      '\u001b[31mred\u001b[0m',
      '\u202eevil',
      '\uFEFF',
      '\uD800',
      '💥',
      'İı',
      'ſ',
      '..',
      '../x',
      '/abs',
      'C:\\x',
      '%2e%2e%2f',
      'plug.x.y',
      'a'.repeat(129),
      '+7d',
      'sha256:' + '0'.repeat(64),
      'null',
      '1e999',
    ),
  },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }).map((n) => 'x'.repeat(n)) },
);

/** Values that do not belong where they are put. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: nastyString },
  {
    weight: 3,
    arbitrary: fc.constantFrom(null, true, false, 0, -0, -1, 1.5, 2 ** 53 + 2, 1e308, -1e308, Number.MIN_VALUE, [], {}, [null], { '': null }),
  },
  { weight: 2, arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })) },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.integer({ min: 1, max: 200 }), fc.boolean()).map(([depth, objects]) => deeplyNested(depth, objects)),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...PROTOTYPE_KEYS), fc.jsonValue({ maxDepth: 2 })).map(([key, value]) => withOwnKey({}, key, value)),
  },
);

/** Sets an own, enumerable data property, even for keys such as `__proto__`. */
export function withOwnKey<T extends object>(target: T, key: string, value: unknown): T {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  return target;
}

/** One structural change at the node a path of child choices leads to. */
export type Mutation =
  | { readonly op: 'drop'; readonly path: readonly number[] }
  | { readonly op: 'replace'; readonly path: readonly number[]; readonly value: unknown }
  | { readonly op: 'addKey'; readonly path: readonly number[]; readonly key: string; readonly value: unknown }
  | { readonly op: 'duplicate'; readonly path: readonly number[]; readonly pick: number }
  | { readonly op: 'retype'; readonly path: readonly number[] }
  | { readonly op: 'nest'; readonly path: readonly number[]; readonly depth: number; readonly objects: boolean };

const path = fc.array(fc.nat(), { maxLength: 6 });

/** Mutations whose added keys come from `keys` (field names of the format) or hostile keys. */
export function mutation(keys: readonly string[], values: fc.Arbitrary<unknown> = nastyValue): fc.Arbitrary<Mutation> {
  const key = keys.length === 0 ? hostileKey : fc.oneof(fc.constantFrom(...keys), hostileKey);
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('drop' as const), path }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant('replace' as const), path, value: values }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('addKey' as const), path, key, value: values }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('duplicate' as const), path, pick: fc.nat() }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('retype' as const), path }) },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('nest' as const), path, depth: fc.integer({ min: 1, max: 100 }), objects: fc.boolean() }),
    },
  );
}

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === 'object' && value !== null;
}

function childKeys(node: Record<string, unknown> | unknown[]): Array<string | number> {
  return Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
}

function setChild(parent: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  if (Array.isArray(parent)) parent[key as number] = value;
  else withOwnKey(parent, String(key), value);
}

function retyped(node: unknown): unknown {
  if (typeof node === 'string') return node.length === 0 ? 0 : Number.isNaN(Number(node)) ? node.length : Number(node);
  if (typeof node === 'number') return String(node);
  if (typeof node === 'boolean') return String(node);
  if (node === null) return 'null';
  if (Array.isArray(node)) return Object.fromEntries(node.map((v, i) => [String(i), v]));
  if (isContainer(node)) return Object.values(node);
  return null;
}

/** Applies mutations to a copy of `base` (a JSON value); the result may be `undefined` if the root was dropped. */
export function applyMutations(base: unknown, mutations: readonly Mutation[]): unknown {
  const holder: Record<string, unknown> = { root: structuredClone(base) };
  for (const m of mutations) {
    let parent: Record<string, unknown> | unknown[] = holder;
    let key: string | number = 'root';
    for (const choice of m.path) {
      const node: unknown = (parent as Record<string, unknown>)[key];
      if (!isContainer(node)) break;
      const keys = childKeys(node);
      if (keys.length === 0) break;
      parent = node;
      key = keys[choice % keys.length]!;
    }
    const node: unknown = (parent as Record<string, unknown>)[key];
    // Generated values can be shared constants: never let a later mutation edit one in place.
    const value: unknown = 'value' in m ? structuredClone(m.value) : undefined;
    switch (m.op) {
      case 'drop':
        if (Array.isArray(parent)) parent.splice(key as number, 1);
        else delete parent[key as string];
        break;
      case 'replace':
        setChild(parent, key, value);
        break;
      case 'addKey':
        if (Array.isArray(node)) node.push(value);
        else if (isContainer(node)) withOwnKey(node, m.key, value);
        else setChild(parent, key, withOwnKey({}, m.key, value));
        break;
      case 'duplicate':
        if (Array.isArray(node) && node.length > 0) node.push(structuredClone(node[m.pick % node.length]));
        break;
      case 'retype':
        setChild(parent, key, retyped(node));
        break;
      case 'nest': {
        let wrapped: unknown = node;
        for (let i = 0; i < m.depth; i++) wrapped = m.objects ? { a: wrapped } : [wrapped];
        setChild(parent, key, wrapped);
        break;
      }
    }
  }
  return holder.root;
}

/** One change to a serialized document. */
export type TextMutation =
  | { readonly op: 'insert'; readonly at: number; readonly text: string }
  | { readonly op: 'delete'; readonly at: number; readonly length: number }
  | { readonly op: 'truncate'; readonly at: number };

/** Text mutations inserting fragments of the given syntax. */
export function textMutation(fragments: readonly string[]): fc.Arbitrary<TextMutation> {
  return fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('insert' as const),
        at: fc.nat(),
        text: fc.oneof(fc.constantFrom(...fragments), fc.string({ unit: 'binary', maxLength: 8 })),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }) },
  );
}

/** Applies text mutations, positions taken modulo the current length. */
export function applyTextMutations(text: string, mutations: readonly TextMutation[]): string {
  let out = text;
  for (const m of mutations) {
    const at = m.at % (out.length + 1);
    if (m.op === 'insert') out = out.slice(0, at) + m.text + out.slice(at);
    else if (m.op === 'delete') out = out.slice(0, at) + out.slice(at + m.length);
    else out = out.slice(0, at);
  }
  return out;
}

/** Every key used anywhere in some documents, to add as misplaced fields. */
export function keysOf(...docs: readonly unknown[]): string[] {
  const out = new Set<string>();
  const stack: unknown[] = [...docs];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!isContainer(node)) continue;
    if (!Array.isArray(node)) for (const key of Object.keys(node)) out.add(key);
    stack.push(...Object.values(node));
  }
  return [...out].sort();
}

/** A document's own keys that can reach a prototype, at any depth (iterative). */
export function hasPrototypeKey(doc: unknown): boolean {
  const stack: unknown[] = [doc];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!isContainer(node)) continue;
    for (const key of Object.keys(node)) {
      if ((PROTOTYPE_KEYS as readonly string[]).includes(key)) return true;
      stack.push((node as Record<string, unknown>)[key]);
    }
  }
  return false;
}

/** The nesting depth of a value (a scalar is 0), computed iteratively. */
export function depthOf(doc: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[doc, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (!isContainer(node)) continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** Asserts that every object in a tree has an ordinary prototype (no `__proto__` reached a setter). */
export function ordinaryPrototypesOnly(value: unknown): boolean {
  const stack: unknown[] = [value];
  const seen = new Set<unknown>();
  while (stack.length > 0) {
    const node = stack.pop();
    if (!isContainer(node) || seen.has(node)) continue;
    seen.add(node);
    const proto: unknown = Object.getPrototypeOf(node);
    if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return false;
    stack.push(...Object.values(node));
  }
  return true;
}
