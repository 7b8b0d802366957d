/**
 * Bounds on a manifest's request and response schemas (the `$defs.request`
 * and `$defs.response` of its schema bundles). The host compiles each with
 * Ajv on its own thread at the first call of the tool in every host process
 * (src/host/callSchemas.ts), the thread every plugin and the gateway share,
 * and compile time grows faster than the schema: a 900 KB schema held it
 * 15 s (review R8). Checked when the manifest is validated and again before
 * the compile, so an edited lock or schema store cannot skip the first check.
 * The numbers live in etc/plugin-answers.json beside the run-time output
 * schema bounds.
 */
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { escapePointerToken } from './violations.js';

/** Largest request or response schema accepted, in bytes of its JSON text. */
export const MAX_MANIFEST_SCHEMA_BYTES: number = pluginAnswerLimits.maxManifestSchemaBytes;

/** Deepest nesting of objects and arrays in a request or response schema (the schema itself is level 1). */
export const MAX_MANIFEST_SCHEMA_DEPTH: number = pluginAnswerLimits.maxManifestSchemaDepth;

/**
 * Why a request or response schema is over the host's bounds, as a sentence
 * naming the offending place (a JSON pointer relative to the schema), or
 * `undefined` when it is within them. Depth is checked first and without
 * recursion, so a value too deep for JSON.stringify is reported, not thrown.
 */
export function schemaLimitProblem(schema: unknown): string | undefined {
  const deep = deepestPointer(schema, MAX_MANIFEST_SCHEMA_DEPTH);
  if (deep !== undefined) return `nests deeper than ${MAX_MANIFEST_SCHEMA_DEPTH} levels at '${deep}'`;
  let text: string | undefined;
  try {
    text = JSON.stringify(schema);
  } catch {
    return 'has no JSON form';
  }
  const bytes = text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_MANIFEST_SCHEMA_BYTES) return `is ${bytes} bytes, over the ${MAX_MANIFEST_SCHEMA_BYTES} the host compiles`;
  return undefined;
}

/** The pointer of the first object or array nested deeper than `limit`, or `undefined`; an explicit stack, no recursion. */
function deepestPointer(root: unknown, limit: number): string | undefined {
  const stack: Array<{ value: unknown; depth: number; pointer: string }> = [{ value: root, depth: 1, pointer: '' }];
  while (stack.length > 0) {
    const { value, depth, pointer } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > limit) return pointer;
    const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    for (const [key, child] of entries) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1, pointer: `${pointer}/${escapePointerToken(key)}` });
    }
  }
  return undefined;
}
