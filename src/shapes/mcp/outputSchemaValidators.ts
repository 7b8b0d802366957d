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
 * what is validated and how does not change.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';

/** Distinct schemas kept; past that the cache starts over (a plugin may list a new schema at every start). */
const MAX_SCHEMAS = 256;

/** A {@link jsonSchemaValidator} that compiles each distinct output schema once per process. */
export interface SharedOutputSchemaValidators extends jsonSchemaValidator {
  /** Schemas compiled so far, for monitoring and tests. */
  readonly compiledSchemas: number;
}

class OutputSchemaCache implements SharedOutputSchemaValidators {
  #compiler: AjvJsonSchemaValidator | undefined;
  readonly #validators = new Map<string, JsonSchemaValidator<unknown>>();
  #compiled = 0;

  get compiledSchemas(): number {
    return this.#compiled;
  }

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const text = JSON.stringify(schema);
    // Ajv registers a schema's $id in its instance: schemas of different plugins that name the same $id must not
    // meet in one instance, so such a schema gets an instance of its own, as it did with the SDK's default.
    if (text.includes('"$id"')) {
      this.#compiled++;
      return new AjvJsonSchemaValidator().getValidator<T>(schema);
    }
    let validator = this.#validators.get(text);
    if (validator === undefined) {
      // Ajv keeps every schema it compiled: a full cache starts over with a new instance, so that memory is freed too.
      if (this.#validators.size >= MAX_SCHEMAS) {
        this.#validators.clear();
        this.#compiler = undefined;
      }
      this.#compiler ??= new AjvJsonSchemaValidator();
      validator = this.#compiler.getValidator<unknown>(schema);
      this.#compiled++;
      this.#validators.set(text, validator);
    }
    return validator as JsonSchemaValidator<T>;
  }
}

/** The output-schema validators every MCP connection of this process hands its SDK `Client`. */
export const outputSchemaValidators: SharedOutputSchemaValidators = new OutputSchemaCache();
