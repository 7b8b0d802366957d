/**
 * Schema refs: the safe served-ref grammar, bundle shape, and the RFC 8785
 * (JCS) digests that decide whether a ref already known is reused or
 * collides.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { isRecord, own, ownString, toolEntries, type JsonRecord } from './access.js';
import type { ManifestForm, ResolvedSchema } from './model.js';
import { MAX_MANIFEST_SCHEMA_TOTAL_BYTES, measureSchema } from './schemaLimits.js';
import { gumAjv } from './schemas.js';
import { pointerOf, violation, type Violation } from './violations.js';

/** The served-ref grammar: lowercase, digits, `.`, `_`, `-`, at most 128 characters. */
export const SERVED_REF_GRAMMAR = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/** Suffixes build/install appends to a `schema_ref`; manifests never declare them. */
export const DERIVED_REF_SUFFIXES = ['request', 'response'] as const;

const LONGEST_SUFFIX = Math.max(...DERIVED_REF_SUFFIXES.map((s) => s.length + 1));

/**
 * Why a `schema_ref` is unsafe, or `undefined` when it is safe. Checked
 * before any path is built from it.
 */
export function schemaRefProblem(ref: string): string | undefined {
  if (ref === '') return 'is empty';
  if (/[\u0000-\u001f\u007f]/.test(ref)) return 'contains a control character';
  if (/[/\\]/.test(ref)) return 'contains a path separator';
  if (/%(?:2f|5c|2e)/i.test(ref)) return 'contains a percent-encoded separator or dot';
  if (ref.includes('..')) return 'contains a traversal marker ".."';
  if (!SERVED_REF_GRAMMAR.test(ref)) return `must match ${SERVED_REF_GRAMMAR.source}`;
  if (ref.length + LONGEST_SUFFIX > 128) {
    return `is ${ref.length} characters; its derived refs (<ref>.response) must stay within 128`;
  }
  return undefined;
}

/** Lowercase hex SHA-256 of a value's RFC 8785 canonical JSON; `undefined` when it has none. */
export function jcsDigest(value: unknown): string | undefined {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch {
    return undefined;
  }
  return text === undefined ? undefined : createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Every string `schema_ref` of a document with its pointer. */
export function schemaRefsOf(doc: unknown, form: ManifestForm): Array<{ pointer: string; ref: string }> {
  const out: Array<{ pointer: string; ref: string }> = [];
  for (const { at, tool } of toolEntries(doc, form)) {
    const ref = ownString(tool, 'schema_ref');
    if (ref !== undefined) out.push({ pointer: pointerOf(...at, 'schema_ref'), ref });
  }
  return out;
}

/** Grammar violations of every `schema_ref` (pure; no bundle is read). */
export function checkSchemaRefGrammar(doc: unknown, form: ManifestForm): Violation[] {
  const out: Violation[] = [];
  for (const { pointer, ref } of schemaRefsOf(doc, form)) {
    const problem = schemaRefProblem(ref);
    if (problem !== undefined) {
      out.push(violation('schema_refs', 'PLUGIN_SCHEMA_REF_INVALID', pointer, `schema_ref ${JSON.stringify(ref)} ${problem}`));
    }
  }
  return out;
}

/**
 * Reads the bundle `schemas/<ref>.json` of a plugin: the parsed JSON, or
 * `undefined` when there is no such file. A rejection means the file exists
 * but cannot be read or parsed; its message is reported.
 */
export type SchemaBundleReader = (ref: string) => Promise<unknown>;

/** Inputs of the bundle checks. */
export interface SchemaRefCheckOptions {
  /** Reads a bundle by ref (only called for refs that pass the grammar). */
  readonly readBundle: SchemaBundleReader;
  /** Served refs already in the host inventory, with their JCS SHA-256 digests. */
  readonly knownDigests?: ReadonlyMap<string, string>;
}

/** What the schema-ref step found. */
export interface SchemaRefOutcome {
  /** Violations, unsorted. */
  readonly violations: Violation[];
  /** Request and response schemas of every valid bundle, one entry per served ref. */
  readonly schemas: ResolvedSchema[];
}

const DRAFT_2020_12 = /^https:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;

function bundleProblem(bundle: unknown): string | undefined {
  if (!isRecord(bundle)) return 'is not a JSON object';
  const dialect = own(bundle, '$schema');
  if (dialect !== undefined && (typeof dialect !== 'string' || !DRAFT_2020_12.test(dialect))) {
    return `declares $schema ${JSON.stringify(dialect)}; bundles are JSON Schema 2020-12`;
  }
  const defs = own(bundle, '$defs');
  for (const part of DERIVED_REF_SUFFIXES) {
    if (!isRecord(own(defs, part))) return `lacks an object-valued $defs.${part}`;
  }
  let valid: boolean;
  try {
    valid = gumAjv().validateSchema(bundle) === true;
  } catch (cause) {
    return `is not a valid JSON Schema 2020-12 document: ${cause instanceof Error ? cause.message : String(cause)}`;
  }
  return valid ? undefined : `is not a valid JSON Schema 2020-12 document: ${gumAjv().errorsText(gumAjv().errors)}`;
}

/**
 * The whole schema-ref step: grammar, then each distinct bundle read once
 * and checked for object-valued `$defs.request` and `$defs.response`, then
 * each derived ref compared with the known digests. A known ref with the
 * same digest is reuse; with another digest, SCHEMA_REF_COLLISION.
 */
export async function checkSchemaRefs(
  doc: unknown,
  form: ManifestForm,
  options: SchemaRefCheckOptions,
): Promise<SchemaRefOutcome> {
  const violations = checkSchemaRefGrammar(doc, form);
  const bad = new Set(violations.map((v) => v.pointer));
  const bundles = new Map<string, Promise<ResolvedBundle | { problem: string }>>();
  const load = (ref: string): Promise<ResolvedBundle | { problem: string }> => {
    let pending = bundles.get(ref);
    if (pending === undefined) {
      pending = resolveBundle(ref, options.readBundle);
      bundles.set(ref, pending);
    }
    return pending;
  };
  const schemas = new Map<string, ResolvedSchema>();
  const counted = new Set<string>();
  let totalBytes = 0;
  let overTotal = false;
  for (const { pointer, ref } of schemaRefsOf(doc, form)) {
    if (bad.has(pointer)) continue;
    const outcome = await load(ref);
    if ('problem' in outcome) {
      violations.push(violation('schema_refs', 'PLUGIN_SCHEMA_REF_INVALID', pointer, outcome.problem));
      continue;
    }
    // Each schema is within maxSchemaBytes, but a package may list many tools and the host compiles every one of them
    // on its shared thread, so the distinct bundles of one manifest are bounded together too.
    if (!counted.has(ref)) {
      counted.add(ref);
      totalBytes += outcome.bytes;
      if (totalBytes > MAX_MANIFEST_SCHEMA_TOTAL_BYTES && !overTotal) {
        overTotal = true;
        violations.push(
          violation(
            'schema_refs',
            'PLUGIN_SCHEMA_REF_INVALID',
            pointer,
            `schemas/${ref}.json brings the manifest's request and response schemas to ${totalBytes} bytes, over the ${MAX_MANIFEST_SCHEMA_TOTAL_BYTES} the host compiles for one manifest`,
          ),
        );
      }
    }
    for (const resolved of outcome.schemas) {
      const known = options.knownDigests?.get(resolved.ref);
      if (known !== undefined && known !== resolved.digest) {
        violations.push(
          violation(
            'schema_refs',
            'SCHEMA_REF_COLLISION',
            pointer,
            `schema ref "${resolved.ref}" is already installed with digest ${known}; this bundle's is ${resolved.digest}`,
          ),
        );
      }
      schemas.set(resolved.ref, resolved);
    }
  }
  return { violations, schemas: [...schemas.values()] };
}

/** A bundle's two schemas and their JSON text's bytes together. */
interface ResolvedBundle {
  readonly schemas: ResolvedSchema[];
  readonly bytes: number;
}

async function resolveBundle(ref: string, read: SchemaBundleReader): Promise<ResolvedBundle | { problem: string }> {
  const file = `schemas/${ref}.json`;
  let bundle: unknown;
  try {
    bundle = await read(ref);
  } catch (cause) {
    return { problem: `${file} cannot be read: ${cause instanceof Error ? cause.message : String(cause)}` };
  }
  if (bundle === undefined) return { problem: `${file} does not exist` };
  const problem = bundleProblem(bundle);
  if (problem !== undefined) return { problem: `${file} ${problem}` };
  const defs = own(bundle, '$defs');
  const schemas: ResolvedSchema[] = [];
  let bytes = 0;
  for (const part of DERIVED_REF_SUFFIXES) {
    const schema = own(defs, part) as JsonRecord;
    // The host compiles this schema on its shared thread at the tool's first call; refuse what would stall it now.
    const measured = measureSchema(schema);
    if (!measured.ok) return { problem: `${file}#/$defs/${part} ${measured.problem}` };
    const digest = jcsDigest(schema);
    if (digest === undefined) return { problem: `${file} $defs.${part} has no canonical JSON form` };
    schemas.push({ ref: `${ref}.${part}`, digest, schema });
    bytes += measured.bytes;
  }
  return { schemas, bytes };
}
