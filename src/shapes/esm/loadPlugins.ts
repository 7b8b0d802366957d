import { basename } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { err, errAsync, ok, ResultAsync, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import type { ManifestValidator } from '../../manifest/ManifestValidator.js';
import type { NormalizedManifest } from '../../manifest/model.js';
import { silentLogger, type Logger } from '../../ports/ports.js';
import { orderByDependencies } from './dependencyOrder.js';
import { DEFAULT_ESM_LOADER_FLAGS, type EsmLoaderFlags } from './EsmLoaderOptions.js';
import type { EsmFailedEntry, EsmLoadedEntry, EsmLoadSummary, EsmSkippedEntry } from './EsmLoadSummary.js';
import { EsmPlugin, pluginsOn, type EsmPluginContext } from './EsmPlugin.js';
import type { ResolvedEntry } from './entry.js';
import { esmManifestValidator, readEsmManifest } from './manifestFile.js';
import { DEFAULT_CREATE_PLUGIN_TIMEOUT_MS, preflightPlugin, zeroPhaseTimes, type PhaseTimes } from './preflight.js';
import type { EsmToolValidator } from './validateTools.js';

/** One plugin to load: its root, or its root with facts the host already has. */
export type EsmPluginSource =
  | string
  | {
      /** The plugin root (holds `mcp-plugin.json`). */
      readonly root: string;
      /** The manifest, already validated; read from the root when absent. */
      readonly manifest?: NormalizedManifest;
      /** Whether the installer verified the package signature (checked under `requireSignatures`). */
      readonly signatureVerified?: boolean;
      /**
       * The entry, already resolved and verified by the caller: the loader
       * imports exactly this path instead of resolving the manifest's entry
       * again (the ESM runner passes the pinned entry it serves from verified bytes).
       */
      readonly entry?: ResolvedEntry;
    };

/**
 * Options of in-process loading. `trust: 'in-process'` is required: it is the
 * host saying that these plugins may run inside its own process, with its
 * privileges and no sandbox. Untrusted plugins go through the runner
 * subprocess instead (see `esmRunnerCommand`).
 */
export interface EsmInProcessOptions extends Partial<EsmLoaderFlags> {
  /** The explicit opt-in to run plugin code in this process. */
  readonly trust: 'in-process';
  /** Time allowed for importing an entry plus its `createPlugin`. Default 30 s. */
  readonly createTimeoutMs?: number;
  /** Receives warnings always, and every step when `debugRegistry` is set. Default silent. */
  readonly logger?: Logger;
  /** A monotonic clock in ms, for timings. Default `performance.now`. */
  readonly now?: () => number;
  /**
   * The host's tool validation (the seed's ToolValidationManager), called
   * for each tool a plugin registers, on load and on every reload. Default none.
   */
  readonly validateTool?: EsmToolValidator;
}

/** What {@link loadPlugins} returns: the seed's summary and the plugins now registered. */
export interface EsmLoadReport {
  /** The structured summary. */
  readonly summary: EsmLoadSummary;
  /** The loaded plugins, in load order, for reload and unload. */
  readonly plugins: readonly EsmPlugin[];
}

interface Candidate {
  readonly root: string;
  readonly manifest: NormalizedManifest;
  readonly entry?: ResolvedEntry;
}

const rounded = (ms: number): number => Math.round(ms * 1000) / 1000;

function checkTrust(options: EsmInProcessOptions | undefined): Result<void, HostError> {
  if (options?.trust === 'in-process') return ok(undefined);
  return err(
    hostError('HOST_INVALID_OPTIONS', "in-process loading runs plugin code inside the host; pass { trust: 'in-process' } to allow it, or run the plugin through the ESM runner subprocess", {
      details: { option: 'trust' },
    }),
  );
}

function normalizeSource(source: EsmPluginSource): Exclude<EsmPluginSource, string> {
  return typeof source === 'string' ? { root: source } : source;
}

class LoadRun {
  readonly loaded: EsmLoadedEntry[] = [];
  readonly skipped: EsmSkippedEntry[] = [];
  readonly failed: EsmFailedEntry[] = [];
  readonly plugins: EsmPlugin[] = [];
  readonly times: PhaseTimes = zeroPhaseTimes();
  invalidTools = 0;

  constructor(
    readonly flags: EsmLoaderFlags,
    readonly logger: Logger,
    readonly now: () => number,
  ) {}

  debug(fields: Record<string, unknown>, message: string): void {
    if (this.flags.debugRegistry) this.logger.debug(fields, message);
  }

  fail(name: string, root: string, error: HostError): void {
    this.failed.push({ name, root, error });
    this.logger.warn({ plugin: name, root, code: error.code }, error.message);
  }

  summary(started: number): EsmLoadSummary {
    const sum = (key: 'tools' | 'resources' | 'prompts'): number => this.loaded.reduce((n, p) => n + p[key], 0);
    return {
      loaded: this.loaded,
      skipped: this.skipped,
      failed: this.failed,
      timings: {
        totalMs: rounded(this.now() - started),
        validationMs: rounded(this.times.validationMs),
        importMs: rounded(this.times.importMs),
        reconcileMs: rounded(this.times.reconcileMs),
        registerMs: rounded(this.times.registerMs),
      },
      stats: {
        toolsRegistered: sum('tools'),
        resourcesRegistered: sum('resources'),
        promptsRegistered: sum('prompts'),
        invalidTools: this.invalidTools,
        warnings: this.loaded.reduce((n, p) => n + p.warnings.length, 0),
      },
    };
  }
}

async function readCandidates(run: LoadRun, server: McpServer, sources: readonly Exclude<EsmPluginSource, string>[], validator: ManifestValidator): Promise<Candidate[]> {
  const candidates: Candidate[] = [];
  for (const source of sources) {
    const start = run.now();
    const manifest = source.manifest === undefined ? await readEsmManifest(source.root, validator) : ok(source.manifest);
    run.times.validationMs += run.now() - start;
    if (manifest.isErr()) {
      run.fail(basename(source.root), source.root, manifest.error);
      continue;
    }
    const id = manifest.value.plugin_id;
    if (run.flags.requireSignatures && source.signatureVerified !== true) {
      run.fail(id, source.root, hostError('PLUGIN_SIGNATURE_INVALID', `${id}: signatures are required and this plugin's package signature was not verified`, { details: { plugin: id, root: source.root } }));
      continue;
    }
    if (pluginsOn(server).has(id)) {
      run.skipped.push({ name: id, root: source.root, reason: 'already-loaded', message: `${id} is already loaded on this server` });
      continue;
    }
    if (candidates.some((c) => c.manifest.plugin_id === id)) {
      run.skipped.push({ name: id, root: source.root, reason: 'duplicate', message: `${id} appears more than once; the first one is loaded` });
      continue;
    }
    candidates.push({ root: source.root, manifest: manifest.value, ...(source.entry === undefined ? {} : { entry: source.entry }) });
  }
  return candidates;
}

async function loadInOrder(
  run: LoadRun,
  server: McpServer,
  candidates: readonly Candidate[],
  validator: ManifestValidator,
  createTimeoutMs: number,
  validateTool: EsmToolValidator | undefined,
): Promise<void> {
  const ordering = orderByDependencies(
    candidates.map((c) => ({ id: c.manifest.plugin_id, dependencies: c.manifest.dependencies })),
    new Set(pluginsOn(server).keys()),
  );
  const byId = new Map(candidates.map((c) => [c.manifest.plugin_id, c]));
  for (const [id, error] of ordering.failed) run.fail(id, byId.get(id)!.root, error);
  const settings = { strictCapabilities: run.flags.strictCapabilities, strictTools: run.flags.strictTools, createTimeoutMs, now: run.now, ...(validateTool === undefined ? {} : { validateTool }) };
  for (const id of ordering.order) {
    const { root, manifest, entry } = byId.get(id)!;
    const brokenDependency = manifest.dependencies.find((dep) => run.failed.some((f) => f.name === dep));
    if (brokenDependency !== undefined) {
      run.fail(id, root, hostError('PLUGIN_DEPENDENCY_MISSING', `${id} depends on ${brokenDependency}, which failed to load`, { details: { plugin: id, dependency: brokenDependency } }));
      continue;
    }
    run.debug({ plugin: id, root }, 'preflight');
    const outcome = await preflightPlugin(manifest, root, { ...settings, fresh: false }, run.times, entry);
    if (outcome.isErr()) {
      run.fail(id, root, outcome.error);
      continue;
    }
    const context: EsmPluginContext = { server, root, validator, settings };
    const registered = EsmPlugin.register(context, outcome.value, run.times);
    if (registered.isErr()) {
      run.fail(id, root, registered.error);
      continue;
    }
    const plugin = registered.value;
    for (const warning of plugin.warnings) run.logger.warn({ plugin: id }, warning);
    run.invalidTools += outcome.value.invalidTools.length;
    run.plugins.push(plugin);
    run.loaded.push({ name: id, version: plugin.version, root, ...plugin.counts, warnings: plugin.warnings });
    run.debug({ plugin: id, ...plugin.counts }, 'registered');
  }
}

/**
 * Loads Open Discovery ESM plugins into an McpServer in this process: for
 * each, validate `mcp-plugin.json`, order by dependencies, import the entry,
 * run `createPlugin` against a capture server, reconcile, validate tools,
 * and only then register on `server`. Per-plugin failures go to
 * `summary.failed` and never stop the others; the call itself fails only
 * for invalid options (no trust opt-in, an unusable SCHEMA_PATH).
 */
export function loadPlugins(server: McpServer, plugins: readonly EsmPluginSource[], options: EsmInProcessOptions): ResultAsync<EsmLoadReport, HostError> {
  const trusted = checkTrust(options);
  if (trusted.isErr()) return errAsync(trusted.error);
  const flags: EsmLoaderFlags = { ...DEFAULT_ESM_LOADER_FLAGS, ...definedFlags(options) };
  const run = new LoadRun(flags, options.logger ?? silentLogger, options.now ?? (() => performance.now()));
  const started = run.now();
  const sources = plugins.map(normalizeSource);
  if (!flags.manifestLoaderEnabled) {
    for (const source of sources) {
      run.skipped.push({ name: basename(source.root), root: source.root, reason: 'loader-disabled', message: 'the manifest loader is disabled (MANIFEST_LOADER_ENABLED=false)' });
    }
    return new ResultAsync(Promise.resolve(ok({ summary: run.summary(started), plugins: [] })));
  }
  return esmManifestValidator(flags.schemaPath).andThen((validator) =>
    ResultAsync.fromSafePromise(
      (async () => {
        const candidates = await readCandidates(run, server, sources, validator);
        await loadInOrder(run, server, candidates, validator, options.createTimeoutMs ?? DEFAULT_CREATE_PLUGIN_TIMEOUT_MS, options.validateTool);
        return { summary: run.summary(started), plugins: run.plugins };
      })(),
    ),
  );
}

function definedFlags(options: Partial<EsmLoaderFlags>): Partial<EsmLoaderFlags> {
  return Object.fromEntries(
    (Object.keys(DEFAULT_ESM_LOADER_FLAGS) as (keyof EsmLoaderFlags)[]).filter((key) => options[key] !== undefined).map((key) => [key, options[key]]),
  ) as Partial<EsmLoaderFlags>;
}

/**
 * Loads one plugin in this process (with the explicit trust option) and
 * returns it, or the HostError that kept it from loading. Its dependencies
 * must already be loaded on `server`.
 */
export function loadInProcess(server: McpServer, root: string, options: EsmInProcessOptions): ResultAsync<EsmPlugin, HostError> {
  return loadPlugins(server, [root], options).andThen(({ summary, plugins }) => {
    const [plugin] = plugins;
    if (plugin !== undefined) return ok(plugin);
    const failure = summary.failed[0];
    if (failure !== undefined) return err(failure.error);
    const skip = summary.skipped[0];
    return err(hostError(skip?.reason === 'already-loaded' ? 'PLUGIN_ALREADY_INSTALLED' : 'HOST_INVALID_OPTIONS', skip?.message ?? `${root} was not loaded`, { details: { root } }));
  });
}
