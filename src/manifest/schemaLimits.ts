/**
 * Bounds on every schema a plugin brings that the host compiles with Ajv on
 * its own thread, the thread every plugin and the gateway share: the output
 * schemas a running MCP plugin lists (src/shapes/mcp/McpConnection.ts) and a
 * manifest's request and response schemas (the `$defs.request` and
 * `$defs.response` of its schema bundles, compiled at a tool's first call in
 * every host process, src/host/callSchemas.ts). Compile time grows faster
 * than the schema, and each pattern costs a regular-expression compile of
 * its own: a 900 KB schema held the thread 15 s (review R8). One reader of
 * the numbers in etc/plugin-answers.json, so the two paths cannot drift
 * apart again (R8's runtime bound was twice the manifest's).
 */
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { measureExpansion } from './schemaExpansion.js';
import { escapePointerToken } from './violations.js';

/** Largest schema accepted, in bytes of its JSON text. */
export const MAX_SCHEMA_BYTES: number = pluginAnswerLimits.maxSchemaBytes;

/** Deepest nesting of objects and arrays in a schema (the schema itself is level 1). */
export const MAX_SCHEMA_DEPTH: number = pluginAnswerLimits.maxSchemaDepth;

/** Most objects and arrays a schema may hold (itself included): Ajv generates code for each subschema, so this is what its compile time follows. */
export const MAX_SCHEMA_NODES: number = pluginAnswerLimits.maxSchemaNodes;

/** Most regular expressions a schema may name: `pattern` strings and `patternProperties` keys. */
export const MAX_SCHEMA_PATTERNS: number = pluginAnswerLimits.maxSchemaPatterns;

/** Most bytes all the distinct request and response schemas of one manifest may take together. */
export const MAX_MANIFEST_SCHEMA_TOTAL_BYTES: number = pluginAnswerLimits.maxManifestSchemaTotalBytes;

/** Which bound a schema broke (`expansion`: what one validation against it may cost, schemaExpansion.ts). */
export type SchemaBound = 'depth' | 'nodes' | 'bytes' | 'patterns' | 'json' | 'expansion';

/** A schema within the bounds: its JSON text (the cache key of a compile) and the text's bytes. */
export interface SchemaWithinBounds {
  readonly ok: true;
  readonly text: string;
  readonly bytes: number;
}

/** A schema over a bound, with a sentence naming it (and the place, for depth). */
export interface SchemaOverBound {
  readonly ok: false;
  readonly bound: SchemaBound;
  readonly problem: string;
  /** Bytes of the JSON text, when it was measured. */
  readonly bytes?: number;
}

/**
 * Measures a schema against the bounds. Depth, objects and patterns are
 * found in one walk without recursion, first, so a value too deep or too
 * large for JSON.stringify is reported, not thrown, and a huge one is not
 * stringified at all.
 */
export function measureSchema(schema: unknown): SchemaWithinBounds | SchemaOverBound {
  const walked = walk(schema);
  if (walked.deep !== undefined) return { ok: false, bound: 'depth', problem: `nests deeper than ${MAX_SCHEMA_DEPTH} levels at '${walked.deep}'` };
  if (walked.nodes > MAX_SCHEMA_NODES) return { ok: false, bound: 'nodes', problem: `holds more than ${MAX_SCHEMA_NODES} objects and arrays, the most the host compiles` };
  let text: string | undefined;
  try {
    text = JSON.stringify(schema);
  } catch {
    return { ok: false, bound: 'json', problem: 'has no JSON form' };
  }
  text ??= '';
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_SCHEMA_BYTES) return { ok: false, bound: 'bytes', bytes, problem: `is ${bytes} bytes, over the ${MAX_SCHEMA_BYTES} the host compiles` };
  if (walked.patterns > MAX_SCHEMA_PATTERNS) {
    return { ok: false, bound: 'patterns', bytes, problem: `names ${walked.patterns} patterns, over the ${MAX_SCHEMA_PATTERNS} the host compiles` };
  }
  // Last: its walk recurses along $refs, at most maxSchemaNodes deep once the node bound holds. Compile time is bounded
  // above; this bounds each validation, which runs on the same shared thread at every answer or call.
  const expansion = measureExpansion(schema);
  if (!expansion.ok) return { ok: false, bound: 'expansion', bytes, problem: expansion.problem };
  return { ok: true, text, bytes };
}

/**
 * Why a schema is over the host's bounds, as a sentence naming the
 * offending place (a JSON pointer relative to the schema), or `undefined`
 * when it is within them.
 */
export function schemaLimitProblem(schema: unknown): string | undefined {
  const measured = measureSchema(schema);
  return measured.ok ? undefined : measured.problem;
}

/**
 * The pointer of the first object or array nested deeper than the bound (or
 * `undefined`), how many objects and arrays the value holds (counted up to
 * one past the bound), and how many patterns it names. An explicit stack, no
 * recursion. A `pattern` key counts wherever its value is a string (also
 * inside `const` or `default`): counting too many only refuses earlier.
 */
function walk(root: unknown): { deep: string | undefined; nodes: number; patterns: number } {
  let patterns = 0;
  let nodes = 0;
  const stack: Array<{ value: unknown; depth: number; pointer: string }> = [{ value: root, depth: 1, pointer: '' }];
  while (stack.length > 0) {
    const { value, depth, pointer } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_SCHEMA_DEPTH) return { deep: pointer, nodes, patterns };
    // Past the bound the count is the verdict: the rest of a huge value is not walked.
    if (++nodes > MAX_SCHEMA_NODES) return { deep: undefined, nodes, patterns };
    const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    for (const [key, child] of entries) {
      if (!Array.isArray(value)) {
        if (key === 'pattern' && typeof child === 'string') patterns++;
        else if (key === 'patternProperties' && child !== null && typeof child === 'object' && !Array.isArray(child)) patterns += Object.keys(child).length;
      }
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1, pointer: `${pointer}/${escapePointerToken(key)}` });
    }
  }
  return { deep: undefined, nodes, patterns };
}
