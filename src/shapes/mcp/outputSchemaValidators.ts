/**
 * The validators of MCP tools' output schemas, shared by every connection
 * of the process.
 *
 * The SDK `Client` validates each `structuredContent` against its tool's
 * output schema, and compiles those schemas at every `tools/list`, in an
 * Ajv instance of its own per `Client`. The host makes a `Client` for every
 * process it starts, so a plugin started again (after a crash or an idle
 * stop, or by another host in the same process) paid a new Ajv instance and
 * a compile per schema, 1–3 ms, on its cold path each time. Here each
 * distinct schema text is compiled once, with the SDK's own Ajv settings
 * but `allErrors` (the first violation is reported, not all of them);
 * what is valid does not change. Patterns run in the bounded engine of
 * untrustedPatterns.ts, not in V8's backtracking one on the host's thread.
 *
 * The cache is bounded in entries and in bytes of schema text
 * (maxSchemaCacheEntries, maxSchemaCacheBytes in etc/plugin-answers.json):
 * past either the least recently used schema is let go, and removed from the
 * Ajv instance too, which otherwise keeps every schema it compiled. A schema
 * that does not compile is remembered as such (by its text's SHA-256), so a
 * plugin listing it again at every start does not make the host compile it
 * again: Ajv can spend a long time on a schema before it throws.
 */
import { createHash } from 'node:crypto';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { Ajv } from 'ajv';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { withLinearKeywords } from '../../manifest/linearKeywords.js';
import { PatternBudgetExceeded, untrustedPatternEngine, withPatternBudget } from '../../manifest/untrustedPatterns.js';

/** Distinct schemas kept (a plugin may list a new schema at every start). */
const MAX_ENTRIES = pluginAnswerLimits.maxSchemaCacheEntries;
/** Bytes of schema text kept: compiled code grows with it, so a count alone let 256 large schemas stay. */
const MAX_BYTES = pluginAnswerLimits.maxSchemaCacheBytes;

/**
 * The SDK's default Ajv settings, with patterns run by the bounded engine (a plugin writes both the schema and the data),
 * and without `allErrors`: with it one failing keyword made one error object per element of the answer (a `required`
 * of 4,000 names under `items` and a 4 KB answer of `{}`s made 4 million, 12 s and ~1 GB; 48 KB ran the host out of
 * heap). Validation stops at the first violation, which is the one the error text names. `uniqueItems`, `enum` and
 * `format: url` are checked in linear time (linearKeywords.ts).
 */
function newAjv(): Ajv {
  const ajv = new Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: false, code: { regExp: untrustedPatternEngine } });
  return withLinearKeywords(ajv);
}

/** `validate` with its own budget of backtracking matches; a cut match is the content's schema failure. */
function bounded<T>(validate: JsonSchemaValidator<T>): JsonSchemaValidator<T> {
  return (input) => {
    try {
      return withPatternBudget(() => validate(input));
    } catch (cause) {
      if (cause instanceof PatternBudgetExceeded) return { valid: false, data: undefined, errorMessage: cause.message };
      throw cause;
    }
  };
}

/** A {@link jsonSchemaValidator} that compiles each distinct output schema once per process. */
export interface SharedOutputSchemaValidators extends jsonSchemaValidator {
  /** Schemas compiled so far, for monitoring and tests. */
  readonly compiledSchemas: number;
  /** Compiles started so far, those that threw included, for monitoring and tests. */
  readonly compileAttempts: number;
  /** Schemas held now, and the bytes of their JSON text (within maxSchemaCacheEntries and maxSchemaCacheBytes). */
  readonly cached: { readonly schemas: number; readonly bytes: number };
  /** Whether `getValidator` would hand out a validator compiled before rather than compile (a schema with `$id` always compiles). */
  has(schema: JsonSchemaType): boolean;
  /** {@link has} for a schema whose JSON text the caller already made. */
  hasText(text: string): boolean;
  /** `getValidator` for a schema whose JSON text the caller already made (the text is the cache key). */
  validatorFor<T>(schema: JsonSchemaType, text: string): JsonSchemaValidator<T>;
}

interface Entry {
  readonly validator: JsonSchemaValidator<unknown>;
  /** The object Ajv compiled: its own cache is keyed on it, so letting the entry go removes it there. */
  readonly schema: JsonSchemaType;
  readonly bytes: number;
}

/** Thrown for a schema remembered as not compiling, with the error it threw the first time. */
class RememberedCompileError extends Error {}

class OutputSchemaCache implements SharedOutputSchemaValidators {
  #ajv: Ajv | undefined;
  #compiler: AjvJsonSchemaValidator | undefined;
  /** Least recently used first (a Map keeps insertion order; a hit is moved to the end). */
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  /** SHA-256 of schema texts that threw at compile, with the message; least recently added first, at most MAX_ENTRIES. */
  readonly #uncompilable = new Map<string, string>();
  #compiled = 0;
  #attempts = 0;

  get compiledSchemas(): number {
    return this.#compiled;
  }

  get compileAttempts(): number {
    return this.#attempts;
  }

  get cached(): { readonly schemas: number; readonly bytes: number } {
    return { schemas: this.#entries.size, bytes: this.#bytes };
  }

  has(schema: JsonSchemaType): boolean {
    return this.hasText(JSON.stringify(schema));
  }

  hasText(text: string): boolean {
    return !text.includes('"$id"') && this.#entries.has(text);
  }

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    return this.validatorFor<T>(schema, JSON.stringify(schema));
  }

  validatorFor<T>(schema: JsonSchemaType, text: string): JsonSchemaValidator<T> {
    const hit = this.#entries.get(text);
    if (hit !== undefined && !text.includes('"$id"')) {
      this.#entries.delete(text);
      this.#entries.set(text, hit);
      return hit.validator as JsonSchemaValidator<T>;
    }
    const digest = createHash('sha256').update(text).digest('hex');
    const refused = this.#uncompilable.get(digest);
    if (refused !== undefined) throw new RememberedCompileError(refused);
    this.#attempts++;
    let validator: JsonSchemaValidator<unknown>;
    try {
      // Ajv registers a schema's $id in its instance: schemas of different plugins that name the same $id must not
      // meet in one instance, so such a schema gets an instance of its own, as it did with the SDK's default.
      if (text.includes('"$id"')) validator = bounded(new AjvJsonSchemaValidator(newAjv()).getValidator<unknown>(schema));
      else {
        this.#ajv ??= newAjv();
        this.#compiler ??= new AjvJsonSchemaValidator(this.#ajv);
        validator = bounded(this.#compiler.getValidator<unknown>(schema));
      }
    } catch (cause) {
      const message = cause instanceof Error ? cause.message : String(cause);
      if (this.#uncompilable.size >= MAX_ENTRIES) this.#uncompilable.delete(this.#uncompilable.keys().next().value!);
      this.#uncompilable.set(digest, message);
      // Ajv registers the schema before it compiles it; the failed one must not stay in the shared instance.
      if (!text.includes('"$id"')) this.#ajv?.removeSchema(schema as object);
      throw cause;
    }
    this.#compiled++;
    if (!text.includes('"$id"')) this.#keep(text, { validator, schema, bytes: Buffer.byteLength(text) });
    return validator as JsonSchemaValidator<T>;
  }

  #keep(text: string, entry: Entry): void {
    this.#entries.set(text, entry);
    this.#bytes += entry.bytes;
    while (this.#entries.size > MAX_ENTRIES || (this.#bytes > MAX_BYTES && this.#entries.size > 1)) {
      const [oldest, gone] = this.#entries.entries().next().value!;
      this.#entries.delete(oldest);
      this.#bytes -= gone.bytes;
      // A connection that still holds the validator keeps using it: the compiled function does not need Ajv's copy.
      this.#ajv?.removeSchema(gone.schema as object);
    }
  }
}

/** The output-schema validators every MCP connection of this process hands its SDK `Client`. */
export const outputSchemaValidators: SharedOutputSchemaValidators = new OutputSchemaCache();
