/**
 * Canaries: the check that a plugin starts and answers, run at install, at
 * setup, on reload and on demand. A failure holds the plugin in quarantine
 * until a canary passes.
 */
import { errAsync, okAsync, ResultAsync, type Result } from 'neverthrow';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { Clock, Logger } from '../ports/ports.js';
import { CanaryArgumentCheck } from './canaryArguments.js';
import type { ClientRequestHandlers } from './clientRequests.js';
import { admitStart } from './CrashPolicy.js';
import { aliasesOf, type CredentialSource } from './credentials.js';
import type { CallDispatcher } from './dispatch.js';
import type { HostCatalog } from './hostCatalog.js';
import { hostOpId } from './operations.js';
import { crashStateOf } from './pluginState.js';
import { resolveRelativeDates } from './relativeDates.js';
import type { PluginRuntimes } from './runtimes.js';
import type { Supervisor } from './Supervisor.js';

/** The result of a canary run. */
export interface CanaryOutcome {
  /** The plugin. */
  readonly plugin_id: string;
  /** `passive`: start and list tools; `live`: call the declared canary tool. */
  readonly mode: 'passive' | 'live';
  /** What happened. */
  readonly status: 'passed' | 'failed' | 'skipped';
  /** Why it failed or was skipped. */
  readonly error?: HostError;
  /** What the canary tool returned, for a live canary that passed. */
  readonly result?: unknown;
}

/** Options of {@link PluginHost.canary}. */
export interface CanaryOptions {
  /** Call the canary tool (live) instead of only starting the plugin and listing its tools. Default false. */
  readonly live?: boolean;
  /** Arguments overriding those of the declared canary arguments they name (relative dates are resolved in these too); they must fit the tool's input schema. */
  readonly args?: Readonly<Record<string, unknown>>;
}

/** What the canary runner works with. */
export interface CanaryParts {
  readonly catalog: HostCatalog;
  readonly credentials: CredentialSource;
  readonly runtimes: PluginRuntimes;
  readonly dispatcher: CallDispatcher;
  readonly supervisor: Supervisor;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Whether the plugin is callable in this host (a canary of an inactive plugin stops it afterwards). */
  readonly isActive: (pluginId: string) => boolean;
}

/**
 * Who answers a live canary's client requests: nobody. A canary runs at
 * install, setup and on demand, when no user asked anything, so a plugin that
 * samples, elicits or lists roots inside it must not reach the application's
 * model, its user or its roots (review R5): with handlers of its own that hold
 * no callback, each such request is refused at once with the JSON-RPC error of
 * a kind without a callback, and is a party of its own next to a user's call
 * in flight (neither's callbacks answer it).
 */
const CANARY_CLIENT_REQUESTS: ClientRequestHandlers = Object.freeze({});

/** The declared credentials no source holds for the installed package, and whether values stored for another package are why. */
async function missingCredentials(credentials: CredentialSource, plugin: InstalledPlugin): Promise<{ missing: string[]; storedForAnother: boolean }> {
  const missing = await credentials.missing(plugin, plugin.descriptor?.needs_user_creds ?? []);
  return { missing, storedForAnother: missing.length > 0 && (await credentials.storedForAnother(plugin)) };
}

/** Runs canaries and records their outcome in the plugin's state row. */
export class Canaries {
  readonly #parts: CanaryParts;
  readonly #argumentCheck = new CanaryArgumentCheck();

  constructor(parts: CanaryParts) {
    this.#parts = parts;
  }

  /** Runs `pluginId`'s canary; see {@link PluginHost.canary}. */
  run(pluginId: string, options: CanaryOptions): ResultAsync<CanaryOutcome, HostError> {
    const { catalog, credentials, supervisor, clock } = this.#parts;
    const mode = options.live === true ? 'live' : 'passive';
    return catalog.plugin(pluginId).andThen((plugin) => {
      if (plugin.state?.permanent_quarantine === true) {
        const refused = admitStart(crashStateOf(plugin.state), clock.now(), pluginId, 'PLUGIN_QUARANTINED');
        if (refused.isErr()) return errAsync(refused.error);
      }
      return ResultAsync.fromSafePromise(missingCredentials(credentials, plugin)).andThen(({ missing, storedForAnother }) => {
        if (missing.length > 0) {
          // Values stored under the id for another package are withheld (review R2 F4): say so, or setup looks undone.
          const why = storedForAnother ? ' (the credentials stored under its id were set up for another package)' : '';
          const error = hostError('PLUGIN_NEEDS_CONFIGURATION', `plugin '${pluginId}' is missing ${missing.length} credential(s)${why}; run setup`, {
            details: { plugin_id: pluginId, missing_aliases: aliasesOf(plugin, missing), ...(storedForAnother ? { stored_for_another_package: true } : {}) },
          });
          return supervisor.recordCanary(pluginId, { status: 'skipped' }).map((): CanaryOutcome => ({ plugin_id: pluginId, mode, status: 'skipped', error }));
        }
        return new ResultAsync(this.#runCanary(plugin, mode, options));
      });
    });
  }

  async #runCanary(plugin: InstalledPlugin, mode: 'live' | 'passive', options: CanaryOptions): Promise<Result<CanaryOutcome, HostError>> {
    const { runtimes, dispatcher, supervisor, clock, logger, isActive } = this.#parts;
    const id = plugin.plugin_id;
    const spec = plugin.descriptor?.canary;
    let outcome: Result<unknown, HostError>;
    if (mode === 'live' && spec !== undefined) {
      const variant = plugin.variants.find((v) => v.tool_name === spec.tool);
      const opId = variant === undefined ? `plug.${id}.${spec.tool}` : hostOpId(variant);
      const args = resolveRelativeDates({ ...spec.arguments, ...options.args }, clock.now());
      outcome = await runtimes
        .take(plugin)
        .asyncAndThen((rt) => rt.session.listTools())
        .andThen((tools) => {
          const checked = this.#argumentCheck.check(id, tools, spec.tool, args);
          if (checked.unusable !== undefined) logger.warn({ plugin_id: id, tool: spec.tool }, `the canary tool's input schema does not compile; arguments unchecked: ${checked.unusable}`);
          return checked.refused === undefined ? okAsync(undefined) : errAsync(checked.refused);
        })
        .andThen(() => dispatcher.dispatch(plugin, spec.tool, args, { clientRequests: CANARY_CLIENT_REQUESTS }, opId, 'canary'))
        .map((r) => r.value);
    } else {
      outcome = await runtimes.take(plugin).asyncAndThen((rt) => rt.session.listTools());
    }
    if (outcome.isErr() || !isActive(id)) {
      const stopped = await runtimes.stop(id);
      if (stopped.isErr()) logger.warn({ plugin_id: id, code: stopped.error.code }, `the canary's session did not stop: ${stopped.error.message}`);
    }
    if (outcome.isOk()) {
      const recorded = await supervisor.recordCanary(id, { status: 'passed', live: mode === 'live' });
      const result = mode === 'live' && spec !== undefined ? { result: outcome.value } : {};
      return recorded.map((): CanaryOutcome => ({ plugin_id: id, mode, status: 'passed', ...result }));
    }
    const failure = outcome.error;
    logger.warn({ plugin_id: id, code: failure.code, mode }, 'plugin canary failed');
    const recorded = await supervisor.recordCanary(id, { status: 'failed', code: failure.code });
    return recorded.map((): CanaryOutcome => ({ plugin_id: id, mode, status: 'failed', error: failure }));
  }
}
