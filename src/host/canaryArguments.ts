/**
 * A live canary's arguments checked against the input schema the plugin
 * itself lists for the canary tool, before the call. A plugin that does not
 * validate its own arguments would otherwise answer whatever it is sent,
 * and a canary run with arguments its tool refuses to describe would report
 * a pass that proves nothing.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { withLinearKeywords } from '../manifest/linearKeywords.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { CompiledSchema } from '../manifest/schemas.js';
import { PatternBudgetExceeded, untrustedPatternEngine, withPatternBudget } from '../manifest/untrustedPatterns.js';
import type { ToolDescriptor } from '../shapes/PluginSession.js';

/** Compiles tools' input schemas (each one the plugin lists, draft 2020-12 rules, `$schema` ignored). */
export class CanaryArgumentCheck {
  // Its own instance: plugin schemas may reuse one another's $id.
  readonly #ajv = new Ajv2020({ strict: false, addUsedSchema: false, code: { regExp: untrustedPatternEngine } });

  constructor() {
    withLinearKeywords(this.#ajv);
  }

  /**
   * INVALID_ARGS (with `details.pointer`) when `args` break the input schema
   * `tools` gives `tool`; undefined when they fit, or when the plugin lists
   * no schema for it. A schema that does not compile is reported as
   * `unusable` (the caller logs it) and checks nothing. Its backtracking
   * matches count against `pluginId`'s budget (untrustedPatterns.ts).
   */
  check(pluginId: string, tools: readonly ToolDescriptor[], tool: string, args: unknown): { readonly refused?: HostError; readonly unusable?: string } {
    const schema = tools.find((t) => t.name === tool)?.inputSchema;
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return {};
    const { $schema: _dialect, ...body } = schema as Record<string, unknown>;
    let validate: CompiledSchema;
    try {
      validate = this.#ajv.compile(body);
    } catch (cause) {
      return { unusable: cause instanceof Error ? cause.message : String(cause) };
    }
    let pointer: string;
    let message: string;
    try {
      if (withPatternBudget(() => validate(args), pluginId)) return {};
      pointer = validate.errors?.[0]?.instancePath ?? '';
      message = validate.errors?.[0]?.message ?? 'does not match';
    } catch (cause) {
      if (!(cause instanceof PatternBudgetExceeded)) throw cause;
      pointer = '';
      message = cause.message;
    }
    return {
      refused: hostError('INVALID_ARGS', `the canary arguments of '${tool}' do not match its input schema at '${pointer}': ${message}`, {
        details: { tool, pointer, schema_error: message },
      }),
    };
  }
}
