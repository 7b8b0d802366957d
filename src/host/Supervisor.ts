/**
 * Supervision of a host's plugins: the crash books (the backoff ladder,
 * quarantine, the canary hold) kept in plugin-state.json, so they survive
 * host restarts and are shared by every host on the profile.
 */
import { ResultAsync } from 'neverthrow';
import { recheckPinnedCode } from '../binding/recheckPinnedCode.js';
import { lookupPlugin } from '../catalog/catalogContents.js';
import type { PluginStateRecord } from '../catalog/catalogTypes.js';
import type { ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { HostError } from '../errors/HostError.js';
import type { HostErrorCode } from '../errors/registry.js';
import type { HostEvents } from '../events/HostEvents.js';
import type { Clock, Logger } from '../ports/ports.js';
import { CLEAR_CRASH_STATE, recordFailure } from './CrashPolicy.js';
import { sameBinding, type HostCatalog } from './hostCatalog.js';
import { isUnsetEnvStart } from './startEnvHints.js';
import { canaryHold, crashStateOf, inBackoff, OPERATOR_QUARANTINE_REASON, withCrashState } from './pluginState.js';
import type { PluginRuntime } from './PluginRuntime.js';
import type { PluginRuntimes } from './runtimes.js';

/** Failures that count toward quarantine: the plugin could not be started or broke its protocol. */
const QUARANTINE_CODES: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  'PLUGIN_SPAWN_FAILED',
  'PLUGIN_CRASHED',
  'PLUGIN_RESOURCE_LIMIT',
  'PLUGIN_HANDSHAKE_FAILED',
  'PLUGIN_TOOLS_MISMATCH',
  'PLUGIN_INVALID_JSON',
  'PLUGIN_MALFORMED_RESPONSE',
  'PLUGIN_FRAME_TOO_LARGE',
  'PLUGIN_EXECUTABLE_UNTRUSTED',
  'PLUGIN_PROTOCOL_VERSION_MISMATCH',
]);

/**
 * Where a PLUGIN_TIMEOUT counts toward quarantine: the host's own tools/list
 * (at every start, and the re-list after list_changed), a start the plugin
 * did not finish, counted as a crash at start is. An initialize that never
 * ends is PLUGIN_HANDSHAKE_FAILED already; a tools/call timeout is the call's.
 */
const QUARANTINE_TIMEOUT_PHASES: ReadonlySet<unknown> = new Set(['tools/list']);

/**
 * The listings of the MCP surface a client asks for (the gateway's clients at every connect): a result outside the
 * MCP schema fails that request alone. terraform-mcp-server@0.13.0 answers resources/templates/list with
 * `{"type":"success","templates":[]}`; counted as a broken protocol, each client's connect quarantined the plugin and
 * its tools with it, though the process answered in protocol and went on serving.
 */
const SURFACE_LIST_PHASES: ReadonlySet<unknown> = new Set(['resources/list', 'resources/templates/list', 'prompts/list']);

/** Why a dispatch runs: a caller's call feeds the crash ladder; a canary keeps its own books. */
export type DispatchPurpose = 'call' | 'canary';

/** What a canary run records. */
export type CanaryRecord = { readonly status: 'passed'; readonly live: boolean } | { readonly status: 'failed'; readonly code: string } | { readonly status: 'skipped' };

/** What the supervisor works with. */
export interface SupervisorParts {
  readonly catalog: HostCatalog;
  readonly runtimes: PluginRuntimes;
  readonly events: HostEvents;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The crash backoff ladder. */
  readonly backoffScheduleMs: readonly number[];
}

/** Keeps each plugin's crash books and decides what a failure costs it. */
export class Supervisor {
  readonly #parts: SupervisorParts;
  /** When this host last recorded a failure of each plugin (epoch ms). */
  readonly #lastFailureAt = new Map<string, number>();
  /** Sticky crashes, by plugin id, with the binding that crashed (an upgrade starts afresh). */
  readonly #sticky = new Map<string, { readonly failure: HostError; readonly binding: ExecutableBindingRecord | undefined }>();

  constructor(parts: SupervisorParts) {
    this.#parts = parts;
  }

  /**
   * Whether `failure` is the plugin's (it could not start or broke its protocol) rather than the call's. A plugin
   * failure the plugin's side explained (the ESM runner's load report: PLUGIN_ENTRY_INVALID, …, whose cause is the
   * runner's crash) counts as the crash does: the plugin's own code runs in the runner's process and can write that
   * report, so a report must not take a crash out of the books.
   */
  countsAgainstPlugin(failure: HostError): boolean {
    // Only the schema's refusal of an answer (its cause the SDK's, not the host's page or byte bound) is let off.
    const badListing = failure.code === 'PLUGIN_MALFORMED_RESPONSE' && SURFACE_LIST_PHASES.has(failure.details.phase) && failure.cause !== undefined && !(failure.cause instanceof HostError);
    if (badListing) return false;
    if (QUARANTINE_CODES.has(failure.code)) return true;
    if (failure.code === 'PLUGIN_TIMEOUT' && QUARANTINE_TIMEOUT_PHASES.has(failure.details.phase)) return true;
    return failure.code.startsWith('PLUGIN_') && failure.cause instanceof HostError && failure.cause.code === 'PLUGIN_CRASHED';
  }

  /**
   * A plugin failed: stop its session and (for calls) put it on the backoff
   * ladder, once per process however many calls saw the process die. A
   * session that launches a process per call (handshake) counts each failed
   * launch, and its other calls go on.
   */
  async pluginFailed(pluginId: string, runtime: PluginRuntime, failure: HostError, purpose: DispatchPurpose): Promise<void> {
    const { runtimes, events, logger } = this.#parts;
    if (runtimes.originOf(runtime)?.adapter.processPerCall !== true) {
      const first = runtime.claimFailure(failure);
      const stopped = await runtimes.stop(pluginId, runtime);
      if (stopped.isErr()) logger.warn({ plugin_id: pluginId, code: stopped.error.code }, `the failed session did not stop: ${stopped.error.message}`);
      if (!first) return;
    }
    logger.warn({ plugin_id: pluginId, code: failure.code }, 'plugin failed');
    events.emit('crash', { plugin_id: pluginId, code: failure.code, stderr_tail: String(failure.details.stderr_tail ?? '') });
    if (purpose !== 'call') return;
    // A start that failed without env names it is granted is the environment's fault, not the plugin code's: the next
    // start given them may well succeed, and a backoff would refuse it (the error names the names and the remedy).
    if (isUnsetEnvStart(failure)) {
      logger.info({ plugin_id: pluginId, unset_env: failure.details.unset_env }, 'the plugin failed at start without granted env; not counted toward quarantine');
      return;
    }
    // A list that differs from the one recorded for this code but still matches the manifest failed only the host's own
    // fast start (the record, toolListRecords.ts), which that code never uses again: the next start checks first and is not
    // refused for it, and a backoff would refuse that start (@currents/mcp@2.1.1 names the start time in schema defaults).
    if (failure.code === 'PLUGIN_TOOLS_MISMATCH' && failure.details.differs_from_recorded === true) {
      logger.info({ plugin_id: pluginId }, 'the plugin listed other tools than recorded for its code; not counted toward quarantine');
      return;
    }
    // Charged to the install the process ran: another process may have removed and reinstalled or upgraded the plugin meanwhile.
    const recorded = await this.#recordCrash(pluginId, await this.#untrustedCause(pluginId, runtime, failure), runtimes.originOf(runtime)?.binding);
    if (recorded.isErr() && recorded.error.details.replaced === true) logger.info({ plugin_id: pluginId }, 'the failed process ran an install removed or replaced since; not recorded');
    else if (recorded.isErr()) logger.error({ plugin_id: pluginId, code: recorded.error.code }, 'could not record a plugin failure');
  }

  /**
   * A start that every caller waiting for it left (their deadlines were
   * shorter than the plugin's start timeout) failed on its own time: counted
   * as a failed start, as it would be had a caller waited, so that a plugin
   * whose start never finishes goes on the backoff ladder instead of getting
   * a fresh process per call.
   */
  async startFailedUnseen(pluginId: string, runtime: PluginRuntime, failure: HostError): Promise<void> {
    if (this.countsAgainstPlugin(failure)) await this.pluginFailed(pluginId, runtime, failure, 'call');
  }

  /** A failure that cost only its call (the protocol leaves the process running): logged, nothing stopped or counted. */
  callFailedAlone(pluginId: string, failure: HostError): void {
    this.#parts.logger.warn({ plugin_id: pluginId, code: failure.code }, `a call failed and the plugin keeps running: ${failure.message}`);
  }

  /**
   * A crash its protocol makes sticky: the session is stopped (the child
   * reaped) and the crash reported once; every later call of this host gets
   * it ({@link Supervisor.stickyCrash}) until unquarantine or reload. The
   * crash books are left alone: no backoff, no quarantine.
   */
  async pluginCrashedSticky(pluginId: string, runtime: PluginRuntime, failure: HostError): Promise<void> {
    const { runtimes, events, logger } = this.#parts;
    if (!runtime.claimFailure(failure)) return;
    this.#sticky.set(pluginId, { failure, binding: runtimes.originOf(runtime)?.binding });
    const stopped = await runtimes.stop(pluginId, runtime);
    if (stopped.isErr()) logger.warn({ plugin_id: pluginId, code: stopped.error.code }, `the crashed session did not stop: ${stopped.error.message}`);
    logger.warn({ plugin_id: pluginId, code: failure.code }, 'plugin crashed; later calls report the crash until it is reloaded');
    events.emit('crash', { plugin_id: pluginId, code: failure.code, stderr_tail: String(failure.details.stderr_tail ?? '') });
  }

  /** The error every call of `plugin` gets after a sticky crash of the binding still installed; `undefined` otherwise. */
  stickyCrash(plugin: InstalledPlugin): HostError | undefined {
    const entry = this.#sticky.get(plugin.plugin_id);
    if (entry === undefined) return undefined;
    if (entry.binding !== undefined && !sameBinding(plugin.lock.binding, entry.binding)) {
      this.#sticky.delete(plugin.plugin_id);
      return undefined;
    }
    const crash = entry.failure;
    return new HostError(crash.code, `the plugin crashed earlier and stays crashed until it is reloaded: ${crash.message}`, {
      details: { ...crash.details, sticky: true },
      cause: crash,
      hint: 'Reload the plugin (PluginHost.reload or unquarantine) to start it again.',
    });
  }

  /**
   * A call that started at `callStarted` succeeded: the failure history is
   * cleared, unless a failure was recorded after that call began (a call
   * beside a failed launch proves nothing about the next launch). The common
   * case, no backoff window, costs no await. A history that cannot be cleared
   * (the catalog write failed) is logged: the call itself succeeded, and the
   * next success tries again.
   */
  callSucceeded(pluginId: string, callStarted: number): Promise<void> | undefined {
    const state = this.#parts.catalog.cachedPlugin(pluginId)?.state;
    if (state === undefined || !inBackoff(state)) return undefined;
    // A failure recorded by an earlier host necessarily predates this call.
    const failedBefore = (row: PluginStateRecord): boolean => inBackoff(row) && (this.#lastFailureAt.get(pluginId) ?? -Infinity) < callStarted;
    if (!failedBefore(state)) return Promise.resolve();
    return this.#parts.catalog.updateState(pluginId, (row) => (failedBefore(row) ? withCrashState(row, CLEAR_CRASH_STATE) : row)).match(
      () => {
        this.#parts.logger.info({ plugin_id: pluginId }, 'plugin recovered; failure history cleared');
        this.#parts.events.emit('quarantine', { plugin_id: pluginId, quarantined: false, permanent: false, retry_count: 0 });
      },
      (error) => this.#parts.logger.warn({ plugin_id: pluginId, code: error.code }, `the failure history was not cleared: ${error.message}`),
    );
  }

  /** Clears quarantine (backoff, hold or permanent). */
  unquarantine(pluginId: string): ResultAsync<void, HostError> {
    this.#sticky.delete(pluginId);
    return this.#parts.catalog.updateState(pluginId, (row) => withCrashState(row, CLEAR_CRASH_STATE)).map(() => {
      this.#parts.logger.info({ plugin_id: pluginId }, 'plugin unquarantined');
      this.#parts.events.emit('quarantine', { plugin_id: pluginId, quarantined: false, permanent: false, retry_count: 0 });
    });
  }

  /**
   * Quarantines the plugin by hand, for good (until unquarantine or reload):
   * its crash count and last error are kept, the reason is `operator`.
   * Stopping its processes is the caller's (this host) and the catalog
   * watch's (every other host).
   */
  quarantine(pluginId: string): ResultAsync<void, HostError> {
    const now = this.#parts.clock.now();
    return this.#parts.catalog
      .updateState(pluginId, (row) => {
        // Without next_retry_at: a permanent quarantine has no automatic retry.
        const { next_retry_at: _retry, ...crash } = crashStateOf(row);
        return withCrashState(row, { ...crash, quarantined: true, permanent_quarantine: true, quarantined_at: now, quarantine_reason: OPERATOR_QUARANTINE_REASON });
      })
      .map((row) => {
        this.#parts.logger.warn({ plugin_id: pluginId }, 'plugin quarantined by hand');
        this.#parts.events.emit('quarantine', { plugin_id: pluginId, quarantined: true, permanent: true, retry_count: row.retry_count });
      });
  }

  /** Records a canary's outcome: a pass lifts a hold and the backoff, a failure holds the plugin until a canary passes. */
  recordCanary(pluginId: string, outcome: CanaryRecord): ResultAsync<void, HostError> {
    const now = this.#parts.clock.now();
    const canaryAt = new Date(now).toISOString();
    let wasQuarantined = false;
    return this.#parts.catalog
      .updateState(pluginId, (row) => {
        wasQuarantined = row.quarantined_at !== null;
        switch (outcome.status) {
          case 'passed': {
            const cleared = row.permanent_quarantine === true ? row : withCrashState(row, CLEAR_CRASH_STATE);
            return {
              ...cleared,
              needs_configuration: outcome.live ? false : row.needs_configuration === true,
              canary: { status: 'passed', last_run_at: canaryAt, consecutive_failures: 0 },
            };
          }
          case 'failed':
            return {
              ...withCrashState(row, canaryHold(row, outcome.code, now)),
              canary: { status: 'failed', last_run_at: canaryAt, consecutive_failures: (row.canary.consecutive_failures ?? 0) + 1 },
            };
          case 'skipped':
            return { ...row, needs_configuration: true, canary: { status: 'skipped', last_run_at: canaryAt, consecutive_failures: row.canary.consecutive_failures ?? 0 } };
        }
      })
      .map((row) => {
        const quarantined = row.quarantined_at !== null;
        if (quarantined === wasQuarantined && outcome.status !== 'failed') return;
        this.#parts.events.emit('quarantine', {
          plugin_id: pluginId,
          quarantined,
          permanent: row.permanent_quarantine === true,
          retry_count: row.retry_count,
        });
      });
  }

  #recordCrash(pluginId: string, failure: HostError, ran: ExecutableBindingRecord | undefined): ResultAsync<void, HostError> {
    const { clock, logger, events } = this.#parts;
    const permanent = failure.code === 'PLUGIN_EXECUTABLE_UNTRUSTED';
    const reason = permanent ? String(failure.details.reason ?? 'digest_mismatch') : 'crash';
    this.#lastFailureAt.set(pluginId, clock.now());
    return this.#parts.catalog
      .updateState(pluginId, (row) =>
        withCrashState(
          row,
          recordFailure(crashStateOf(row), { code: failure.code, reason, now: clock.now(), permanent }, this.#parts.backoffScheduleMs),
        ),
        ran,
      )
      .map((row) => {
        const permanentNow = row.permanent_quarantine === true;
        logger.warn({ plugin_id: pluginId, retry_count: row.retry_count, permanent: permanentNow, next_retry_at: row.next_retry_at }, 'plugin quarantined');
        events.emit('quarantine', {
          plugin_id: pluginId,
          quarantined: true,
          permanent: permanentNow,
          retry_count: row.retry_count,
          ...(row.next_retry_at === null ? {} : { next_retry_at: Date.parse(row.next_retry_at) }),
        });
      });
  }

  /**
   * Checks the code `runtime` ran again after it failed. A plugin whose code
   * changed on disk is quarantined for good now, not after the backoff
   * ladder; this also covers a Node plugin whose interpreter refused bytes
   * swapped in between the host's check and its own (the integrity policy).
   * Only while the catalog still pins that very binding: another process may
   * have upgraded the plugin and deleted the old install root meanwhile, and
   * the new install must not pay for the old one's missing files. An upgrade
   * publishes before it deletes, so reading the catalog after the check sees it.
   */
  async #untrustedCause(pluginId: string, runtime: PluginRuntime, failure: HostError): Promise<HostError> {
    const ran = this.#parts.runtimes.originOf(runtime)?.binding;
    if (failure.code === 'PLUGIN_EXECUTABLE_UNTRUSTED' || ran === undefined) return failure;
    const checked = await recheckPinnedCode(ran);
    if (checked.isOk() || checked.error.code !== 'PLUGIN_EXECUTABLE_UNTRUSTED') return failure;
    const refreshed = await this.#parts.catalog.refresh();
    if (refreshed.isErr()) return failure;
    const current = lookupPlugin(refreshed.value, { profile: refreshed.value.profile, plugin_id: pluginId });
    return current !== undefined && sameBinding(current.lock.binding, ran) ? checked.error : failure;
  }
}
