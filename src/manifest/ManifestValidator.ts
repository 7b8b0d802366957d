import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { readAtMost } from './readAtMost.js';
import { chooseManifest } from './manifestChoice.js';
import { isRecord, own } from './access.js';
import {
  checkAuthTaxonomy,
  checkCredentialDescriptors,
  checkEgressDestinations,
  checkDocumentIsObject,
  checkGumContractRules,
  checkNamespaceOwnerPresence,
  checkSchemaVersionPlacement,
  checkShapeGate,
  checkStripNullsSafety,
  checkStructure,
  repeatsHostCheck,
  type OutputProfileResolver,
} from './checks.js';
import { checkClientRequestShape } from './clientRequestKinds.js';
import { checkOutputProfiles } from './outputProfiles.js';
import { RUNNABLE_SHAPES, type ManifestForm, type NormalizedManifest, type ManifestShape, type ResolvedSchema } from './model.js';
import { normalizeManifest } from './normalize.js';
import { DEFAULT_PARSE_LIMITS, decodeManifestBytes, parseJsonText, parseManifestText, plainValueOf, unreadableValue, type ParseLimits } from './parse.js';
import { checkSchemaRefGrammar, checkSchemaRefs, type SchemaBundleReader } from './schemaRefs.js';
import { bundledValidator, newDraft07Ajv, type CompiledSchema } from './schemas.js';
import { hasViolations, sortViolations, violationsError, type CheckStage, type Violation } from './violations.js';

/**
 * Which shapes a validator accepts by default. `gum` is the GUM contract as
 * written: JSON v1 and TOML manifests of shape `mcp-plugin` only. `neutral`
 * accepts every shape this library runs.
 */
export type ManifestPreset = 'gum' | 'neutral';

/** Shapes accepted under each preset unless `allowedShapes` says otherwise. */
export const PRESET_SHAPES: Readonly<Record<ManifestPreset, readonly ManifestShape[]>> = {
  gum: ['mcp-plugin'],
  neutral: RUNNABLE_SHAPES,
};

/** Options of a {@link ManifestValidator}. */
export interface ManifestValidatorOptions {
  /** Default shape policy; `neutral` unless set. */
  readonly preset?: ManifestPreset;
  /** Shapes accepted, overriding the preset. */
  readonly allowedShapes?: readonly ManifestShape[];
  /** Validate as bundled first-party plugins (namespace_owner and a missing schema version allowed). Default false. */
  readonly firstParty?: boolean;
  /** Largest manifest accepted, in bytes. Default 1 MiB. */
  readonly maxBytes?: number;
  /** Deepest nesting accepted. Default 64. */
  readonly maxDepth?: number;
  /** Output profiles the manifests do not ship (host built-ins), for the strip-nulls check. */
  readonly resolveProfile?: OutputProfileResolver;
  /** Served schema refs already installed, with their JCS SHA-256 digests, for SCHEMA_REF_COLLISION. */
  readonly knownSchemaDigests?: ReadonlyMap<string, string>;
}

/**
 * Options of {@link ManifestValidator.create}: the constructor's, plus an
 * Open Discovery schema replacing the bundled one, which is compiled before
 * the validator is returned. Give at most one of the two.
 */
export interface ManifestValidatorCreateOptions extends ManifestValidatorOptions {
  /** Path of a draft-07 JSON Schema file replacing the bundled Open Discovery schema (the loader's SCHEMA_PATH). */
  readonly openDiscoverySchemaPath?: string;
  /** A draft-07 schema object replacing the bundled Open Discovery schema. */
  readonly openDiscoverySchema?: Readonly<Record<string, unknown>>;
}

/** Per-call options. */
export interface ValidateCallOptions {
  /** The manifest form; detected from `fileName` and content when absent. */
  readonly form?: ManifestForm;
  /** File name used to detect the form and to label errors. */
  readonly fileName?: string;
  /** Overrides the validator's `firstParty` for this call. */
  readonly firstParty?: boolean;
  /**
   * Checks that need host state (namespace ownership, the env denylist, the
   * sandbox's write-dir rule). They run on the normalized manifest once the
   * structure is valid, and their violations sort into the same check order.
   */
  readonly hostChecks?: (manifest: NormalizedManifest) => readonly Violation[];
}

/** Per-call options of file validation. */
export interface ValidateFileOptions extends Omit<ValidateCallOptions, 'fileName'> {
  /** Reads `schemas/<ref>.json`; defaults to the `schemas` folder beside the manifest. */
  readonly readSchemaBundle?: SchemaBundleReader;
}

/** The outcome of running every check on one manifest. */
export interface ManifestReport {
  /** What was validated (a file name or `manifest`). */
  readonly source: string;
  /** The form the manifest was read as (`mcpb`: an MCP Bundle's manifest.json, read by the installer). */
  readonly form: ManifestForm | 'mcpb';
  /** Every violation, in check order then pointer order; empty when valid. */
  readonly violations: readonly Violation[];
  /** The normalized manifest, present exactly when there are no violations. */
  readonly manifest: NormalizedManifest | undefined;
}

/**
 * The manifest file names looked for at a package root, in order of
 * precedence: GUM JSON v1, the GUM TOML contract form (two spellings), Open
 * Discovery.
 */
export const PACKAGE_MANIFEST_NAMES = ['manifest.json', 'plugin.toml', 'manifest.toml', 'mcp-plugin.json'] as const;

/** One of {@link PACKAGE_MANIFEST_NAMES}. */
export type PackageManifestName = (typeof PACKAGE_MANIFEST_NAMES)[number];

/** Manifest file names looked for in a plugin directory, in order: {@link PACKAGE_MANIFEST_NAMES}. */
export const MANIFEST_FILE_NAMES: readonly string[] = PACKAGE_MANIFEST_NAMES;

/** Stages whose violations leave no well-formed manifest to normalize. */
const STRUCTURAL_STAGES: ReadonlySet<CheckStage> = new Set<CheckStage>(['parse', 'schema_version', 'shape', 'structure']);

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

/** Reads a host's Open Discovery schema file: a draft-07 JSON object. */
function readSchemaFile(path: string): ResultAsync<Readonly<Record<string, unknown>>, HostError> {
  const invalid = (why: string, cause?: unknown): HostError =>
    hostError('HOST_INVALID_OPTIONS', `openDiscoverySchemaPath ${path}: ${why}`, cause === undefined ? {} : { cause });
  return ResultAsync.fromPromise(readFile(path, 'utf8'), (cause) => invalid('cannot be read', cause)).andThen((text) => {
    const parsed = parseJsonText(text, { maxBytes: 4 * DEFAULT_PARSE_LIMITS.maxBytes, maxDepth: 256 });
    if (parsed.isErr()) return err(invalid(parsed.error[0].message));
    const schema = parsed.value;
    if (!isRecord(schema)) return err(invalid('is not a JSON object'));
    const dialect = own(schema, '$schema');
    if (dialect !== undefined && (typeof dialect !== 'string' || !DRAFT_07.test(dialect))) {
      return err(invalid(`declares $schema ${JSON.stringify(dialect)}; the Open Discovery schema is draft-07`));
    }
    return ok(schema);
  });
}

/** Compiles a host's Open Discovery schema; Ajv throws on a schema it cannot compile. */
function compileOpenDiscoverySchema(schema: Readonly<Record<string, unknown>>): Result<CompiledSchema, HostError> {
  try {
    return ok(newDraft07Ajv().compile<unknown>(schema));
  } catch (cause) {
    return err(hostError('HOST_INVALID_OPTIONS', `the Open Discovery schema does not compile: ${cause instanceof Error ? cause.message : String(cause)}`, { cause }));
  }
}

/** The form a file name implies, when it implies one. */
export function formFromFileName(fileName: string): ManifestForm | undefined {
  const name = basename(fileName).toLowerCase();
  if (name.endsWith('.toml')) return 'gum-toml';
  if (name === 'mcp-plugin.json') return 'open-discovery';
  if (name === 'manifest.json') return 'gum-json';
  return undefined;
}

/** The form of a parsed JSON document with no file name to go by. */
export function formFromJsonDocument(doc: unknown): ManifestForm {
  const looksGum = own(doc, 'manifest_schema_version') !== undefined || own(doc, 'advertised_tools') !== undefined;
  const looksOpenDiscovery = own(doc, 'sdk') !== undefined || own(doc, 'entry') !== undefined;
  return looksOpenDiscovery && !looksGum ? 'open-discovery' : 'gum-json';
}

function looksLikeJson(text: string): boolean {
  const m = /^[\uFEFF\s]*(.)/.exec(text);
  return m?.[1] === '{' || m?.[1] === '[';
}

/**
 * Parses and validates plugin manifests of every form (GUM JSON v1, GUM TOML
 * contract form, Open Discovery `mcp-plugin.json`) into one
 * {@link NormalizedManifest}, reporting every violation with its JSON
 * pointer and stable code.
 *
 * Check order (the GUM contract's, shared with the Installer): parse →
 * schema-version placement → Shape 2 gate → structure → namespace_owner
 * presence → credential descriptors → schema refs → strip-nulls safety. A
 * failed parse, schema version or shape gate stops there; the later checks
 * all run and all report. The error code of a failed validation is the code
 * of its first violation.
 */
export class ManifestValidator {
  /** Manifest file names looked for in a plugin directory, in order (what a CLI accepts as a manifest file). */
  static readonly fileNames: readonly string[] = MANIFEST_FILE_NAMES;

  /** The form of a parsed JSON manifest with no file name to go by (`open-discovery` or `gum-json`). */
  static formOf(doc: unknown): ManifestForm {
    return formFromJsonDocument(doc);
  }

  readonly #allowedShapes: readonly ManifestShape[];
  readonly #firstParty: boolean;
  readonly #limits: ParseLimits;
  readonly #resolveProfile: OutputProfileResolver | undefined;
  /** Whether the host knows a profile the manifest does not define; made once, not per manifest. */
  readonly #knownProfile: ((name: string) => boolean) | undefined;
  readonly #knownDigests: ReadonlyMap<string, string> | undefined;
  // Set only by create(), after the host's schema compiled; the bundled one otherwise.
  #openDiscoverySchema: CompiledSchema | undefined;

  /**
   * A validator with the bundled schemas. It cannot fail; a validator with
   * another Open Discovery schema comes from {@link ManifestValidator.create},
   * which reports a bad schema before any manifest is seen.
   */
  constructor(options: ManifestValidatorOptions = {}) {
    this.#allowedShapes = options.allowedShapes ?? PRESET_SHAPES[options.preset ?? 'neutral'];
    this.#firstParty = options.firstParty ?? false;
    this.#limits = {
      maxBytes: options.maxBytes ?? DEFAULT_PARSE_LIMITS.maxBytes,
      maxDepth: options.maxDepth ?? DEFAULT_PARSE_LIMITS.maxDepth,
    };
    this.#resolveProfile = options.resolveProfile;
    const resolve = options.resolveProfile;
    this.#knownProfile = resolve === undefined ? undefined : (name) => resolve(name) !== undefined;
    this.#knownDigests = options.knownSchemaDigests;
  }

  /**
   * A validator, with the Open Discovery schema given by path or as an
   * object compiled first. A missing, unreadable, non-draft-07 or
   * uncompilable schema fails with HOST_INVALID_OPTIONS before any manifest
   * is seen; without one this is `new ManifestValidator(options)`.
   */
  static create(options: ManifestValidatorCreateOptions = {}): ResultAsync<ManifestValidator, HostError> {
    const { openDiscoverySchemaPath, openDiscoverySchema, ...rest } = options;
    if (openDiscoverySchemaPath !== undefined && openDiscoverySchema !== undefined) {
      return errAsync(hostError('HOST_INVALID_OPTIONS', 'give openDiscoverySchemaPath or openDiscoverySchema, not both', { details: { option: 'openDiscoverySchema' } }));
    }
    const schema: ResultAsync<Readonly<Record<string, unknown>> | undefined, HostError> =
      openDiscoverySchemaPath === undefined ? okAsync(openDiscoverySchema) : readSchemaFile(openDiscoverySchemaPath);
    return schema.andThen((found) => {
      const validator = new ManifestValidator(rest);
      if (found === undefined) return ok(validator);
      return compileOpenDiscoverySchema(found).map((compiled) => {
        validator.#openDiscoverySchema = compiled;
        return validator;
      });
    });
  }

  #schemaFor(form: ManifestForm): CompiledSchema {
    return form === 'open-discovery' ? (this.#openDiscoverySchema ?? bundledValidator(form)) : bundledValidator(form);
  }

  /**
   * Runs the pure checks on a parsed document. Gating stages (parse, schema
   * version, shape) stop the run; the rest all report. Schema refs are
   * checked against the grammar only: bundles need files (see
   * {@link ManifestValidator.inspectFile}).
   */
  #pureViolations(doc: unknown, form: ManifestForm, schema: CompiledSchema, firstParty: boolean): Violation[] {
    const trust = { firstParty };
    for (const gate of [
      () => checkDocumentIsObject(doc, form),
      () => checkSchemaVersionPlacement(doc, form, trust),
      () => checkShapeGate(doc, form, { firstParty, allowedShapes: this.#allowedShapes }),
    ]) {
      const found = gate();
      if (found.length > 0) return found;
    }
    return [
      ...checkStructure(doc, form, schema),
      ...checkNamespaceOwnerPresence(doc, form, trust),
      ...checkGumContractRules(doc, form, trust),
      ...checkCredentialDescriptors(doc, form),
      ...checkAuthTaxonomy(doc, form),
      ...checkEgressDestinations(doc, form),
      ...checkClientRequestShape(doc, form),
      ...checkStripNullsSafety(doc, form, this.#resolveProfile),
      ...checkOutputProfiles(doc, form, this.#knownProfile),
    ];
  }

  #report(
    source: string,
    form: ManifestForm,
    doc: unknown,
    violations: Violation[],
    schemas: readonly ResolvedSchema[],
    hostChecks?: ValidateCallOptions['hostChecks'],
  ): ManifestReport {
    const structural = violations.some((v) => STRUCTURAL_STAGES.has(v.stage));
    const normalized = !structural && isRecord(doc) ? normalizeManifest(doc, form, schemas) : undefined;
    const host = normalized !== undefined && hostChecks !== undefined ? hostChecks(normalized) : [];
    const all = [...violations.filter((v) => !repeatsHostCheck(v, host)), ...host];
    const sorted = sortViolations(all);
    return { source, form, violations: sorted, manifest: sorted.length === 0 ? normalized : undefined };
  }

  /**
   * Every violation of an already parsed document (its schema refs checked
   * by grammar only). The document is first copied into ordinary objects,
   * with the key and depth checks parsed text gets.
   */
  inspectValue(doc: unknown, form: ManifestForm, call: Omit<ValidateCallOptions, 'form'> = {}): Result<ManifestReport, HostError> {
    const plain = plainValueOf(doc, this.#limits);
    if (plain.isErr()) return ok(this.#report(call.fileName ?? 'manifest', form, undefined, [...plain.error], []));
    try {
      return this.#inspectParsed(plain.value, form, call);
    } catch (cause) {
      // An ordinary-looking value is validated in place; a getter or proxy trap that throws on a later read lands here.
      return ok(this.#report(call.fileName ?? 'manifest', form, undefined, [...unreadableValue(cause)], []));
    }
  }

  #inspectParsed(doc: unknown, form: ManifestForm, call: Omit<ValidateCallOptions, 'form'>): Result<ManifestReport, HostError> {
    const source = call.fileName ?? 'manifest';
    const found = this.#pureViolations(doc, form, this.#schemaFor(form), call.firstParty ?? this.#firstParty);
    return ok(this.#report(source, form, doc, isGated(found) ? found : [...found, ...checkSchemaRefGrammar(doc, form)], [], call.hostChecks));
  }

  #parse(input: string | Uint8Array, call: ValidateCallOptions): { form: ManifestForm; parsed: Result<unknown, readonly Violation[]> } {
    const text = typeof input === 'string' ? ok(input) : decodeManifestBytes(input, this.#limits);
    const named = call.form ?? (call.fileName === undefined ? undefined : formFromFileName(call.fileName));
    if (text.isErr()) return { form: named ?? 'gum-json', parsed: err(text.error) };
    const syntax = named === 'gum-toml' || (named === undefined && !looksLikeJson(text.value)) ? 'toml' : 'json';
    const parsed = parseManifestText(text.value, syntax, this.#limits);
    const form = named ?? (syntax === 'toml' ? 'gum-toml' : formFromJsonDocument(parsed.unwrapOr(undefined)));
    return { form, parsed };
  }

  /** Every violation of a manifest text or file content (schema refs by grammar only). */
  inspectText(input: string | Uint8Array, call: ValidateCallOptions = {}): Result<ManifestReport, HostError> {
    const { form, parsed } = this.#parse(input, call);
    if (parsed.isErr()) return ok(this.#report(call.fileName ?? 'manifest', form, undefined, [...parsed.error], []));
    return this.#inspectParsed(parsed.value, form, call);
  }

  /**
   * Every violation of a manifest file, including the schema bundles its
   * tools reference (`schemas/<ref>.json` beside the manifest) and their
   * collisions with known digests. Fails only when the file cannot be read.
   */
  inspectFile(path: string, call: ValidateFileOptions = {}): ResultAsync<ManifestReport, HostError> {
    const fileCall: ValidateCallOptions = { ...call, fileName: path };
    const readBundle = call.readSchemaBundle ?? this.#bundleReader(dirname(path));
    return this.#readLimited(path).andThen((bytes) => {
      const { form, parsed } = this.#parse(bytes, fileCall);
      if (parsed.isErr()) return okAsync(this.#report(path, form, undefined, [...parsed.error], []));
      const doc = parsed.value;
      const found = this.#pureViolations(doc, form, this.#schemaFor(form), call.firstParty ?? this.#firstParty);
      if (isGated(found)) {
        return okAsync(this.#report(path, form, doc, found, []));
      }
      const refs = checkSchemaRefs(doc, form, {
        readBundle,
        ...(this.#knownDigests === undefined ? {} : { knownDigests: this.#knownDigests }),
      });
      return ResultAsync.fromSafePromise(refs).map((outcome) =>
        this.#report(path, form, doc, [...found, ...outcome.violations], outcome.schemas, call.hostChecks),
      );
    });
  }

  /** Validates a parsed document: the normalized manifest, or the HostError of its first violation. */
  validateValue(doc: unknown, form: ManifestForm, call: Omit<ValidateCallOptions, 'form'> = {}): Result<NormalizedManifest, HostError> {
    return this.inspectValue(doc, form, call).andThen(reportResult);
  }

  /** Validates a manifest text or file content. */
  validateText(input: string | Uint8Array, call: ValidateCallOptions = {}): Result<NormalizedManifest, HostError> {
    return this.inspectText(input, call).andThen(reportResult);
  }

  /** Validates a manifest file, its schema bundles included. */
  validateFile(path: string, call: ValidateFileOptions = {}): ResultAsync<NormalizedManifest, HostError> {
    return this.inspectFile(path, call).andThen(reportResult);
  }

  /** Finds the manifest in a plugin directory (PLUGIN_MANIFEST_AMBIGUOUS for two, as an install refuses them) and validates it. */
  validateDirectory(dir: string, call: ValidateFileOptions = {}): ResultAsync<NormalizedManifest, HostError> {
    return findManifest(dir).andThen((path) => this.validateFile(path, call));
  }

  #readLimited(path: string): ResultAsync<Uint8Array, HostError> {
    return ResultAsync.fromPromise(readAtMost(path, this.#limits.maxBytes), (cause) => fileError(path, cause));
  }

  #bundleReader(pluginDir: string): SchemaBundleReader {
    return async (ref) => {
      const path = join(pluginDir, 'schemas', `${ref}.json`);
      const bytes = await this.#readLimited(path);
      if (bytes.isErr()) {
        if (bytes.error.code === 'PLUGIN_MANIFEST_NOT_FOUND') return undefined;
        throw new Error(bytes.error.message);
      }
      const parsed = decodeManifestBytes(bytes.value, this.#limits).andThen((text) => parseJsonText(text, this.#limits));
      if (parsed.isErr()) throw new Error(parsed.error.map((v) => `${v.pointer || '(document)'} ${v.message}`).join('; '));
      return parsed.value;
    };
  }
}

/** Whether a gating stage failed, so later checks must not run. */
function isGated(found: readonly Violation[]): boolean {
  return found.some((v) => v.stage === 'parse' || v.stage === 'schema_version' || v.stage === 'shape');
}

function reportResult(report: ManifestReport): Result<NormalizedManifest, HostError> {
  if (hasViolations(report.violations)) return err(violationsError(report.source, report.violations));
  return report.manifest === undefined
    ? err(hostError('PLUGIN_MANIFEST_INVALID', `${report.source}: manifest is not an object`))
    : ok(report.manifest);
}

function fileError(path: string, cause: unknown): HostError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return hostError('PLUGIN_MANIFEST_NOT_FOUND', `${path} does not exist`, { cause });
  if (code === 'EISDIR') return hostError('PLUGIN_MANIFEST_INVALID', `${path} is a directory, not a manifest file`, { cause });
  return ioError('Reading', path, cause);
}

/**
 * The manifest file of a plugin directory: the one of
 * {@link MANIFEST_FILE_NAMES} that exists as a regular file;
 * PLUGIN_MANIFEST_AMBIGUOUS when it holds two a plugin could be read from,
 * as an install refuses them (`chooseManifest`), or PLUGIN_MANIFEST_NOT_FOUND.
 */
export function findManifest(dir: string): ResultAsync<string, HostError> {
  const search = async (): Promise<Result<string | undefined, HostError>> => {
    // Every name, not the first found: a second one beside it is what the install refuses.
    const regular = await Promise.all(MANIFEST_FILE_NAMES.map((name) => stat(join(dir, name)).then((info) => info.isFile(), () => false)));
    const chosen = await chooseManifest(dir, MANIFEST_FILE_NAMES.filter((_name, i) => regular[i]), 'package');
    return chosen.map((name) => (name === undefined ? undefined : join(dir, name)));
  };
  return new ResultAsync(search()).andThen((path) =>
    path === undefined
      ? errAsync(hostError('PLUGIN_MANIFEST_NOT_FOUND', `${dir} holds none of ${MANIFEST_FILE_NAMES.join(', ')}`))
      : okAsync(path),
  );
}
