/**
 * Running one admitted call on its plugin's session: the session call, the
 * shape's result mapping, the call events and the crash books.
 */
import { err, errAsync, ResultAsync, type Result } from 'neverthrow';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import type { CallerIdentity } from '../audit/auditRecord.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { hostError, internalError, reworded, type HostError } from '../errors/HostError.js';
import type { HostEvents } from '../events/HostEvents.js';
import { nestedDeeperThan } from '../framing/nestingDepth.js';
import type { RiskClass } from '../manifest/model.js';
import type { Clock } from '../ports/ports.js';
import type { CallPresence, CallProgress, CallResult, ToolResult } from '../shapes/PluginSession.js';
import type { ConfirmationCallback } from './admission.js';
import { withClientRequests, type ClientRequestHandlers } from './clientRequests.js';
import { withSandboxHint } from './sandboxFailureHints.js';
import { errorWithoutSecrets } from '../secrets/redactedErrors.js';
import type { CallSchemas } from './callSchemas.js';
import type { ResultShaper } from './resultShaping.js';
import { stoppedByRetirement } from './drain.js';
import { callBudget, pluginRunSettings, type HostConfig } from './hostConfig.js';
import type { PluginRuntime } from './PluginRuntime.js';
import type { PluginRuntimes } from './runtimes.js';
import type { DispatchPurpose, Supervisor } from './Supervisor.js';

/** Per-call options of {@link PluginHost.call}. */
export interface HostCallOptions {
  /** The highest risk class the caller accepts. Default `read`. */
  readonly maxRisk?: RiskClass;
  /** Overrides the host's confirmation callback for this call. */
  readonly confirm?: ConfirmationCallback;
  /**
   * Answers the plugin's requests to its client during this call instead of
   * the host's `clientRequests` (a gateway forwards them to its own client).
   */
  readonly clientRequests?: ClientRequestHandlers;
  /** Time without an answer, in ms. */
  readonly timeoutMs?: number;
  /** Hard cap on the call, in ms. */
  readonly maxTotalTimeoutMs?: number;
  /** Cancels the call. */
  readonly signal?: AbortSignal;
  /** Receives progress. */
  readonly onProgress?: (progress: CallProgress) => void;
  /**
   * Who asks, as the application knows them: recorded in the call's audit
   * record and span, never checked. Calls waiting for a plugin's in-flight
   * slots take them caller by caller in turn (one caller per id and
   * transport; calls without a caller are the application's, one caller).
   */
  readonly caller?: CallerIdentity;
  /**
   * Told when the call is sent to its plugin (it holds one of the plugin's
   * in-flight slots, past any queue and the plugin's start) and when it stops
   * holding it (answered, or the plugin told to cancel it): the span in which
   * the plugin works for this call (MCP-speaking shapes).
   */
  readonly presence?: CallPresence;
}

/** What a dispatched call carries to its end. */
interface DispatchedCall {
  readonly id: string;
  readonly opId: string;
  readonly callId: number;
  readonly started: number;
  readonly purpose: DispatchPurpose;
}

/** What the dispatcher works with. */
export interface DispatcherParts {
  readonly runtimes: PluginRuntimes;
  readonly supervisor: Supervisor;
  readonly events: HostEvents;
  readonly clock: Clock;
  readonly config: HostConfig;
  readonly isClosed: () => boolean;
  /** Aborted when the host closes: a call still waiting for its result's validation ends then (answerValidation.ts). */
  readonly closing?: AbortSignal;
  /** The variants' request and response schemas. */
  readonly schemas: CallSchemas;
  /** The variants' output profiles. */
  readonly shaper: ResultShaper;
}

/** Sends admitted calls to their plugins and settles them. */
export class CallDispatcher {
  readonly #parts: DispatcherParts;
  #callSeq = 0;

  constructor(parts: DispatcherParts) {
    this.#parts = parts;
  }

  /**
   * INVALID_ARGS when `args` nest deeper than the host writes to a plugin or
   * break the request schema of `tool` (its backtracking matches charged to
   * the plugin and `caller`), else undefined. Also asked before a
   * high_stakes_write confirmation, so no one is asked to approve a call that cannot run.
   */
  argumentRefusal(plugin: InstalledPlugin, tool: string, args: unknown, opId: string, caller: CallerIdentity | undefined): HostError | undefined {
    const id = plugin.plugin_id;
    // Written to the plugin with JSON.stringify, which a deep enough value overflows; a request schema may not bound depth.
    const limit = pluginAnswerLimits.maxArgumentNestingDepth;
    if (nestedDeeperThan(args, limit)) {
      const tooDeep = hostError('INVALID_ARGS', `the arguments of '${tool}' nest more than ${limit} levels deep`, { details: { tool, max_nesting_depth: limit } });
      return callError(tooDeep, { id, opId });
    }
    const invalid = this.#parts.schemas.checkArguments(plugin, tool, args, caller);
    return invalid === undefined ? undefined : callError(invalid, { id, opId });
  }

  /** Calls `tool` of `plugin` (started if it is not running); `purpose` says whose crash books a failure feeds. */
  dispatch(plugin: InstalledPlugin, tool: string, args: unknown, options: HostCallOptions, opId: string, purpose: DispatchPurpose): ResultAsync<CallResult, HostError> {
    const { runtimes, events, clock } = this.#parts;
    const id = plugin.plugin_id;
    const invalid = this.argumentRefusal(plugin, tool, args, opId, options.caller);
    if (invalid !== undefined) return errAsync(invalid);
    const crashed = this.#parts.supervisor.stickyCrash(plugin);
    if (crashed !== undefined) return errAsync(callError(crashed, { id, opId }));
    const taken = runtimes.take(plugin);
    if (taken.isErr()) return errAsync(callError(taken.error, { id, opId }));
    const runtime = taken.value;
    const callId = ++this.#callSeq;
    const started = clock.now();
    if (events.wants('call:start')) events.emit('call:start', { plugin_id: id, op_id: opId, call_id: callId });
    runtime.begin();
    return new ResultAsync(this.#settle(plugin, runtime, tool, args, options, { id, opId, callId, started, purpose }));
  }

  /** Runs a dispatched call to its end: the session call, result mapping, the call:end event and the crash books. */
  async #settle(plugin: InstalledPlugin, runtime: PluginRuntime, tool: string, args: unknown, options: HostCallOptions, call: DispatchedCall): Promise<Result<CallResult, HostError>> {
    const { runtimes, supervisor, events, clock, isClosed } = this.#parts;
    let result: Result<ToolResult, HostError>;
    try {
      result = await runtime.session.callTool(tool, args, withClientRequests(callBudget(this.#parts.config, options, call.id), plugin, options.clientRequests, call.opId));
    } finally {
      runtime.end();
    }
    const { id, purpose } = call;
    let failure: HostError | undefined;
    let mapped: Result<CallResult, HostError>;
    if (result.isErr()) {
      failure = runtimes.withStartEnv(id, stoppedBySibling(stoppedByRetirement(result.error, runtime, isClosed()), runtime, isClosed()));
      mapped = err(callError(failure, call));
    } else {
      const adapter = runtimes.originOf(runtime)?.adapter;
      let checked: Result<CallResult, HostError>;
      if (adapter === undefined) {
        checked = err(callError(internalError(`the session of plugin '${id}' has no protocol adapter`), call));
      } else {
        // The adapter's Ok is handed on as it is: andThen would make a closure and a second Ok on every answered call.
        checked = adapter.mapResult(result.value, { plugin_id: id, op_id: call.opId });
        const checking = checked.isOk() ? this.#parts.schemas.checkResult(plugin, tool, checked.value, { caller: options.signal, host: this.#parts.closing }) : undefined;
        // Only a large answer waits for a validation worker; a small one was checked without a turn of the event loop.
        const broken = checking instanceof Promise ? await checking : checking;
        if (broken !== undefined) checked = err(callError(broken, call));
      }
      const shaper = this.#parts.shaper;
      mapped =
        checked.isErr() || shaper.leavesAsIs(plugin, tool, checked.value) ? checked : (await shaper.shape(plugin, tool, checked.value)).mapErr((e) => callError(e, call));
    }
    // Only a failure is looked at: mapErr would copy every answered call's Ok on the warm path.
    if (mapped.isErr()) {
      const hinted = withSandboxHint(mapped.error, plugin, () => runtimes.sandboxOf(plugin));
      mapped = err(errorWithoutSecrets(hinted, this.#parts.config.knownSecrets.redactor));
    }
    if (events.wants('call:end')) {
      const ended = { plugin_id: id, op_id: call.opId, call_id: call.callId, duration_ms: clock.now() - call.started, ok: mapped.isOk() };
      events.emit('call:end', mapped.isErr() ? { ...ended, code: mapped.error.code } : ended);
    }
    if (failure !== undefined) {
      const scope = runtimes.originOf(runtime)?.adapter.failureScope?.(failure, pluginRunSettings(this.#parts.config, id));
      if (scope === 'call') supervisor.callFailedAlone(id, failure);
      else if (scope === 'sticky') await supervisor.pluginCrashedSticky(id, runtime, failure);
      else if (supervisor.countsAgainstPlugin(failure)) await supervisor.pluginFailed(id, runtime, failure, purpose);
    } else if (purpose === 'call') {
      const cleared = supervisor.callSucceeded(id, call.started);
      if (cleared !== undefined) await cleared;
    }
    return mapped;
  }
}

/** The error a caller sees: every call error names its plugin and operation in its details. */
export function callError(error: HostError, call: Pick<DispatchedCall, 'id' | 'opId'>): HostError {
  if (error.details.plugin_id === call.id && error.details.op_id === call.opId) return error;
  return reworded(error, { details: { ...error.details, plugin_id: call.id, op_id: call.opId } });
}

/**
 * A call whose session the host stopped because another call failed gets
 * that failure's code (its session reports HOST_CLOSED, which would wrongly
 * suggest the host itself was closed).
 */
function stoppedBySibling(error: HostError, runtime: PluginRuntime, hostClosed: boolean): HostError {
  const cause = runtime.failure;
  if (error.code !== 'HOST_CLOSED' || hostClosed || cause === undefined) return error;
  return hostError(cause.code, `the plugin was stopped because another call failed: ${cause.message}`, {
    details: { ...cause.details, stopped_by_other_call: true },
    cause,
  });
}
