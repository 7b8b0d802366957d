import { join } from 'node:path';
import { okAsync, type ResultAsync } from 'neverthrow';
import type { HostError } from '../../errors/HostError.js';
import { ManifestValidator } from '../../manifest/ManifestValidator.js';
import type { NormalizedManifest } from '../../manifest/model.js';

/** The manifest file name of an ESM plugin. */
export const ESM_MANIFEST_FILE = 'mcp-plugin.json';

/** The path of a plugin root's `mcp-plugin.json`. */
export function esmManifestPath(root: string): string {
  return join(root, ESM_MANIFEST_FILE);
}

/**
 * The validator for `mcp-plugin.json`: the bundled draft-07 schema, or the
 * one at `schemaPath` (the loader's SCHEMA_PATH); a bad schema file is
 * HOST_INVALID_OPTIONS before any plugin is read.
 */
export function esmManifestValidator(schemaPath: string | undefined): ResultAsync<ManifestValidator, HostError> {
  if (schemaPath === undefined) return okAsync(new ManifestValidator({ allowedShapes: ['esm-module'] }));
  return ManifestValidator.create({ allowedShapes: ['esm-module'], openDiscoverySchemaPath: schemaPath });
}

/** Reads and validates `<root>/mcp-plugin.json` (Ajv, draft-07, plus the identity checks). */
export function readEsmManifest(root: string, validator: ManifestValidator): ResultAsync<NormalizedManifest, HostError> {
  return validator.validateFile(esmManifestPath(root), { form: 'open-discovery' });
}
