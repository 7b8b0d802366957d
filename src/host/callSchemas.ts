/**
 * A variant's request and response schemas applied at call time: the
 * arguments are checked before the call reaches its plugin (no process is
 * started for arguments that break the schema), a successful result after.
 * Schemas come from the profile's schema store by the digest the catalog
 * records, and each digest is compiled once per host.
 */
import { readFileSync } from 'node:fs';
import type { CallerIdentity } from '../audit/auditRecord.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { CatalogVariant } from '../catalog/catalogTypes.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { HostEvents } from '../events/HostEvents.js';
import { answerLargerThan, OFF_THREAD_VALIDATION_BYTES, unfinishedValidation, validateOffThread } from '../manifest/answerValidation.js';
import { jcsDigest } from '../manifest/schemaRefs.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { withLinearKeywords } from '../manifest/linearKeywords.js';
import { schemaLimitProblem } from '../manifest/schemaLimits.js';
import type { CompiledSchema } from '../manifest/schemas.js';
import { PatternBudgetExceeded, untrustedPatternEngine, withPatternBudget } from '../manifest/untrustedPatterns.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';
import type { CallResult } from '../shapes/PluginSession.js';
import { fairShareKey } from './hostConfig.js';
import { closedError } from './hostCatalog.js';

/** Which of a variant's two schemas. */
type SchemaSide = 'request' | 'response';

/** A variant's schema reference and digest for each side, where it has one. */
type SchemaRefs = Readonly<Record<SchemaSide, readonly [ref: string, digest: string] | undefined>>;

/** The variant of `plugin` for `tool`: a loop, not `find`, which would make a closure per call. */
function variantOf(plugin: InstalledPlugin, tool: string): CatalogVariant | undefined {
  for (const variant of plugin.variants) if (variant.tool_name === tool) return variant;
  return undefined;
}

/** The first schema error, as a JSON pointer into the checked value and a sentence. */
interface SchemaFailure {
  readonly pointer: string;
  readonly message: string;
}

/** What ends the wait for a large result's validation: the caller's signal and the host's closing. */
export interface CallSignals {
  readonly caller?: AbortSignal | undefined;
  readonly host?: AbortSignal | undefined;
}

/** Checks calls against the schemas their variants reference. */
export class CallSchemas {
  readonly #layout: ProfileLayout;
  /**
   * Each digest's compiled schema, or the error that refused it for good: a
   * schema over the bounds, or one Ajv does not compile, is refused at every
   * later call without reading, hashing, measuring or compiling it again (a
   * refused schema cost all of that at each call). A file that cannot be
   * read or does not match its digest is not remembered: it may be repaired.
   */
  readonly #compiled = new Map<string, CompiledSchema | HostError>();
  /** The JSON text of each compiled schema, by the compiled function: what a validation worker compiles for a large answer. */
  readonly #texts = new WeakMap<CompiledSchema, string>();
  readonly #events: HostEvents | undefined;
  /** Per catalog variant (snapshots are read-only and replaced whole on a change, so a variant object never changes). */
  readonly #refs = new WeakMap<CatalogVariant, SchemaRefs>();
  // An instance of its own: plugin schemas may reuse one another's $id, which the manifest validator's shared instance refuses.
  readonly #ajv: Ajv2020;

  constructor(layout: ProfileLayout, events?: HostEvents) {
    this.#layout = layout;
    this.#events = events;
    this.#ajv = new Ajv2020({ strict: false, addUsedSchema: false, code: { regExp: untrustedPatternEngine } });
    // uniqueItems, enum and format url in linear time: a gateway caller's arguments can be as large as the HTTP body cap.
    withLinearKeywords(this.#ajv);
  }

  /**
   * INVALID_ARGS when `args` break the request schema of `tool`'s variant;
   * `undefined` when they pass or it has none. Its backtracking matches are
   * charged to the plugin and `caller`, who sent the arguments.
   */
  checkArguments(plugin: InstalledPlugin, tool: string, args: unknown, caller: CallerIdentity | undefined): HostError | undefined {
    const check = this.#schemaOf(plugin, tool, 'request');
    if (check === undefined) return undefined;
    if (typeof check !== 'function') return check;
    const failure = firstFailure(check, args, plugin.plugin_id, caller === undefined ? undefined : fairShareKey(caller));
    if (failure === undefined) return undefined;
    return hostError('INVALID_ARGS', `the arguments of '${tool}' do not match its request schema at '${failure.pointer}': ${failure.message}`, {
      details: { tool, pointer: failure.pointer, schema_error: failure.message },
    });
  }

  /**
   * PLUGIN_RESPONSE_SCHEMA_VIOLATION when a successful result breaks the
   * response schema of `tool`'s variant. The checked body is an MCP result's
   * `structuredContent`, else the JSON of its one text block; another
   * protocol's result value as it is. Error results are not checked. A body
   * over offThreadValidationBytes is checked on a validation worker
   * (answerValidation.ts), so the answer is a promise then; a small one is
   * checked here, as before.
   */
  checkResult(plugin: InstalledPlugin, tool: string, result: CallResult, signals?: CallSignals): HostError | undefined | Promise<HostError | undefined> {
    if (result.isError) return undefined;
    const check = this.#schemaOf(plugin, tool, 'response');
    if (check === undefined) return undefined;
    if (typeof check !== 'function') return check;
    const body = result.shape === 'mcp-plugin' || result.shape === 'esm-module' ? mcpResponseBody(result.value) : { found: true as const, value: result.value };
    const text = this.#texts.get(check);
    if (body.found && text !== undefined && answerLargerThan(body.value, OFF_THREAD_VALIDATION_BYTES)) return this.#checkOffThread(plugin.plugin_id, tool, text, body.value, signals);
    const failure = body.found ? firstFailure(check, body.value, plugin.plugin_id) : { pointer: '', message: 'the result carries no JSON body (no structuredContent and no single JSON text block)' };
    return failure === undefined ? undefined : responseViolation(tool, failure);
  }

  /** {@link checkResult} of a large body on a validation worker, said in `answer:validation` events; only `valid` passes. */
  async #checkOffThread(pluginId: string, tool: string, text: string, value: unknown, signals: CallSignals | undefined): Promise<HostError | undefined> {
    const events = this.#events;
    if (events?.wants('answer:validation') === true) events.emit('answer:validation', { plugin_id: pluginId, tool, schema: 'response', phase: 'start' });
    const verdict = await validateOffThread({ dialect: 'response', schemaText: text, value, owner: pluginId, signals: [signals?.caller, signals?.host] });
    if (events?.wants('answer:validation') === true) {
      events.emit('answer:validation', { plugin_id: pluginId, tool, schema: 'response', phase: 'end', outcome: verdict.kind, duration_ms: Math.round(verdict.durationMs) });
    }
    if (verdict.kind === 'valid') return undefined;
    if (verdict.kind === 'invalid') return responseViolation(tool, verdict);
    // The call's usual outcome of an abort or a close, never the unchecked answer; the caller's abort wins if both happened.
    if (verdict.kind === 'cancelled') {
      return signals?.caller?.aborted === true
        ? hostError('PLUGIN_CANCELLED', `call to ${tool} was cancelled by its caller while its result was being checked`, { details: { tool, phase: 'validation' } })
        : closedError();
    }
    return unfinishedValidation(verdict, 'PLUGIN_RESPONSE_SCHEMA_VIOLATION', tool, 'response');
  }

  /**
   * The schema references of `variant` by side, found once per variant of a
   * snapshot: every call asks for both sides, and the search made an entry
   * array per reference and a suffix string per ask.
   */
  #refsOf(variant: CatalogVariant): SchemaRefs {
    let refs = this.#refs.get(variant);
    if (refs === undefined) {
      const entries = Object.entries(variant.schema_hashes);
      refs = { request: entries.find(([ref]) => ref.endsWith('.request')), response: entries.find(([ref]) => ref.endsWith('.response')) };
      this.#refs.set(variant, refs);
    }
    return refs;
  }

  /** The compiled schema of one side, `undefined` when the variant has none, or the error that kept it from loading. */
  #schemaOf(plugin: InstalledPlugin, tool: string, side: SchemaSide): CompiledSchema | HostError | undefined {
    const variant = variantOf(plugin, tool);
    if (variant === undefined) return undefined;
    const entry = this.#refsOf(variant)[side];
    if (entry === undefined) return undefined;
    const [ref, digest] = entry;
    const cached = this.#compiled.get(digest);
    if (cached !== undefined) return cached;
    const path = this.#layout.schemaFile(ref, digest);
    let schema: unknown;
    try {
      schema = JSON.parse(readFileSync(path, 'utf8'));
    } catch (cause) {
      return storeError(ref, `cannot be read from ${path}`, cause);
    }
    if (jcsDigest(schema) !== digest) return storeError(ref, `at ${path} does not have the digest the catalog records`);
    // Validation refused such a schema at install; checked again because the compile below holds the host's shared
    // thread, and a lock or schema store edited since install never passed validation.
    const tooBig = schemaLimitProblem(schema);
    if (tooBig !== undefined) return this.#refuse(digest, storeError(ref, `at ${path} ${tooBig}`));
    try {
      const compiled = this.#ajv.compile<unknown>(schema as object);
      this.#compiled.set(digest, compiled);
      this.#texts.set(compiled, JSON.stringify(schema));
      return compiled;
    } catch (cause) {
      return this.#refuse(digest, storeError(ref, 'does not compile', cause));
    }
  }

  /** Remembers the verdict on a schema's content (its digest matched): it does not change while the host runs. */
  #refuse(digest: string, error: HostError): HostError {
    this.#compiled.set(digest, error);
    return error;
  }
}

function responseViolation(tool: string, failure: SchemaFailure): HostError {
  return hostError('PLUGIN_RESPONSE_SCHEMA_VIOLATION', `the result of '${tool}' does not match its response schema at '${failure.pointer}': ${failure.message}`, {
    details: { tool, pointer: failure.pointer, schema_error: failure.message },
  });
}

function storeError(ref: string, problem: string, cause?: unknown): HostError {
  return hostError('PLUGIN_SCHEMA_REF_INVALID', `schema '${ref}' ${problem}`, { details: { ref }, ...(cause === undefined ? {} : { cause }) });
}

function firstFailure(check: CompiledSchema, value: unknown, pluginId: string, caller?: string): SchemaFailure | undefined {
  let valid: boolean;
  try {
    valid = withPatternBudget(() => check(value), pluginId, caller);
  } catch (cause) {
    if (cause instanceof PatternBudgetExceeded) return { pointer: '', message: cause.message };
    throw cause;
  }
  if (valid) return undefined;
  const first = check.errors?.[0];
  return { pointer: first?.instancePath ?? '', message: first?.message ?? 'does not match' };
}

function mcpResponseBody(record: { readonly structuredContent?: unknown; readonly content?: unknown }): { found: true; value: unknown } | { found: false } {
  if (record.structuredContent !== undefined) return { found: true, value: record.structuredContent };
  const content = record.content;
  if (Array.isArray(content) && content.length === 1) {
    const block = content[0] as { type?: unknown; text?: unknown } | undefined;
    if (block?.type === 'text' && typeof block.text === 'string') {
      try {
        return { found: true, value: JSON.parse(block.text) };
      } catch {
        return { found: false };
      }
    }
  }
  return { found: false };
}
