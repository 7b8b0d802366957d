/**
 * The official MCP Bundle manifest schemas, as the `@anthropic-ai/mcpb`
 * package publishes them (copied into etc/mcpb/ with its MIT licence by
 * scripts/sync-mcpb-schemas.ts), one per `manifest_version`, each compiled
 * once on first use.
 */
import type { ValidateFunction } from 'ajv';
import index from '../../etc/mcpb/schemas.json' with { type: 'json' };
import v01 from '../../etc/mcpb/mcpb-manifest-v0.1.schema.json' with { type: 'json' };
import v02 from '../../etc/mcpb/mcpb-manifest-v0.2.schema.json' with { type: 'json' };
import v03 from '../../etc/mcpb/mcpb-manifest-v0.3.schema.json' with { type: 'json' };
import v04 from '../../etc/mcpb/mcpb-manifest-v0.4.schema.json' with { type: 'json' };
import { ajvViolations, newDraft07Ajv } from '../manifest/schemas.js';
import type { Violation } from '../manifest/violations.js';

const SCHEMA_FILES: Readonly<Record<string, object>> = {
  'mcpb-manifest-v0.1.schema.json': v01,
  'mcpb-manifest-v0.2.schema.json': v02,
  'mcpb-manifest-v0.3.schema.json': v03,
  'mcpb-manifest-v0.4.schema.json': v04,
};

/** The `manifest_version` values this host reads, oldest first. */
export const BUNDLE_MANIFEST_VERSIONS: readonly string[] = Object.keys(index.versions);

/** The package the schemas were copied from (`@anthropic-ai/mcpb@<version>`). */
export const BUNDLE_SCHEMA_SOURCE: string = index.package;

const compiled = new Map<string, ValidateFunction<unknown>>();

function validatorOf(version: string): ValidateFunction<unknown> | undefined {
  const file = (index.versions as Readonly<Record<string, string>>)[version];
  const schema = file === undefined ? undefined : SCHEMA_FILES[file];
  if (schema === undefined) return undefined;
  let fn = compiled.get(version);
  if (fn === undefined) {
    fn = newDraft07Ajv().compile(schema);
    compiled.set(version, fn);
  }
  return fn;
}

/**
 * The violations of a bundle manifest against the official schema of its
 * `manifest_version`; undefined when this host has no schema for that version.
 */
export function bundleSchemaViolations(doc: unknown, version: string): Violation[] | undefined {
  const validate = validatorOf(version);
  if (validate === undefined) return undefined;
  return validate(doc) ? [] : ajvViolations('open-discovery', validate.errors);
}
