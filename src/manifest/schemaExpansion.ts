/**
 * A static bound on what validating one value against a schema costs, where
 * schemaLimits.ts' other bounds follow what compiling it costs. Ajv compiles
 * each `$defs` entry once but follows every `$ref` each time it validates:
 * `$defs` dI = {allOf: [{$ref: dI-1}, {$ref: dI-1}]} is 2.4 KB at I = 29,
 * compiles in 15 ms, and one validation walks 2^29 paths (a plugin's one
 * answer held the host's shared thread 2.9 s; review R13 F2). Two measures,
 * in one memoised walk that is linear in the schema:
 *
 * - the expanded size: each subschema counted once per way it is reached, a
 *   `$ref` counting its target's expanded size (stopped past the cap);
 * - recursion: a `$ref` back to a subschema the walk is inside of. Validation
 *   follows it once per step down the data, which is linear in the data only
 *   while, inside the recursion, one path down the data meets at most one
 *   such back-edge: two
 *   (`anyOf: [{properties: {x: {$ref: '#'}}}, {properties: {x: {$ref: '#'}}}]`)
 *   double the paths at each level of the answer's nesting, and one recursion
 *   entering another on the same member multiplies them by the depth.
 */
import * as ajvResolve from 'ajv/dist/compile/resolve.js';
import * as ajvUriModule from 'ajv/dist/runtime/uri.js';
import jsonSchemaTraverse from 'json-schema-traverse';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };

/** Most subschemas one validation may visit counting each once per way it is reached through `$ref` (etc/plugin-answers.json). */
export const MAX_SCHEMA_EXPANDED_NODES: number = pluginAnswerLimits.maxSchemaExpandedNodes;

/** Keywords whose schema applies to the same value as the schema holding them. */
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'] as const;
// anyOf and oneOf count as allOf: Ajv may run every branch on one value, and a branch's `type` does not keep its
// in-place keywords off a value of another type (anyOf of a string and a number branch, each with allOf of
// properties x back to the start: 3 s at depth 20). Their child keywords are per type anyway: an object's member
// and an array's element are different classes of child, so a JSON-value type counts one per step.
const IN_PLACE_MANY = ['allOf', 'anyOf', 'oneOf'] as const;
const IN_PLACE_MAP = ['dependentSchemas', 'dependencies'] as const;
const REF_KEYWORDS = ['$ref', '$dynamicRef', '$recursiveRef'] as const;
/** Keywords whose schemas apply to a member of an object: `properties` by name, these to any name (a pattern may match a named one). */
const ANY_MEMBER_ONE = ['additionalProperties', 'unevaluatedProperties'] as const;
/** Keywords whose schemas apply to an element of an array. */
const ELEMENT_ONE = ['items', 'additionalItems', 'contains', 'unevaluatedItems'] as const;
const ELEMENT_MANY = ['items', 'prefixItems'] as const;
/** Keywords whose schemas apply to something derived from the value (a member name, decoded content). */
const OTHER_CHILD_ONE = ['propertyNames', 'contentSchema'] as const;

/** Data-child classes besides a named property (`p:<name>`). */
const ANY_MEMBER = '*member';
const ELEMENT = '*element';
const OTHER = '*other';

/** The placeholder base of a schema without an `$id`, so relative `$id`s and refs resolve as against any base. */
const NO_BASE = 'https://schema.invalid/root.json';

/** json-schema-traverse's entry point, as Ajv calls it to find a schema's `$id`s and anchors. */
type SchemaTraverse = (schema: object, options: { readonly allKeys: boolean }, visit: (subschema: object) => void) => void;

let ajvTraverse: SchemaTraverse | undefined;

/** Ajv's URI functions (compile/resolve.js) with its default resolver (fast-uri), as it keys and looks up resources. */
interface AjvUris {
  readonly resolver: unknown;
  readonly resolveUrl: (resolver: unknown, base: string, id: string) => string;
  readonly getFullPath: (resolver: unknown, id: string) => string;
}

let ajvUris: AjvUris | undefined;

/**
 * json-schema-traverse, the one Ajv reads with (a dependency of ours in Ajv's range, so npm keeps one copy): which
 * objects of a schema Ajv takes as subschemas whose `$id` and anchors it registers. Not `default`, `const`, `enum` or an
 * array under another keyword (data), and not a `properties` or `definitions` map itself (its members are the
 * subschemas). Imported, not resolved from Ajv's location at run time: an application bundled into one file has no
 * node_modules to resolve from.
 */
function traverseAsAjv(): SchemaTraverse {
  ajvTraverse ??= jsonSchemaTraverse as unknown as SchemaTraverse;
  return ajvTraverse;
}

/**
 * Ajv's URI resolution. WHATWG's URL read `lib<TAB>.json` as `lib.json` (it drops tabs and line breaks anywhere) where
 * Ajv keeps two resources apart, so a ref reached the cheap one here and a $ref DAG in Ajv (review R14).
 */
function uris(): AjvUris {
  // Ajv's CommonJS module: its default import is module.exports under Node's ESM and exports.default in a CommonJS build.
  const imported = ajvUriModule.default as unknown as { readonly resolve?: unknown; readonly default?: unknown };
  const resolver = typeof imported.resolve === 'function' ? imported : imported.default;
  ajvUris ??= { resolveUrl: ajvResolve.resolveUrl as AjvUris['resolveUrl'], getFullPath: ajvResolve.getFullPath as AjvUris['getFullPath'], resolver };
  return ajvUris;
}

/** Why a schema is past the expansion bound (thrown out of the walk, caught in measureExpansion). */
class ExpansionOverBound extends Error {}

/** Back-edges that apply along one path down the data: at the value itself, and per class of data child. */
interface BackEdges {
  here: number;
  readonly children: Map<string, number>;
}

interface Visited {
  /** The expanded size. */
  readonly size: number;
  /** Back-edges (to it, inside it, or to a subschema it is in) met along its worst one path down the data. */
  readonly backEdges: number;
}

interface Resource {
  readonly root: object;
  readonly uri: string;
  readonly anchors: Map<string, object[]>;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const ownValue = (record: Record<string, unknown>, key: string): unknown => (Object.hasOwn(record, key) ? record[key] : undefined);

/**
 * What validating against `schema` may cost: its expanded size (subschemas
 * counted once per way they are reached, recursion once), or why it is past
 * the bound, as a sentence. Expects a schema within schemaLimits.ts' node
 * and depth bounds (the walk recurses once per subschema on its path, at
 * most maxSchemaNodes deep).
 */
export function measureExpansion(schema: unknown): { readonly ok: true; readonly size: number } | { readonly ok: false; readonly problem: string } {
  try {
    return { ok: true, size: new ExpansionWalk(schema).run() };
  } catch (error) {
    if (error instanceof ExpansionOverBound) return { ok: false, problem: error.message };
    throw error;
  }
}

/** One measure of one schema. */
class ExpansionWalk {
  readonly #resourceOf = new Map<object, Resource>();
  readonly #resources = new Map<string, Resource>();
  /** Every `$dynamicAnchor` by name, in any resource: which one a `$dynamicRef` reaches depends on the path, so it counts all. */
  readonly #dynamicAnchors = new Map<string, object[]>();
  readonly #done = new Map<object, Visited>();
  /** Subschemas the walk is inside of: how many steps down the data they apply, and whether a back-edge reached them. */
  readonly #onStack = new Map<object, { dataDepth: number; recursive: boolean }>();
  readonly #root: unknown;

  constructor(root: unknown) {
    this.#root = root;
  }

  run(): number {
    if (!isObject(this.#root)) return 1;
    this.#index(this.#root);
    return this.#visit(this.#root, 0).size;
  }

  /**
   * Finds every resource (`$id`) and anchor (`$anchor`, `$dynamicAnchor`, a
   * draft-07 `$id: "#name"`) where Ajv finds them: only on the objects Ajv's
   * traversal takes as subschemas. Every object gets the resource it lies in
   * (a pointer may lead anywhere). A `$id` Ajv does not read must not name a
   * resource here: a decoy `{$id: 'lib.json'}` under `default` met first made
   * `$ref: 'lib.json'` reach it instead of the resource Ajv reaches (a 2 KB
   * $ref DAG of 30 levels passed, 5 s per validation), and a definition named
   * `$id` made the `definitions` map a resource that every definition's
   * `#/definitions/...` ref was resolved against, finding nothing (review R14).
   */
  #index(root: Record<string, unknown>): void {
    const subschemas = new Set<object>();
    traverseAsAjv()(root, { allKeys: true }, (subschema) => subschemas.add(subschema));
    const stack: Array<{ value: unknown; resource: Resource | undefined }> = [{ value: root, resource: undefined }];
    while (stack.length > 0) {
      const { value, resource: parent } = stack.pop()!;
      if (value === null || typeof value !== 'object') continue;
      if (Array.isArray(value)) {
        for (const item of value) stack.push({ value: item, resource: parent });
        continue;
      }
      const record = value as Record<string, unknown>;
      let resource = parent;
      const read = subschemas.has(record);
      const id = read ? ownValue(record, '$id') : undefined;
      if (parent === undefined || (typeof id === 'string' && !id.startsWith('#'))) {
        const uri = resolveUri(typeof id === 'string' ? id : '', parent?.uri ?? NO_BASE);
        resource = { root: record, uri: uri ?? `${NO_BASE}#unresolvable-${this.#resources.size}`, anchors: new Map() };
        if (uri !== undefined && !this.#resources.has(uri)) this.#resources.set(uri, resource);
      }
      this.#resourceOf.set(record, resource!);
      if (read) {
        const names = [ownValue(record, '$anchor'), ownValue(record, '$dynamicAnchor'), typeof id === 'string' && id.includes('#') ? id.slice(id.indexOf('#') + 1) : undefined];
        for (const name of names) if (typeof name === 'string' && name !== '') push(resource!.anchors, name, record);
        const dynamic = ownValue(record, '$dynamicAnchor');
        if (typeof dynamic === 'string') push(this.#dynamicAnchors, dynamic, record);
      }
      for (const child of Object.values(record)) stack.push({ value: child, resource });
    }
  }

  /** The targets of a ref keyword's value: none for a ref Ajv refuses (a local one to nothing); throws for one the host cannot follow. */
  #targets(from: Record<string, unknown>, keyword: string, ref: string): object[] {
    const resource = this.#resourceOf.get(from)!;
    if (keyword === '$recursiveRef') return [resource.root];
    const hash = ref.indexOf('#');
    const uriPart = hash === -1 ? ref : ref.slice(0, hash);
    const fragment = hash === -1 ? '' : ref.slice(hash + 1);
    let target = resource;
    if (uriPart !== '') {
      const uri = resolveUri(uriPart, resource.uri);
      const found = uri === undefined ? undefined : this.#resources.get(uri);
      // Another document (a meta-schema Ajv holds, or one it would refuse): its cost is not known here.
      if (found === undefined) throw new ExpansionOverBound(`names a $ref the host does not follow (${JSON.stringify(ref.slice(0, 200))}), so what validating against it costs is not known`);
      target = found;
    }
    if (fragment === '') return [target.root];
    if (fragment.startsWith('/')) {
      const found = resolvePointer(target.root, fragment, target.uri);
      if (found === undefined) return [];
      // Ajv resolves the target's own refs against the base its pointer ended on, not the resource the target lies in.
      if (found.base !== this.#resourceOf.get(found.target)?.uri) {
        throw new ExpansionOverBound(`names a $ref (${JSON.stringify(ref.slice(0, 200))}) whose pointer passes an $id Ajv reads its target's refs against, so what validating against it costs is not known here`);
      }
      return [found.target];
    }
    let name: string;
    try {
      name = decodeURIComponent(fragment);
    } catch {
      return [];
    }
    if (keyword === '$dynamicRef') return [...new Set([...(target.anchors.get(name) ?? []), ...(this.#dynamicAnchors.get(name) ?? [])])];
    return target.anchors.get(name) ?? [];
  }

  /** The expanded size of `schema` and the back-edges met below it, applied `dataDepth` steps down the data. */
  #visit(schema: unknown, dataDepth: number): { size: number; edges: BackEdges } {
    if (!isObject(schema)) return { size: 1, edges: noEdges() };
    const done = this.#done.get(schema);
    if (done !== undefined) return { size: done.size, edges: { here: done.backEdges, children: new Map() } };
    const onStack = this.#onStack.get(schema);
    if (onStack !== undefined) {
      // A ref back to where it started with no step down the data between: validation would never end (Ajv's stack overflows).
      if (onStack.dataDepth === dataDepth) throw new ExpansionOverBound('has a $ref cycle that reaches the same value again without a step down the data');
      onStack.recursive = true;
      return { size: 1, edges: { here: 1, children: new Map() } };
    }
    // Ajv resolves the refs of every subschema it compiles with an `$id` against that `$id` (prefixItems too, where its
    // traversal names no resource): one that names no resource here would have its refs resolved against another base.
    const id = ownValue(schema, '$id');
    if (id !== undefined && id !== '' && (typeof id !== 'string' || (!id.startsWith('#') && this.#resourceOf.get(schema)?.root !== schema))) {
      throw new ExpansionOverBound(`has an $id (${JSON.stringify(String(id).slice(0, 200))}) where Ajv does not register it, so the base its refs are read against is not known here`);
    }
    const frame = { dataDepth, recursive: false };
    this.#onStack.set(schema, frame);
    let size = 1;
    const edges = noEdges();
    const take = (child: { size: number; edges: BackEdges }): BackEdges => {
      size += child.size;
      if (size > MAX_SCHEMA_EXPANDED_NODES) {
        throw new ExpansionOverBound(`expands to more than ${MAX_SCHEMA_EXPANDED_NODES} subschemas through its $refs, the most one validation may visit`);
      }
      return child.edges;
    };
    const inPlace = (child: unknown): void => addEdges(edges, take(this.#visit(child, dataDepth)));
    const below = (child: unknown, cls: string): void => {
      const found = take(this.#visit(child, dataDepth + 1));
      edges.children.set(cls, (edges.children.get(cls) ?? 0) + totalOf(found));
    };

    for (const keyword of REF_KEYWORDS) {
      const ref = ownValue(schema, keyword);
      if (typeof ref === 'string') for (const target of this.#targets(schema, keyword, ref)) inPlace(target);
    }
    for (const keyword of IN_PLACE_ONE) if (Object.hasOwn(schema, keyword)) inPlace(schema[keyword]);
    for (const keyword of IN_PLACE_MANY) for (const branch of arrayOf(ownValue(schema, keyword))) inPlace(branch);
    for (const keyword of IN_PLACE_MAP) for (const branch of Object.values(recordOf(ownValue(schema, keyword)))) if (isObject(branch) || typeof branch === 'boolean') inPlace(branch);
    for (const [name, child] of Object.entries(recordOf(ownValue(schema, 'properties')))) below(child, `p:${name}`);
    for (const child of Object.values(recordOf(ownValue(schema, 'patternProperties')))) below(child, ANY_MEMBER);
    for (const keyword of ANY_MEMBER_ONE) if (Object.hasOwn(schema, keyword)) below(schema[keyword], ANY_MEMBER);
    for (const keyword of ELEMENT_ONE) if (Object.hasOwn(schema, keyword) && !Array.isArray(schema[keyword])) below(schema[keyword], ELEMENT);
    for (const keyword of ELEMENT_MANY) for (const child of arrayOf(ownValue(schema, keyword))) below(child, ELEMENT);
    for (const keyword of OTHER_CHILD_ONE) if (Object.hasOwn(schema, keyword)) below(schema[keyword], OTHER);

    this.#onStack.delete(schema);
    const count = totalOf(edges);
    // Checked where a recursion starts: each step of it re-applies everything counted here to one deeper value, so two
    // back-edges double per level, and a recursion that enters another recursive subschema on the same path multiplies
    // by the depth per such nesting. Where none starts, several recursions side by side only add (the size bound).
    if (frame.recursive && count > 1) {
      throw new ExpansionOverBound(`has ${count} $ref back-edges along one path down the data inside its own recursion, so one validation multiplies its work per level of the value's nesting`);
    }
    this.#done.set(schema, { size, backEdges: count });
    return { size, edges };
  }
}

function noEdges(): BackEdges {
  return { here: 0, children: new Map() };
}

/** Back-edges along the worst one path down the data: a named member also meets the any-member keywords. */
function totalOf(edges: BackEdges): number {
  const anyMember = edges.children.get(ANY_MEMBER) ?? 0;
  let worst = 0;
  for (const [cls, count] of edges.children) worst = Math.max(worst, cls.startsWith('p:') ? count + anyMember : count);
  return edges.here + worst;
}

/** Both apply to the same value: counts add, per class of child. */
function addEdges(into: BackEdges, from: BackEdges): void {
  into.here += from.here;
  for (const [cls, count] of from.children) into.children.set(cls, (into.children.get(cls) ?? 0) + count);
}

function arrayOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function recordOf(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}

function push(map: Map<string, object[]>, key: string, value: object): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

/** An `$id` or ref's URI part resolved against a base as Ajv resolves it, without its fragment; `undefined` when it does not resolve. */
function resolveUri(uri: string, base: string): string | undefined {
  const { resolver, resolveUrl, getFullPath } = uris();
  try {
    const full = getFullPath(resolver, resolveUrl(resolver, base, uri));
    return full.endsWith('#') ? full.slice(0, -1) : full;
  } catch {
    return undefined;
  }
}

/** Keys whose value's `$id` Ajv does not take as a new base when a pointer passes it (ajv/lib/compile/index.ts). */
const POINTER_KEEPS_BASE = new Set(['properties', 'patternProperties', 'enum', 'dependencies', 'definitions']);

/**
 * The object or array a JSON pointer (percent-encoded, as in a URI fragment) names inside `root`, read as Ajv reads it:
 * split at `/` first, then each token percent-decoded and unescaped (so a `%2F` stays inside its token); and the base
 * Ajv ends on, starting from `base`: every object the pointer passes with an `$id` changes it (one under `default`
 * too), unless reached by a key of {@link POINTER_KEEPS_BASE}, which Ajv compares as written in the pointer.
 */
function resolvePointer(root: object, pointer: string, base: string): { target: object; base: string | undefined } | undefined {
  let at: unknown = root;
  let atBase: string | undefined = base;
  for (const raw of pointer.slice(1).split('/')) {
    let token: string;
    try {
      token = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      return undefined;
    }
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, token)) return undefined;
    at = (at as Record<string, unknown>)[token];
    const id = isObject(at) ? ownValue(at, '$id') : undefined;
    if (id !== undefined && !POINTER_KEEPS_BASE.has(raw)) atBase = typeof id === 'string' && atBase !== undefined ? resolveUri(id, atBase) : undefined;
  }
  return at !== null && typeof at === 'object' ? { target: at, base: atBase } : undefined;
}
