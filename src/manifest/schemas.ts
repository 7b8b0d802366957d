/**
 * The JSON Schemas in etc/schemas, each compiled once per process on first
 * use, and the mapping of Ajv errors to coded violations.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import gumV1Schema from '../../etc/schemas/gum-manifest-v1.schema.json' with { type: 'json' };
import gumTomlSchema from '../../etc/schemas/gum-manifest-toml.schema.json' with { type: 'json' };
import handshakeSchema from '../../etc/schemas/handshake-manifest.schema.json' with { type: 'json' };
import openDiscoverySchema from '../../etc/schemas/mcp-plugin.schema.json' with { type: 'json' };
import type { HostErrorCode } from '../errors/registry.js';
import { closestName } from '../options/closestName.js';
import { own } from './access.js';
import type { ManifestForm } from './model.js';
import { escapePointerToken, violation, type CheckStage, type Violation } from './violations.js';

const addFormats = formats.default;

/** The schemas the validator ships, by the document they describe. */
export const BUNDLED_SCHEMAS = {
  'gum-json': gumV1Schema,
  'gum-toml': gumTomlSchema,
  'open-discovery': openDiscoverySchema,
  handshake: handshakeSchema,
} as const;

/** A compiled schema check over an unknown value. */
export type CompiledSchema = ValidateFunction<unknown>;

let ajv2020: Ajv2020 | undefined;

/** The one Ajv 2020-12 instance (GUM forms, handshake, schema bundle meta-validation). */
export function gumAjv(): Ajv2020 {
  if (ajv2020 === undefined) {
    const instance = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, strictTypes: false, verbose: true });
    addFormats(instance);
    instance.addSchema(gumV1Schema);
    instance.addSchema(gumTomlSchema);
    instance.addSchema(handshakeSchema);
    ajv2020 = instance;
  }
  return ajv2020;
}

/** A fresh draft-07 Ajv, as the Open Discovery loader uses. */
export function newDraft07Ajv(): Ajv {
  const instance = new Ajv({ allErrors: true, strict: false, verbose: true });
  addFormats(instance);
  return instance;
}

const compiled = new Map<string, CompiledSchema>();

/** The compiled validator of a bundled schema (compiled on first use, then reused). */
export function bundledValidator(which: keyof typeof BUNDLED_SCHEMAS): CompiledSchema {
  let fn = compiled.get(which);
  if (fn === undefined) {
    fn =
      which === 'open-discovery'
        ? newDraft07Ajv().compile<unknown>(openDiscoverySchema)
        : (gumAjv().getSchema<unknown>(BUNDLED_SCHEMAS[which].$id) as CompiledSchema);
    compiled.set(which, fn);
  }
  return fn;
}

interface CodeRule {
  readonly pattern: RegExp;
  readonly code: HostErrorCode;
  readonly stage: CheckStage;
  /** Only these Ajv keywords get the rule's code; any keyword when absent. */
  readonly keywords?: readonly string[];
  /** Said instead of Ajv's own wording, when the rule needs the contract's. */
  readonly message?: string;
}

const OUTPUT_PROFILE_MISSING =
  'declares no output_profile; the contract requires one unless the tool declares raw_result_allowed = true with a token_budget_exception';
const TOKEN_BUDGET_MISSING = 'declares raw_result_allowed = true without a token_budget_exception ({ max_tokens, reason })';

/**
 * Which code a violation at a pointer gets, following the author guide's
 * table and the contract. The first matching rule wins; anything else is
 * PLUGIN_MANIFEST_INVALID.
 */
const CODE_RULES: Readonly<Record<ManifestForm | 'handshake', readonly CodeRule[]>> = {
  'gum-json': [
    { pattern: /^\/manifest_schema_version$/, code: 'PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED', stage: 'schema_version' },
    { pattern: /^\/shape$/, code: 'PLUGIN_SHAPE_UNSUPPORTED', stage: 'shape', keywords: ['type', 'minLength'] },
    { pattern: /^\/declared_capabilities\/fs_write_dir$/, code: 'PLUGIN_FS_WRITE_OUTSIDE_SANDBOX', stage: 'structure', keywords: ['pattern'] },
    { pattern: /^\/declared_capabilities\/client_requests(?:\/|$)/, code: 'PLUGIN_CLIENT_REQUESTS_INVALID', stage: 'structure' },
    { pattern: /^\/requirements\/credential_descriptors(?:\/|$)/, code: 'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', stage: 'credentials' },
    { pattern: /^\/advertised_tools\/\d+\/schema_ref$/, code: 'PLUGIN_SCHEMA_REF_INVALID', stage: 'schema_refs' },
    { pattern: /^\/advertised_tools\/\d+\/token_budget_exception$/, code: 'PLUGIN_OUTPUT_PROFILE_REQUIRED', stage: 'output_profiles', keywords: ['required'], message: TOKEN_BUDGET_MISSING },
    { pattern: /^\/advertised_tools\/\d+\/token_budget_exception\//, code: 'PLUGIN_OUTPUT_PROFILE_REQUIRED', stage: 'output_profiles' },
  ],
  'gum-toml': [
    { pattern: /^\/manifest_schema_version$/, code: 'PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED', stage: 'schema_version' },
    { pattern: /^\/plugin\/shape$/, code: 'PLUGIN_SHAPE_UNSUPPORTED', stage: 'shape', keywords: ['type', 'minLength'] },
    { pattern: /^\/declared_capabilities\/fs_write_dir$/, code: 'PLUGIN_FS_WRITE_OUTSIDE_SANDBOX', stage: 'structure', keywords: ['pattern'] },
    { pattern: /^\/declared_capabilities\/client_requests(?:\/|$)/, code: 'PLUGIN_CLIENT_REQUESTS_INVALID', stage: 'structure' },
    { pattern: /^\/requirements\/credential_descriptors(?:\/|$)/, code: 'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID', stage: 'credentials' },
    { pattern: /^\/tools\/\d+\/(?:tool_name|rpc_service|rpc_method)$/, code: 'PLUGIN_BINDING_INVALID', stage: 'structure' },
    { pattern: /^\/tools\/\d+\/schema_ref$/, code: 'PLUGIN_SCHEMA_REF_INVALID', stage: 'schema_refs' },
    { pattern: /^\/tools\/\d+\/output_profile$/, code: 'PLUGIN_OUTPUT_PROFILE_REQUIRED', stage: 'output_profiles', keywords: ['required'], message: OUTPUT_PROFILE_MISSING },
    { pattern: /^\/tools\/\d+\/token_budget_exception$/, code: 'PLUGIN_OUTPUT_PROFILE_REQUIRED', stage: 'output_profiles', keywords: ['required'], message: TOKEN_BUDGET_MISSING },
    { pattern: /^\/tools\/\d+\/token_budget_exception\//, code: 'PLUGIN_OUTPUT_PROFILE_REQUIRED', stage: 'output_profiles' },
  ],
  'open-discovery': [],
  handshake: [],
};

/** The code and stage of a violation at `pointer` raised by Ajv keyword `keyword`. */
export function codeFor(
  form: ManifestForm | 'handshake',
  pointer: string,
  keyword: string,
  fallback: HostErrorCode = 'PLUGIN_MANIFEST_INVALID',
): { code: HostErrorCode; stage: CheckStage; message?: string } {
  for (const rule of CODE_RULES[form]) {
    if (rule.pattern.test(pointer) && (rule.keywords === undefined || rule.keywords.includes(keyword))) {
      return rule.message === undefined ? { code: rule.code, stage: rule.stage } : { code: rule.code, stage: rule.stage, message: rule.message };
    }
  }
  return { code: fallback, stage: 'structure' };
}

/** Keywords whose errors only restate the errors of their subschemas. */
const SUMMARY_KEYWORDS: ReadonlySet<string> = new Set(['if', 'anyOf', 'oneOf', 'allOf', 'not', '$ref']);

function describe(error: ErrorObject): string {
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `required property "${String(p.missingProperty)}" is missing`;
    case 'additionalProperties': {
      const name = String(p.additionalProperty);
      const known = own(error.parentSchema, 'properties');
      const near = typeof known === 'object' && known !== null ? closestName(name, Object.keys(known)) : undefined;
      return `unknown property "${name}"${near === undefined ? '' : ` (did you mean "${near}"?)`}`;
    }
    case 'pattern': {
      const description = own(error.parentSchema, 'description');
      return typeof description === 'string' ? description : `must match ${String(p.pattern)}`;
    }
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    default:
      return error.message ?? `fails ${error.keyword}`;
  }
}

/** The pointer an Ajv error is about: the missing or unknown property itself when there is one. */
function errorPointer(error: ErrorObject): string {
  const p = error.params as Record<string, unknown>;
  if (error.keyword === 'required') return `${error.instancePath}/${escapePointerToken(String(p.missingProperty))}`;
  if (error.keyword === 'additionalProperties') {
    return `${error.instancePath}/${escapePointerToken(String(p.additionalProperty))}`;
  }
  if (error.keyword === 'propertyNames' && typeof p.propertyName === 'string') {
    return `${error.instancePath}/${escapePointerToken(p.propertyName)}`;
  }
  return error.instancePath;
}

/**
 * Violations for Ajv errors, coded per form. Errors of combinator keywords
 * are dropped because the errors of their branches are reported instead.
 */
export function ajvViolations(
  form: ManifestForm | 'handshake',
  errors: readonly ErrorObject[] | null | undefined,
  fallback: HostErrorCode = 'PLUGIN_MANIFEST_INVALID',
): Violation[] {
  const out: Violation[] = [];
  for (const error of errors ?? []) {
    if (SUMMARY_KEYWORDS.has(error.keyword)) continue;
    const pointer = errorPointer(error);
    const { code, stage, message } = codeFor(form, pointer, error.keyword, fallback);
    out.push(violation(stage, code, pointer, message ?? describe(error)));
  }
  return out;
}
