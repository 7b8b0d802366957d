import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import type { ManifestValidator } from '../../manifest/ManifestValidator.js';
import type { NormalizedManifest } from '../../manifest/model.js';
import { esmManifestPath, readEsmManifest } from './manifestFile.js';
import { preflightPlugin, zeroPhaseTimes, type PhaseTimes, type PreflightOutcome, type PreflightSettings } from './preflight.js';
import { countRegistrations, removeRegistrations, replayRegistrations, type LiveRegistration, type RegistrationCounts } from './replay.js';

/** What a successful reload changed. */
export interface EsmReloadResult {
  /** The version now running. */
  readonly version: string;
  /** What it registers. */
  readonly counts: RegistrationCounts;
  /** Its warnings. */
  readonly warnings: readonly string[];
  /** Time per phase. */
  readonly timings: Readonly<PhaseTimes>;
}

/** Which plugins each server holds, so dependencies and repeated loads can be answered. */
const loadedByServer = new WeakMap<McpServer, Map<string, EsmPlugin>>();

/** The plugins loaded on a server, by id. */
export function pluginsOn(server: McpServer): ReadonlyMap<string, EsmPlugin> {
  return loadedByServer.get(server) ?? new Map();
}

/** What an {@link EsmPlugin} needs to reload itself. */
export interface EsmPluginContext {
  /** The server its registrations live on. */
  readonly server: McpServer;
  /** The plugin root as given. */
  readonly root: string;
  /** Validates `mcp-plugin.json` on reload. */
  readonly validator: ManifestValidator;
  /** Strict modes, timeouts and the clock. */
  readonly settings: Omit<PreflightSettings, 'fresh'>;
}

/**
 * An ESM plugin registered in-process on an McpServer. It can be reloaded
 * (revalidate, preflight a fresh import, swap registrations, keeping the
 * last good version when anything fails) and unloaded (every registration
 * removed).
 */
export class EsmPlugin {
  readonly #context: EsmPluginContext;
  #current: PreflightOutcome;
  #live: LiveRegistration[];
  #unloaded = false;
  #reloads: Promise<unknown> = Promise.resolve();

  private constructor(context: EsmPluginContext, outcome: PreflightOutcome, live: LiveRegistration[]) {
    this.#context = context;
    this.#current = outcome;
    this.#live = live;
  }

  /**
   * Registers a plugin that passed its preflight; fails with
   * PLUGIN_NAMESPACE_CONFLICT, registering nothing, if the server refuses a name.
   * Only the loader calls it, so it stays out of the published types.
   *
   * @internal
   */
  static register(context: EsmPluginContext, outcome: PreflightOutcome, times: PhaseTimes): Result<EsmPlugin, HostError> {
    const start = context.settings.now();
    const replayed = replayRegistrations(context.server, outcome.manifest.plugin_id, outcome.registrations);
    times.registerMs += context.settings.now() - start;
    return replayed.map((live) => {
      const plugin = new EsmPlugin(context, outcome, live);
      let ledger = loadedByServer.get(context.server);
      if (ledger === undefined) loadedByServer.set(context.server, (ledger = new Map()));
      ledger.set(plugin.id, plugin);
      return plugin;
    });
  }

  /** Plugin id. */
  get id(): string {
    return this.#current.manifest.plugin_id;
  }

  /** The version running now. */
  get version(): string {
    return this.#current.manifest.version;
  }

  /** The manifest of the version running now. */
  get manifest(): NormalizedManifest {
    return this.#current.manifest;
  }

  /** The plugin root as given. */
  get root(): string {
    return this.#context.root;
  }

  /** The entry file running now, links resolved. */
  get entryPath(): string {
    return this.#current.entry.path;
  }

  /** The manifest file. */
  get manifestPath(): string {
    return esmManifestPath(this.#context.root);
  }

  /** What the running version registers. */
  get counts(): RegistrationCounts {
    return countRegistrations(this.#live.map((l) => l.registration));
  }

  /** Warnings of the running version. */
  get warnings(): readonly string[] {
    return this.#current.warnings;
  }

  /** Whether {@link EsmPlugin.unload} ran. */
  get unloaded(): boolean {
    return this.#unloaded;
  }

  /**
   * Revalidates the manifest, preflights a fresh import of the entry, then
   * swaps the registrations. Any failure, including a refused registration,
   * leaves the last good version registered and returns why. Reloads run
   * one at a time, in call order.
   */
  reload(): ResultAsync<EsmReloadResult, HostError> {
    const next = this.#reloads.then(() => this.#reloadNow());
    this.#reloads = next;
    return new ResultAsync(next);
  }

  async #reloadNow(): Promise<Result<EsmReloadResult, HostError>> {
    if (this.#unloaded) return err(hostError('PLUGIN_NOT_FOUND', `${this.id} was unloaded`, { details: { plugin: this.id } }));
    const { server, root, validator, settings } = this.#context;
    const times = zeroPhaseTimes();
    const validationStart = settings.now();
    return await readEsmManifest(root, validator)
      .map((manifest) => {
        times.validationMs += settings.now() - validationStart;
        return manifest;
      })
      .andThen((manifest) => preflightPlugin(manifest, root, { ...settings, fresh: true }, times))
      .andThen((outcome) => {
        if (this.#unloaded) return err(hostError('PLUGIN_NOT_FOUND', `${this.id} was unloaded during the reload`, { details: { plugin: this.id } }));
        if (outcome.manifest.plugin_id !== this.id) {
          return err(hostError('PLUGIN_MANIFEST_INVALID', `the reloaded manifest renames ${this.id} to ${outcome.manifest.plugin_id}; reinstall instead`, { details: { plugin: this.id } }));
        }
        const start = settings.now();
        removeRegistrations(this.#live);
        const replayed = replayRegistrations(server, this.id, outcome.registrations);
        if (replayed.isErr()) {
          // The previous registrations were accepted before; putting them back cannot collide.
          this.#live = replayRegistrations(server, this.id, this.#current.registrations).unwrapOr([]);
          times.registerMs += settings.now() - start;
          return err(replayed.error);
        }
        times.registerMs += settings.now() - start;
        this.#live = replayed.value;
        this.#current = outcome;
        return ok({ version: outcome.manifest.version, counts: this.counts, warnings: outcome.warnings, timings: { ...times } });
      });
  }

  /** Removes every registration of this plugin from the server. */
  unload(): void {
    if (this.#unloaded) return;
    this.#unloaded = true;
    removeRegistrations(this.#live);
    this.#live = [];
    const ledger = loadedByServer.get(this.#context.server);
    if (ledger?.get(this.id) === this) ledger.delete(this.id);
  }
}
