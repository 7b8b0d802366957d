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
 * distinct schema text is compiled once, with the SDK's own Ajv settings;
 * what is validated does not change. Patterns run in the bounded engine of
 * untrustedPatterns.ts, not in V8's backtracking one on the host's thread.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { PatternBudgetExceeded, untrustedPatternEngine, withPatternBudget } from '../../manifest/untrustedPatterns.js';

/** Distinct schemas kept; past that the cache starts over (a plugin may list a new schema at every start). */
const MAX_SCHEMAS = 256;

/** The SDK's default Ajv settings, with patterns run by the bounded engine (a plugin writes both the schema and the data). */
function newCompiler(): AjvJsonSchemaValidator {
  const ajv = new Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: true, code: { regExp: untrustedPatternEngine } });
  formats.default(ajv);
  return new AjvJsonSchemaValidator(ajv);
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
  /** Whether `getValidator` would hand out a validator compiled before rather than compile (a schema with `$id` always compiles). */
  has(schema: JsonSchemaType): boolean;
}

class OutputSchemaCache implements SharedOutputSchemaValidators {
  #compiler: AjvJsonSchemaValidator | undefined;
  readonly #validators = new Map<string, JsonSchemaValidator<unknown>>();
  #compiled = 0;

  get compiledSchemas(): number {
    return this.#compiled;
  }

  has(schema: JsonSchemaType): boolean {
    const text = JSON.stringify(schema);
    return !text.includes('"$id"') && this.#validators.has(text);
  }

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const text = JSON.stringify(schema);
    // Ajv registers a schema's $id in its instance: schemas of different plugins that name the same $id must not
    // meet in one instance, so such a schema gets an instance of its own, as it did with the SDK's default.
    if (text.includes('"$id"')) {
      this.#compiled++;
      return bounded(newCompiler().getValidator<T>(schema));
    }
    let validator = this.#validators.get(text);
    if (validator === undefined) {
      // Ajv keeps every schema it compiled: a full cache starts over with a new instance, so that memory is freed too.
      if (this.#validators.size >= MAX_SCHEMAS) {
        this.#validators.clear();
        this.#compiler = undefined;
      }
      this.#compiler ??= newCompiler();
      validator = bounded(this.#compiler.getValidator<unknown>(schema));
      this.#compiled++;
      this.#validators.set(text, validator);
    }
    return validator as JsonSchemaValidator<T>;
  }
}

/** The output-schema validators every MCP connection of this process hands its SDK `Client`. */
export const outputSchemaValidators: SharedOutputSchemaValidators = new OutputSchemaCache();
