import { parseArgs } from 'node:util';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import { isSha256Hex } from '../../binding/sha256.js';

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
  /** The pinned entry, served from verified bytes instead of read from the plugin root. */
  readonly verifiedEntry?: EsmRunnerVerifiedEntry;
  /**
   * The inherited descriptor holding this start's report seal (see
   * `runnerReportSeal`): read only to seal a report made before any plugin
   * code runs, otherwise closed unread before the plugin is imported.
   */
  readonly reportFd?: number;
}

/** Where the runner finds the entry bytes the host verified, and what it checks them against. */
export interface EsmRunnerVerifiedEntry {
  /** The pinned entry, relative to the plugin root, `/`-separated; the manifest's `entry` must name it. */
  readonly path: string;
  /** The pinned SHA-256 (hex) the bytes must still have. */
  readonly sha256: string;
  /** The inherited descriptor holding the verified bytes. */
  readonly fd: number;
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
  const entry = settings.verifiedEntry;
  if (entry !== undefined) args.push('--entry', entry.path, '--entry-sha256', entry.sha256, '--entry-fd', String(entry.fd));
  if (settings.reportFd !== undefined) args.push('--report-fd', String(settings.reportFd));
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
        entry: { type: 'string' },
        'entry-sha256': { type: 'string' },
        'entry-fd': { type: 'string' },
        'report-fd': { type: 'string' },
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
  const reportFd = values['report-fd'] === undefined ? undefined : Number(values['report-fd']);
  if (reportFd !== undefined && !(Number.isInteger(reportFd) && reportFd >= 3)) {
    return err(hostError('HOST_INVALID_OPTIONS', 'esm runner: --report-fd must be a descriptor of 3 or more'));
  }
  const verifiedEntry = parseVerifiedEntry(values.entry, values['entry-sha256'], values['entry-fd']);
  if (verifiedEntry.isErr()) return err(verifiedEntry.error);
  if (verifiedEntry.value !== undefined && values.watch) {
    return err(hostError('HOST_INVALID_OPTIONS', 'esm runner: --watch reloads the entry from disk and cannot be combined with a verified --entry'));
  }
  return ok({
    root,
    strictCapabilities: values['strict-capabilities'],
    strictTools: values['strict-tools'],
    ...(values['schema-path'] === undefined ? {} : { schemaPath: values['schema-path'] }),
    ...(timeout === undefined ? {} : { createTimeoutMs: timeout }),
    watch: values.watch,
    debugRegistry: values['debug-registry'],
    ...(verifiedEntry.value === undefined ? {} : { verifiedEntry: verifiedEntry.value }),
    ...(reportFd === undefined ? {} : { reportFd }),
  });
}

function parseVerifiedEntry(path: string | undefined, sha256: string | undefined, fd: string | undefined): Result<EsmRunnerVerifiedEntry | undefined, HostError> {
  if (path === undefined && sha256 === undefined && fd === undefined) return ok(undefined);
  const descriptor = Number(fd);
  if (path === undefined || path === '' || sha256 === undefined || !isSha256Hex(sha256) || !Number.isInteger(descriptor) || descriptor < 3) {
    return err(hostError('HOST_INVALID_OPTIONS', 'esm runner: --entry, --entry-sha256 (hex) and --entry-fd (3 or more) go together'));
  }
  return ok({ path, sha256, fd: descriptor });
}
