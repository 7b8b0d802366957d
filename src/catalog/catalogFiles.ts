/**
 * Names, parsing and validation of the three catalog files. Every read
 * checks the schema version first (an unsupported version has its own code),
 * then the JSON Schema.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { err, ok, type Result } from 'neverthrow';
import catalogSchema from '../../etc/schemas/catalog/plugin-catalog.schema.json' with { type: 'json' };
import lockSchema from '../../etc/schemas/catalog/plugins-lock.schema.json' with { type: 'json' };
import stateSchema from '../../etc/schemas/catalog/plugin-state.schema.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import type { HostErrorCode } from '../errors/registry.js';
import { isDateTime } from './dateTime.js';
import {
  PLUGIN_CATALOG_SCHEMA_VERSION,
  PLUGIN_STATE_SCHEMA_VERSION,
  PLUGINS_LOCK_SCHEMA_VERSION,
  type PluginCatalogFile,
  type PluginStateFile,
  type PluginsLockFile,
} from './catalogTypes.js';

/** Which of the three files. */
export type CatalogFileKind = 'catalog' | 'lock' | 'state';

/** The parsed content of each kind of file. */
export interface CatalogFileData {
  /** `plugin-catalog.json`. */
  readonly catalog: PluginCatalogFile;
  /** `plugins.lock`. */
  readonly lock: PluginsLockFile;
  /** `plugin-state.json`. */
  readonly state: PluginStateFile;
}

interface FileSpec {
  readonly name: string;
  readonly versionField: string;
  readonly version: number;
  readonly unsupported: HostErrorCode;
  readonly schema: object;
}

/** The three files, in the order a transaction publishes them. */
export const CATALOG_FILE_KINDS: readonly CatalogFileKind[] = ['catalog', 'lock', 'state'];

const SPECS: Readonly<Record<CatalogFileKind, FileSpec>> = {
  catalog: {
    name: 'plugin-catalog.json',
    versionField: 'plugin_catalog_schema_version',
    version: PLUGIN_CATALOG_SCHEMA_VERSION,
    unsupported: 'PLUGIN_CATALOG_SCHEMA_UNSUPPORTED',
    schema: catalogSchema,
  },
  lock: {
    name: 'plugins.lock',
    versionField: 'plugins_lock_schema_version',
    version: PLUGINS_LOCK_SCHEMA_VERSION,
    unsupported: 'PLUGIN_LOCK_SCHEMA_UNSUPPORTED',
    schema: lockSchema,
  },
  state: {
    name: 'plugin-state.json',
    versionField: 'plugin_state_schema_version',
    version: PLUGIN_STATE_SCHEMA_VERSION,
    unsupported: 'PLUGIN_STATE_SCHEMA_UNSUPPORTED',
    schema: stateSchema,
  },
};

/** The live file name of a kind. */
export function fileName(kind: CatalogFileKind): string {
  return SPECS[kind].name;
}

/** The name a transaction writes a file under before publishing it. */
export function nextFileName(kind: CatalogFileKind): string {
  return `${SPECS[kind].name}.next`;
}

let validators: Readonly<Record<CatalogFileKind, ValidateFunction>> | undefined;

function validatorOf(kind: CatalogFileKind): ValidateFunction {
  if (validators === undefined) {
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    // The only format the three schemas use; strict mode refuses any other at compile.
    ajv.addFormat('date-time', { type: 'string', validate: isDateTime });
    validators = {
      catalog: ajv.compile(SPECS.catalog.schema),
      lock: ajv.compile(SPECS.lock.schema),
      state: ajv.compile(SPECS.state.schema),
    };
  }
  return validators[kind];
}

const violationsOf = (errors: readonly ErrorObject[] | null | undefined): { pointer: string; message: string }[] =>
  (errors ?? []).slice(0, 20).map((e) => ({ pointer: e.instancePath || '/', message: e.message ?? e.keyword }));

/** Checks an object against its file's schema (used before writing, too). */
export function validateFile<K extends CatalogFileKind>(kind: K, value: unknown, path: string): Result<CatalogFileData[K], HostError> {
  const spec = SPECS[kind];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return err(hostError('CATALOG_CORRUPT', `${path} does not hold a JSON object.`, { details: { file: path } }));
  }
  const version = (value as Record<string, unknown>)[spec.versionField];
  if (version !== spec.version) {
    return err(
      hostError(spec.unsupported, `${path} has ${spec.versionField} ${JSON.stringify(version ?? null)}; this host reads version ${spec.version}.`, {
        details: { file: path, found: version ?? null, supported: [spec.version] },
      }),
    );
  }
  const validate = validatorOf(kind);
  if (!validate(value)) {
    return err(
      hostError('CATALOG_CORRUPT', `${path} does not match its schema: ${violationsOf(validate.errors).map((v) => `${v.pointer} ${v.message}`).join('; ')}.`, {
        details: { file: path, violations: violationsOf(validate.errors) },
      }),
    );
  }
  return ok(value as CatalogFileData[K]);
}

/** Parses and validates one file's text. */
export function parseFile<K extends CatalogFileKind>(kind: K, text: string, path: string): Result<CatalogFileData[K], HostError> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    return err(
      hostError('CATALOG_CORRUPT', `${path} is not valid JSON (${(cause as Error).message}); it was left in place.`, {
        details: { file: path, reason: 'invalid_json' },
        cause,
      }),
    );
  }
  return validateFile(kind, value, path);
}
