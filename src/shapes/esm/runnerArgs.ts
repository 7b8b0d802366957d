import { parseArgs } from 'node:util';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';

/** What the runner subprocess is told on its command line. */
export interface EsmRunnerSettings {
  /** The plugin root. */
  readonly root: string;
  /** STRICT_CAPABILITIES. */
  readonly strictCapabilities: boolean;
  /** STRICT_TOOLS. */
  readonly strictTools: boolean;
  /** SCHEMA_PATH. */
  readonly schemaPath?: string;
  /** Time allowed for import plus `createPlugin`, in ms. */
  readonly createTimeoutMs?: number;
  /** Hot reload inside the runner (the host sees `tools/list_changed`). */
  readonly watch: boolean;
  /** DEBUG_REGISTRY: log loader steps to stderr. */
  readonly debugRegistry: boolean;
}

/** The runner's arguments (after the runner script) for some settings. */
export function runnerArguments(settings: EsmRunnerSettings): string[] {
  const args: string[] = [];
  if (settings.strictCapabilities) args.push('--strict-capabilities');
  if (settings.strictTools) args.push('--strict-tools');
  if (settings.schemaPath !== undefined) args.push('--schema-path', settings.schemaPath);
  if (settings.createTimeoutMs !== undefined) args.push('--create-timeout-ms', String(settings.createTimeoutMs));
  if (settings.watch) args.push('--watch');
  if (settings.debugRegistry) args.push('--debug-registry');
  args.push('--', settings.root);
  return args;
}

/** Reads the runner's arguments back. */
export function parseRunnerArguments(args: readonly string[]): Result<EsmRunnerSettings, HostError> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      strict: true,
      options: {
        'strict-capabilities': { type: 'boolean', default: false },
        'strict-tools': { type: 'boolean', default: false },
        'schema-path': { type: 'string' },
        'create-timeout-ms': { type: 'string' },
        watch: { type: 'boolean', default: false },
        'debug-registry': { type: 'boolean', default: false },
      },
    });
  } catch (cause) {
    return err(hostError('HOST_INVALID_OPTIONS', `esm runner: ${cause instanceof Error ? cause.message : String(cause)}`, { cause }));
  }
  const { values, positionals } = parsed;
  const [root, ...extra] = positionals;
  if (root === undefined || extra.length > 0) return err(hostError('HOST_INVALID_OPTIONS', 'esm runner: expected exactly one plugin root'));
  const timeout = values['create-timeout-ms'] === undefined ? undefined : Number(values['create-timeout-ms']);
  if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0)) {
    return err(hostError('HOST_INVALID_OPTIONS', `esm runner: --create-timeout-ms must be a positive number`));
  }
  return ok({
    root,
    strictCapabilities: values['strict-capabilities'],
    strictTools: values['strict-tools'],
    ...(values['schema-path'] === undefined ? {} : { schemaPath: values['schema-path'] }),
    ...(timeout === undefined ? {} : { createTimeoutMs: timeout }),
    watch: values.watch,
    debugRegistry: values['debug-registry'],
  });
}
