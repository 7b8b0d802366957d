import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ListToolsResultSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  ErrorCode,
  McpError,
  type CallToolResult,
  type ServerCapabilities,
  type Implementation,
  type LoggingLevel,
  type Progress,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { err, ok, type Result } from 'neverthrow';
import { EventBudget } from '../../budget/EventBudget.js';
import { hostError, isHostError, type HostError } from '../../errors/HostError.js';
import stdoutSettings from '../../../etc/mcp-stdout.json' with { type: 'json' };
import lineEvents from '../../../etc/plugin-line-events.json' with { type: 'json' };
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { isJsonObject } from '../../framing/jsonRpcValues.js';
import { answerLargerThan, OFF_THREAD_VALIDATION_BYTES, unfinishedValidation, validateOffThread } from '../../manifest/answerValidation.js';
import { measureSchema } from '../../manifest/schemaLimits.js';
import type { Clock, Logger } from '../../ports/ports.js';
import type { PluginProcess } from '../../process/PluginProcess.js';
import type { CallOptions, CallProgress, ToolDescriptor } from '../PluginSession.js';
import { readCallToolResult } from './callToolResult.js';
import { DirectToolCalls, type AbortedBy } from './DirectToolCalls.js';
import { answerClientRequests, CallsInFlight, clientCapabilities, type ClientRequestCause, type ClientRequestSettings } from './clientRequests.js';
import { mapMcpFailure, type McpFailureContext } from './mcpFailures.js';
import { SURFACE_METHODS, type McpPluginNotice, type OutputSchemaBound, type McpSurfaceMethod, type McpSurfaceMethods, type SurfaceRequestOptions } from './McpSurface.js';
import { outputSchemaValidators } from './outputSchemaValidators.js';
import { PluginProcessTransport } from './PluginProcessTransport.js';
import { toolsMismatch } from './toolsMismatch.js';

const MAX_TOOL_PAGES = pluginAnswerLimits.maxListPages;
/** The bytes one tools/list may take across its pages: the host lists by itself at every list_changed, holding each page until the last. */
const MAX_TOOL_LIST_BYTES = pluginAnswerLimits.maxListBytes;
/** What one process's compiles of new output schemas may take together (etc/plugin-answers.json; each schema's own bounds are schemaLimits.ts'). */
const MAX_COMPILED_SCHEMA_BYTES = pluginAnswerLimits.maxCompiledSchemaBytes;
const EXIT_GRACE_MS = 1000;
/** The one key of a process's budget for tolerated stdout lines: its log record and its `stdout` event go together. */
const NOISE = 'stdout';
/** Log levels from the least to the most severe (RFC 5424's, as MCP's): a summary takes the most severe level it counts. */
const LOG_LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** What to do with a stdout line that is not a JSON-RPC message. */
export type StdoutNoisePolicy = 'fail' | 'tolerate';

/** A tool call's outcome as MCP reports it, before plugin-local errors are mapped. */
export interface McpToolResult {
  /** The plugin's `CallToolResult`, validated against the MCP schema. */
  readonly value: CallToolResult;
  /** `value.isError`: the plugin reported an application-level failure. */
  readonly isError: boolean;
}

/** The tool list after a `notifications/tools/list_changed`. */
export interface McpToolsChange {
  /** The tools the plugin lists now. */
  readonly tools: readonly ToolDescriptor[];
  /** `PLUGIN_TOOLS_MISMATCH` when they no longer match the manifest (`PLUGIN_MALFORMED_RESPONSE` when an output schema does not compile); calls fail with it until the tools change again. */
  readonly mismatch: HostError | undefined;
}

/**
 * The tool list a start of the same pinned code verified before, and where a
 * newly verified one goes. With a recorded list the first call is sent right
 * after `initialize` and the fresh `tools/list` is checked beside it: if it
 * differs from the record in any field of any tool or breaks the manifest,
 * the connection ends with `PLUGIN_TOOLS_MISMATCH` and every call on it
 * fails, an answer that came before the check included.
 */
export interface McpToolRecord {
  /** The list verified at an earlier start of this code, if any (read while the plugin initializes). */
  readonly load: () => Promise<readonly Tool[] | undefined>;
  /** Told each list that passed the manifest check at a start checked before its first call. */
  readonly save: (tools: readonly Tool[]) => void;
  /** Told when the fresh list differs from the recorded one, so the next start checks before its call. */
  readonly forget: () => void;
  /**
   * Told when the fresh list still matches the manifest but differs from the
   * recorded one: this code lists other bytes at each start, so every later
   * start of it checks before its call and nothing is recorded for it again.
   */
  readonly varies?: () => void;
}

// A server that builds its list at each start lists other bytes every time: @currents/mcp@2.1.1 puts the start time in
// input-schema defaults ("from": 30 days ago, "to": now). Forgetting the record only made the next start record it again, so
// every other start of such code failed PLUGIN_TOOLS_MISMATCH and was quarantined; a list that varied is never trusted again.
const VARIED_LIST_HINT =
  'The plugin listed its tools differently from an earlier start of the same code (a description or schema default naming the time, say), so this process is refused; later starts of this code check tools/list before their first call and are not refused for it. Report it upstream if the list should not change between starts.';

const byKey = ([a]: [string, unknown], [b]: [string, unknown]): number => (a < b ? -1 : a > b ? 1 : 0);

/** A listed tool as JSON with every object's keys in order, so that only what a tool says, not how its keys were ordered, tells two apart. */
const toolText = (tool: Tool): string => JSON.stringify(tool, (_key, value: unknown) => (isJsonObject(value) ? Object.fromEntries(Object.entries(value).sort(byKey)) : value));

/**
 * Whether two lists agree in every field of every tool, in any order: what the
 * host routes and validates with (names, output schemas, task support) and
 * what a client shown the list reads and acts on (title, description, input
 * schema, annotations, icons, `_meta`).
 */
function sameTools(recorded: readonly Tool[], fresh: readonly Tool[]): boolean {
  if (recorded.length !== fresh.length) return false;
  const freshTexts = fresh.map(toolText).sort();
  return recorded
    .map(toolText)
    .sort()
    .every((text, i) => text === freshTexts[i]);
}

/** What `pending` settles with, or `'aborted'` as soon as `signal` aborts, or `'timeout'` after `ms`, whichever comes first. */
function untilSettled<T>(pending: Promise<T>, signal: AbortSignal | undefined, clock: Clock, ms: number): Promise<T | 'aborted' | 'timeout'> {
  if (signal?.aborted === true) return Promise.resolve('aborted');
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });
    const cancelTimer = clock.setTimer(() => resolve('timeout'), ms);
    pending.then(resolve, reject).finally(() => {
      cancelTimer();
      signal?.removeEventListener('abort', onAbort);
    });
  });
}

/** Fixed settings a connection gets from its session. */
export interface McpConnectionSettings {
  readonly clientInfo: Implementation;
  readonly expectedTools: readonly string[] | undefined;
  readonly validateListedTools: ((tools: readonly ToolDescriptor[]) => HostError | undefined) | undefined;
  readonly startupTimeoutMs: number;
  readonly defaultTimeoutMs: number;
  readonly maxTotalTimeoutMs: number;
  readonly maxFrameBytes: number;
  readonly stdoutNoise: StdoutNoisePolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly onToolsChanged: ((change: McpToolsChange) => void) | undefined;
  /** Told each resources or prompts list_changed, resource update and log message the plugin sends. */
  readonly onNotice: ((notice: McpPluginNotice) => void) | undefined;
  readonly onStdoutViolation: (violation: HostError) => void;
  /**
   * Told the (bounded) text of each stdout line dropped under `tolerate`, up
   * to the budget of etc/mcp-stdout.json; past it, one summary: an empty
   * `line` and how many lines were not told one by one (`suppressed`).
   */
  readonly onStdoutNoise: ((line: string, suppressed?: number) => void) | undefined;
  /** How the plugin's requests to its client are answered; undefined: none is. */
  readonly clientRequests: ClientRequestSettings | undefined;
  /** The verified tool list of this code from an earlier start; undefined: every start checks before its first call. */
  readonly toolRecord: McpToolRecord | undefined;
}

/** A listed output schema the host does not compile: the bound it is past, and its bytes when measured. */
interface UncheckedSchema {
  readonly bound: OutputSchemaBound;
  readonly bytes?: number;
}

type FailureInputs = Pick<McpFailureContext, 'phase' | 'timeoutMs'> & Partial<Pick<McpFailureContext, 'tool' | 'maxTotalTimeoutMs' | 'abortedBy'>>;

const describeTool = (tool: Tool, unchecked: UncheckedSchema | undefined): ToolDescriptor => ({
  name: tool.name,
  ...(tool.title === undefined ? {} : { title: tool.title }),
  ...(tool.description === undefined ? {} : { description: tool.description }),
  inputSchema: tool.inputSchema,
  ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
  ...(unchecked === undefined ? {} : { outputSchemaUnchecked: unchecked.bound }),
  ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
});

/** The host requests beyond tools during which a plugin's sampling or elicitation is answered: those only the application asks. */
const OPENS_CLIENT_REQUESTS: ReadonlySet<McpSurfaceMethod> = new Set<McpSurfaceMethod>(['prompts/get', 'resources/read', 'completion/complete']);
const NOTHING_TO_LEAVE = (): void => undefined;

/** What a request beyond tools names, for a client request the plugin sends while answering it. */
function causeOf(method: McpSurfaceMethod, params: unknown): ClientRequestCause {
  const named = isJsonObject(params) ? params : {};
  const ref = isJsonObject(named.ref) ? named.ref : named;
  const name = typeof ref.name === 'string' ? ref.name : undefined;
  const uri = typeof ref.uri === 'string' ? ref.uri : undefined;
  return { method, ...(name === undefined ? {} : { name }), ...(uri === undefined ? {} : { uri }) };
}

function toCallProgress(progress: Progress): CallProgress {
  return {
    progress: progress.progress,
    ...(progress.total === undefined ? {} : { total: progress.total }),
    ...(progress.message === undefined ? {} : { message: progress.message }),
  };
}

/**
 * One plugin process with an initialized SDK `Client` on it: the unit an
 * {@link McpSession} replaces when the process dies. Checks the tool list
 * against the manifest at start and on every `tools/list_changed`.
 */
export class McpConnection {
  private readonly client: Client;
  private readonly transport: PluginProcessTransport;
  /** Bytes of the output schemas this process had compiled (those not compiled before), against maxCompiledSchemaBytes. */
  private compiledSchemaBytes = 0;
  /**
   * The validators of the schemas this process was charged for, by schema
   * text, for the life of the process: listed again they are neither
   * compiled nor charged again, whatever the shared cache let go meanwhile
   * (it holds maxSchemaCacheEntries of all processes' schemas, so a host with
   * more counted a plugin's old schemas as new after each turn of it). The
   * texts together stay within maxCompiledSchemaBytes.
   */
  private readonly chargedSchemas = new Map<string, JsonSchemaValidator<unknown>>();
  /** Tools already reported with an output schema left unchecked (once per tool for the life of the process). */
  private readonly uncheckedReported = new Set<string>();
  private descriptors: readonly ToolDescriptor[] = [];
  private toolNames: ReadonlySet<string> = new Set();
  private currentMismatch: HostError | undefined;
  private fatal: HostError | undefined;
  /** Aborted by {@link end}: a validation of an answer on a worker ends with the connection (answerValidation.ts). */
  private readonly ending = new AbortController();
  private listing: Promise<unknown> = Promise.resolve();
  /** A tools/list refresh is queued and has not started: it will see every change notified meanwhile. */
  private refreshQueued = false;
  private readonly calls: CallsInFlight;
  /** The `tools/call` requests, sent past the SDK `Client` (which keeps every other request). */
  private readonly direct: DirectToolCalls;
  /** Output-schema validators of the listed tools, by name (the process's shared compiled ones). */
  private outputValidators: ReadonlyMap<string, JsonSchemaValidator<unknown>> = new Map();
  /** The JSON text of each checked tool's output schema, by name: what a validation worker compiles for a large answer. */
  private outputSchemaTexts: ReadonlyMap<string, string> = new Map();
  /** Listed tools that accept only task-based execution, which the host does not offer. */
  private taskOnlyTools: ReadonlySet<string> = new Set();
  /** A start that trusted a recorded list, until its fresh list passed: the failure it ends with, if it does. */
  private recordCheck: Promise<HostError | undefined> | undefined;
  /**
   * Reports of tolerated stdout lines (a log record and a `stdout` event
   * each): a plugin printing lines in a loop would otherwise make as many of
   * both, without end (etc/mcp-stdout.json).
   */
  private readonly noise: EventBudget<typeof NOISE>;
  /**
   * Reports of the plugin's log messages (`notifications/message`, a `log`
   * event each): sent in a loop they were as many events, each forwarded to
   * every gateway client (etc/plugin-line-events.json `mcpLog`).
   */
  private readonly logs: EventBudget<'log'>;
  /** The most severe level among the log messages counted since the last summary. */
  private suppressedLogLevel: LoggingLevel | undefined;

  private constructor(
    readonly process: PluginProcess,
    private readonly settings: McpConnectionSettings,
  ) {
    this.noise = new EventBudget({ perSecond: stdoutSettings.noiseReportsPerSecond, burst: stdoutSettings.noiseReportsBurst }, settings.clock);
    this.logs = new EventBudget(lineEvents.mcpLog, settings.clock);
    this.direct = new DirectToolCalls((message) => this.transport.send(message), settings.clock, (error) =>
      settings.logger.debug({ pid: process.pid, error: error.message }, 'mcp transport error'),
    );
    this.transport = new PluginProcessTransport(process, {
      maxFrameBytes: settings.maxFrameBytes,
      directCalls: this.direct,
      onViolation: (violation, output) => this.onStdoutViolation(violation, output),
      onOversizeAnswer: (failure) => {
        settings.onStdoutViolation(failure);
        settings.logger.warn({ pid: process.pid, code: failure.code, details: failure.details }, 'failed one call whose answer was over the frame cap');
      },
      onToolListRepaired: (repairs) => settings.logger.info({ pid: process.pid, ...repairs }, 'plugin tools/list repaired before the MCP schema check (etc/answer-leniency.json)'),
      onRequestsDropped: (method) =>
        settings.logger.warn({ pid: process.pid, method }, 'plugin sends requests without reading the answers it has; dropping its requests until it reads (etc/client-requests.json)'),
      clock: settings.clock,
    });
    this.calls = new CallsInFlight((settings.clientRequests?.kinds.length ?? 0) > 0);
    this.client = new Client(settings.clientInfo, { capabilities: clientCapabilities(settings.clientRequests), jsonSchemaValidator: outputSchemaValidators });
    answerClientRequests(this.client, settings.clientRequests, this.calls, settings.clock, settings.logger);
    this.client.onerror = (error) => {
      // onStdoutViolation (told next) reports the line: a tolerated one in a budgeted record, another as the failure the connection ends with.
      if (this.isToleratedNoise(error)) return;
      settings.logger.debug({ pid: process.pid, error: error.message }, 'mcp transport error');
    };
    this.client.onclose = () => {
      // Every line was read (stdout ended) or none will be (close): the count still waiting for a token goes out now.
      this.noise.flush();
      this.logs.flush();
      void process.stop();
    };
    this.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      // One pending refresh covers any number of notifications: a flood costs the host neither memory nor round trips per notification.
      if (this.refreshQueued) return;
      this.refreshQueued = true;
      void this.serializeListing(() => {
        this.refreshQueued = false;
        return this.refreshTools();
      });
    });
    this.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.notice({ kind: 'list_changed', list: 'resources' }));
    this.client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.notice({ kind: 'list_changed', list: 'prompts' }));
    this.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => this.notice({ kind: 'resource_updated', uri: n.params.uri }));
    this.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      if (!this.logs.admit('log', this.logSummary)) {
        const level = this.suppressedLogLevel;
        if (level === undefined || LOG_LEVELS.indexOf(n.params.level) > LOG_LEVELS.indexOf(level)) this.suppressedLogLevel = n.params.level;
        return;
      }
      this.notice({ kind: 'log', level: n.params.level, ...(n.params.logger === undefined ? {} : { logger: n.params.logger }), data: n.params.data });
    });
  }

  /**
   * Runs `initialize` and the first `tools/list` on a fresh process; stops it
   * on any failure, and when `signal` aborts (the session closed during the start).
   */
  static async open(process: PluginProcess, settings: McpConnectionSettings, signal?: AbortSignal): Promise<Result<McpConnection, HostError>> {
    const connection = new McpConnection(process, settings);
    const recordedList = settings.toolRecord?.load();
    try {
      await connection.client.connect(connection.transport, { timeout: settings.startupTimeoutMs, ...(signal === undefined ? {} : { signal }) });
    } catch (error) {
      const failure = await connection.failure(error, { phase: 'initialize', timeoutMs: settings.startupTimeoutMs });
      await connection.end(failure);
      return err(failure);
    }
    const recorded = await recordedList;
    if (recorded !== undefined) {
      connection.adoptTools(recorded);
      if (connection.currentMismatch === undefined) {
        // Only manifest-declared tools are ever routed, and this list was verified for this very code, so nothing
        // undeclared can be called before the fresh list is checked; a fresh list that disagrees ends the connection.
        connection.recordCheck = connection.serializeListing(() => connection.checkAgainstRecord(recorded, settings.startupTimeoutMs));
        return ok(connection);
      }
      settings.toolRecord?.forget();
    }
    const listed = await connection.serializeListing(() => connection.listAllTools(settings.startupTimeoutMs, signal));
    if (listed.isErr()) {
      await connection.end(listed.error);
      return err(listed.error);
    }
    connection.adoptTools(listed.value);
    if (connection.currentMismatch !== undefined) {
      await connection.end(connection.currentMismatch);
      return err(connection.currentMismatch);
    }
    settings.toolRecord?.save(listed.value);
    return ok(connection);
  }

  /** The first `tools/list` of a start that trusted the recorded list: the connection ends unless the two agree. */
  private async checkAgainstRecord(recorded: readonly Tool[], timeoutMs: number): Promise<HostError | undefined> {
    const listed = await this.listAllTools(timeoutMs);
    if (listed.isErr()) {
      // Unless the session was closed meanwhile, a list that never passed must not keep the record trusted: a plugin
      // that failed, broke or stalled tools/list on every start would otherwise never have its list checked.
      if (this.fatal?.code !== 'HOST_CLOSED') this.settings.toolRecord?.forget();
      await this.end(listed.error);
      return listed.error;
    }
    this.adoptTools(listed.value);
    const varied = this.currentMismatch === undefined && !sameTools(recorded, listed.value);
    if (varied) {
      this.currentMismatch = hostError('PLUGIN_TOOLS_MISMATCH', 'plugin lists tools that differ from the list verified for the same code', {
        details: { undeclared: [], missing: [], differs_from_recorded: true },
        hint: VARIED_LIST_HINT,
      });
    }
    const mismatch = this.currentMismatch;
    if (mismatch === undefined) {
      this.recordCheck = undefined;
      return undefined;
    }
    if (varied && this.settings.toolRecord?.varies !== undefined) this.settings.toolRecord.varies();
    else this.settings.toolRecord?.forget();
    this.settings.logger.warn({ pid: this.process.pid, code: mismatch.code }, 'first tools/list disagrees with the recorded one; ending the connection');
    await this.end(mismatch);
    return mismatch;
  }

  /** Whether the process or its stdout is gone; the session then starts a new connection. */
  get closed(): boolean {
    return this.transport.isClosed;
  }

  /** The tools the plugin lists, as of the last `tools/list`. */
  get toolDescriptors(): readonly ToolDescriptor[] {
    return this.descriptors;
  }

  /**
   * The tools once every `tools/list` asked for so far is checked: a start
   * that trusted a recorded list lists beside its first call, and a caller
   * asking for the list gets the fresh one, or the failure it ended with.
   */
  async checkedTools(): Promise<Result<readonly ToolDescriptor[], HostError>> {
    await this.listing;
    const failure = this.currentMismatch ?? this.fatal;
    return failure === undefined ? ok(this.descriptors) : err(failure);
  }

  /** The manifest mismatch in force, if the last tool list broke it. */
  get mismatch(): HostError | undefined {
    return this.currentMismatch;
  }

  /** Whether the plugin lists a tool of that name. */
  lists(name: string): boolean {
    return this.toolNames.has(name);
  }

  /** The protocol version negotiated by `initialize`. */
  get protocolVersion(): string | undefined {
    return this.transport.protocolVersion;
  }

  /** The plugin's `serverInfo`. */
  get serverInfo(): Implementation | undefined {
    return this.client.getServerVersion();
  }

  /** The capabilities the plugin announced at `initialize`. */
  get serverCapabilities(): ServerCapabilities {
    return this.client.getServerCapabilities() ?? {};
  }

  /**
   * One request beyond tools (resources, prompts, completions, logging).
   * A method whose capability the plugin did not announce is refused with
   * PLUGIN_METHOD_NOT_FOUND without being sent.
   */
  async request<M extends McpSurfaceMethod>(
    method: M,
    params: McpSurfaceMethods[M]['params'],
    options: SurfaceRequestOptions = {},
  ): Promise<Result<McpSurfaceMethods[M]['result'], HostError>> {
    const row = SURFACE_METHODS[method];
    if (!row.allowed(this.serverCapabilities)) {
      return err(
        hostError('PLUGIN_METHOD_NOT_FOUND', `plugin does not announce the ${row.capability} capability that ${method} needs`, {
          details: { phase: method, capability: row.capability },
        }),
      );
    }
    const timeoutMs = options.timeoutMs ?? this.settings.defaultTimeoutMs;
    // A server may sample or elicit while it answers prompts/get, resources/read or a completion: that is the host's
    // request. Lists, subscriptions and the log level do not count: a plugin provokes them itself (its list_changed
    // makes the application or the gateway re-list, its crash makes the host restore the surface), so they would let
    // it ask the application's model or user at will (review R4 F2).
    const leaveCalls = OPENS_CLIENT_REQUESTS.has(method) ? this.calls.enterRequest(causeOf(method, params), options.clientRequests) : NOTHING_TO_LEAVE;
    try {
      const answer = await this.client.request({ method, params } as never, row.schema as never, {
        timeout: timeoutMs,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      return ok(answer as McpSurfaceMethods[M]['result']);
    } catch (error) {
      return err(await this.failure(error, { phase: method, timeoutMs, ...(options.signal?.aborted === true ? { abortedBy: 'caller' as const } : {}) }));
    } finally {
      leaveCalls();
    }
  }

  /**
   * One `tools/call` with per-request timeout reset by progress, a total cap
   * and cancellation. `budget` is the call's own timeout and cap when
   * `options` holds only what is left of them (the call waited to be sent):
   * a timeout is reported in the caller's numbers.
   */
  async callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    options: CallOptions,
    budget?: { readonly timeoutMs: number; readonly maxTotalTimeoutMs: number },
  ): Promise<Result<McpToolResult, HostError>> {
    const timeoutMs = options.timeoutMs ?? this.settings.defaultTimeoutMs;
    const maxTotalTimeoutMs = options.maxTotalTimeoutMs ?? this.settings.maxTotalTimeoutMs;
    // The stated budget, for the error texts; only a failure builds a context of it, an answered call none.
    const stated = budget ?? { timeoutMs, maxTotalTimeoutMs };
    if (this.taskOnlyTools.has(name)) {
      return err(await this.callFailure(name, stated, new McpError(ErrorCode.InvalidRequest, `Tool "${name}" requires task-based execution, which the host does not offer`)));
    }
    const onProgress = options.onProgress;
    const leaveCalls = this.calls.enter(options.clientRequests);
    const outcome = await this.direct.call({
      name,
      args,
      timeoutMs,
      maxTotalTimeoutMs,
      statedMaxTotalTimeoutMs: stated.maxTotalTimeoutMs,
      signal: options.signal,
      onProgress: onProgress === undefined ? undefined : (progress) => this.reportProgress(name, onProgress, progress),
    });
    leaveCalls();
    const recordCheck = this.recordCheck;
    if (outcome.answered && recordCheck !== undefined) {
      // An answer that came before the fresh list was checked is only handed out if the list passes, so that a
      // process whose list disagrees serves no call at all, whichever of the two answers it sent first.
      // The wait is the caller's: its signal ends it, and so does what was left of the call's timeout or cap when the
      // answer came (a fresh whole timeout would let a call last almost twice its own).
      const refused = await untilSettled(recordCheck, options.signal, this.settings.clock, outcome.until - this.settings.clock.now());
      if (refused === 'aborted') return err(await this.callFailure(name, stated, options.signal?.reason, 'caller'));
      if (refused === 'timeout') {
        return err(await this.callFailure(name, stated, new McpError(ErrorCode.RequestTimeout, 'the plugin did not list its tools in time'), outcome.capped ? 'total-timeout' : 'timeout'));
      }
      if (refused !== undefined) return err(refused);
    }
    if (!outcome.answered) return err(await this.callFailure(name, stated, outcome.error, outcome.abortedBy));
    const read = readCallToolResult(outcome.result);
    if (read.isErr()) return err(await this.callFailure(name, stated, read.error));
    const result = read.value;
    const violation = this.outputSchemaViolation(name, result, options.signal);
    // Only a large answer waits for a worker; a small one is checked here without a turn of the event loop.
    const broken = violation instanceof Promise ? await violation : violation;
    if (broken === 'cancelled') {
      // The call's usual abort or close outcome, never the unchecked answer: the caller's abort wins if both happened.
      if (options.signal?.aborted === true) return err(await this.callFailure(name, stated, options.signal.reason, 'caller'));
      return err(await this.callFailure(name, stated, new McpError(ErrorCode.ConnectionClosed, 'the connection ended while the answer was being checked')));
    }
    if (broken !== undefined) return err(await this.callFailure(name, stated, broken));
    return ok({ value: result, isError: result.isError === true });
  }

  /**
   * What the SDK `Client` enforces on a tool with an output schema: a
   * successful result carries `structuredContent`, and it matches the schema.
   * Its errors, with the SDK's codes and texts, for the failure mapping.
   * A structuredContent over offThreadValidationBytes is checked on a
   * validation worker (answerValidation.ts): against a schema within every
   * bound, one 1 MiB answer held the host's thread for seconds. `cancelled`
   * when `signal` aborted or the connection ended during that check.
   */
  private outputSchemaViolation(name: string, result: CallToolResult, signal: AbortSignal | undefined): McpError | undefined | Promise<McpError | undefined | 'cancelled'> {
    const validator = this.outputValidators.get(name);
    if (validator === undefined) return undefined;
    // A tool error is exempt, structuredContent or not, as the SDK's server exempts it (and its client since typescript-sdk#1943):
    // hevy-mcp@6.1.13 answers a failed request with isError and structuredContent { error: {...} }, which its success schema
    // rejects, and refusing that as a malformed answer hid the tool's own words ("Unable to complete the request after 4 attempts").
    if (result.isError === true) return undefined;
    if (result.structuredContent === undefined) {
      return new McpError(ErrorCode.InvalidRequest, `Tool ${name} has an output schema but did not return structured content`);
    }
    const text = this.outputSchemaTexts.get(name);
    if (text !== undefined && answerLargerThan(result.structuredContent, OFF_THREAD_VALIDATION_BYTES)) return this.offThreadViolation(name, text, result.structuredContent, signal);
    try {
      const checked = validator(result.structuredContent);
      return checked.valid ? undefined : new McpError(ErrorCode.InvalidParams, `Structured content does not match the tool's output schema: ${checked.errorMessage}`);
    } catch (error) {
      return new McpError(ErrorCode.InvalidParams, `Failed to validate structured content: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** {@link outputSchemaViolation} on a validation worker, said in `answer_validation` notices; only `valid` passes. */
  private async offThreadViolation(name: string, text: string, structured: unknown, signal: AbortSignal | undefined): Promise<McpError | undefined | 'cancelled'> {
    this.notice({ kind: 'answer_validation', tool: name, phase: 'start' });
    const verdict = await validateOffThread({ dialect: 'output', schemaText: text, value: structured, owner: this, signals: [signal, this.ending.signal] });
    this.notice({ kind: 'answer_validation', tool: name, phase: 'end', outcome: verdict.kind, durationMs: verdict.durationMs });
    if (verdict.kind === 'valid') return undefined;
    if (verdict.kind === 'cancelled') return 'cancelled';
    if (verdict.kind === 'invalid') return new McpError(ErrorCode.InvalidParams, `Structured content does not match the tool's output schema: ${verdict.message}`);
    const refused = unfinishedValidation(verdict, 'PLUGIN_MALFORMED_RESPONSE', name, 'output');
    // The McpError carries the host's own verdict, which the failure mapping hands on with the call's context.
    return new McpError(ErrorCode.InternalError, refused.message, refused);
  }

  /**
   * Ends the connection and stops the process; in-flight calls fail with
   * `reason` (or `PLUGIN_CRASHED` when none is given).
   */
  async end(reason?: HostError): Promise<void> {
    this.fatal ??= reason;
    this.ending.abort();
    await this.client.close();
    await this.process.stop();
  }

  /** The summary of log messages past the budget: at their most severe level, so a client filtering by level still hears of the worst. */
  private readonly logSummary = (suppressed: number): void => {
    const level = this.suppressedLogLevel ?? 'info';
    this.suppressedLogLevel = undefined;
    this.notice({ kind: 'log', level, data: `${suppressed} more log messages from the plugin were not reported one by one (etc/plugin-line-events.json)`, suppressed });
  };

  private notice(notice: McpPluginNotice): void {
    try {
      this.settings.onNotice?.(notice);
    } catch (error) {
      this.settings.logger.warn({ pid: this.process.pid, error: String(error) }, 'onNotice callback threw');
    }
  }

  private reportProgress(tool: string, onProgress: (progress: CallProgress) => void, progress: Progress): void {
    try {
      onProgress(toCallProgress(progress));
    } catch (error) {
      this.settings.logger.warn({ tool, error: String(error) }, 'onProgress callback threw');
    }
  }

  private serializeListing<T>(run: () => Promise<T>): Promise<T> {
    const next = this.listing.then(run);
    this.listing = next.catch(() => undefined);
    return next;
  }

  private async listAllTools(timeoutMs: number, signal?: AbortSignal): Promise<Result<Tool[], HostError>> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    const bytesBefore = this.transport.toolListAnswerBytes;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      try {
        // Through request, not listTools: listTools also fills the Client's own output-schema cache for its callTool,
        // which the host does not use (adoptTools takes the validators it checks results with).
        // Each page gets a signal of its own that follows the caller's: the SDK's request leaves its abort listener on
        // the signal it is given, so one signal shared by every page collected a listener per page (and Node's
        // MaxListenersExceededWarning on the host's stderr from the eleventh page on).
        const answer = await this.client.request({ method: 'tools/list', ...(cursor === undefined ? {} : { params: { cursor } }) }, ListToolsResultSchema, {
          timeout: timeoutMs,
          ...(signal === undefined ? {} : { signal: AbortSignal.any([signal]) }),
        });
        tools.push(...answer.tools);
        cursor = answer.nextCursor;
      } catch (error) {
        return err(await this.failure(error, { phase: 'tools/list', timeoutMs }));
      }
      if (cursor === undefined) return ok(tools);
      if (this.transport.toolListAnswerBytes - bytesBefore > MAX_TOOL_LIST_BYTES) {
        return err(
          hostError('PLUGIN_MALFORMED_RESPONSE', `plugin's tools/list took more than ${MAX_TOOL_LIST_BYTES} bytes in ${page + 1} pages`, {
            details: { phase: 'tools/list', pages: page + 1, max_list_bytes: MAX_TOOL_LIST_BYTES },
          }),
        );
      }
    }
    return err(hostError('PLUGIN_MALFORMED_RESPONSE', `plugin's tools/list did not end after ${MAX_TOOL_PAGES} pages`, { details: { phase: 'tools/list' } }));
  }

  private adoptTools(tools: readonly Tool[]): void {
    const names = tools.map((tool) => tool.name);
    this.toolNames = new Set(names);
    const validators = new Map<string, JsonSchemaValidator<unknown>>();
    const texts = new Map<string, string>();
    const taskOnly = new Set<string>();
    const descriptors: ToolDescriptor[] = [];
    let uncompilable: HostError | undefined;
    for (const tool of tools) {
      let unchecked: UncheckedSchema | undefined;
      if (tool.outputSchema !== undefined) {
        const validator = this.outputValidator(tool.name, tool.outputSchema as JsonSchemaType, texts);
        if (typeof validator === 'function') validators.set(tool.name, validator);
        else if ('code' in validator) uncompilable ??= validator;
        else {
          unchecked = validator;
          this.reportUnchecked(tool.name, validator);
        }
      }
      descriptors.push(describeTool(tool, unchecked));
      if (tool.execution?.taskSupport === 'required') taskOnly.add(tool.name);
    }
    this.descriptors = Object.freeze(descriptors);
    this.outputValidators = validators;
    this.outputSchemaTexts = texts;
    this.taskOnlyTools = taskOnly;
    const expected = this.settings.expectedTools;
    this.currentMismatch = uncompilable ?? (expected === undefined ? undefined : toolsMismatch(expected, names)) ?? this.settings.validateListedTools?.(this.descriptors);
  }

  /**
   * The validator of a listed output schema, or why it is not compiled: over
   * a bound of schemaLimits.ts (bytes, depth, objects, patterns, expansion), or new
   * while this process's compiles already took maxCompiledSchemaBytes (the
   * tool is then left unchecked), or Ajv refused it (the list fails). Ajv
   * compiles on the host's thread, which every plugin and the gateway share
   * (a 900 KB schema held it 15 s), and a plugin may list new schemas at
   * every list_changed; a schema this process was charged for, or one the
   * shared cache holds, costs nothing. The text of a schema it returns a
   * validator for goes into `texts` under `tool`.
   */
  private outputValidator(tool: string, schema: JsonSchemaType, texts: Map<string, string>): JsonSchemaValidator<unknown> | HostError | UncheckedSchema {
    const measured = measureSchema(schema);
    // Past a bound the tool stays listed and callable, its structuredContent unchecked: the bound keeps Ajv off the
    // shared thread, and a plugin's answers checked against its own schema guard nothing against that plugin, while
    // failing the list made every tool of a server with one large (OpenAPI-derived) output schema unusable.
    if (!measured.ok) return { bound: measured.bound, ...(measured.bytes === undefined ? {} : { bytes: measured.bytes }) };
    const { text, bytes } = measured;
    const charged = this.chargedSchemas.get(text);
    if (charged !== undefined) {
      texts.set(tool, text);
      return charged;
    }
    const shared = outputSchemaValidators.hasText(text);
    if (!shared && this.compiledSchemaBytes + bytes > MAX_COMPILED_SCHEMA_BYTES) return { bound: 'process_budget', bytes };
    const attempts = outputSchemaValidators.compileAttempts;
    let validator: JsonSchemaValidator<unknown>;
    try {
      validator = outputSchemaValidators.validatorFor(schema, text);
    } catch (error) {
      // A schema Ajv refused took its time too; one remembered as refused was not compiled again and costs nothing.
      if (outputSchemaValidators.compileAttempts !== attempts) this.compiledSchemaBytes += bytes;
      // Ajv throws on a schema it cannot compile; thrown from here it escaped every caller as a rejection.
      const reason = error instanceof Error ? error.message : String(error);
      return hostError('PLUGIN_MALFORMED_RESPONSE', `plugin lists tool "${tool}" with an output schema that does not compile: ${reason}`, {
        details: { phase: 'tools/list', tool, reason },
      });
    }
    // A shared hit is not charged nor kept here: the cache may let it go, and compiling it again then is charged once.
    if (!shared) {
      this.compiledSchemaBytes += bytes;
      this.chargedSchemas.set(text, validator);
    }
    texts.set(tool, text);
    return validator;
  }

  /** Says once per tool for the life of the process that its output schema is not compiled, nor its results checked against it. */
  private reportUnchecked(tool: string, unchecked: UncheckedSchema): void {
    if (this.uncheckedReported.has(tool)) return;
    this.uncheckedReported.add(tool);
    this.settings.logger.info(
      { pid: this.process.pid, tool, bound: unchecked.bound, schema_bytes: unchecked.bytes, compiled_schema_bytes: this.compiledSchemaBytes },
      'output schema past a compile bound (etc/plugin-answers.json): its tool stays listed, its structuredContent unchecked',
    );
    this.notice({ kind: 'output_schema_unchecked', tool, bound: unchecked.bound, ...(unchecked.bytes === undefined ? {} : { schemaBytes: unchecked.bytes }) });
  }

  private async refreshTools(): Promise<void> {
    if (this.closed) return;
    const listed = await this.listAllTools(this.settings.defaultTimeoutMs);
    if (listed.isErr()) {
      this.settings.logger.warn({ pid: this.process.pid, code: listed.error.code }, 'tools/list after list_changed failed; ending the connection');
      await this.end(listed.error);
      return;
    }
    this.adoptTools(listed.value);
    try {
      this.settings.onToolsChanged?.({ tools: this.toolDescriptors, mismatch: this.currentMismatch });
    } catch (error) {
      this.settings.logger.warn({ pid: this.process.pid, error: String(error) }, 'onToolsChanged callback threw');
    }
  }

  /** Whether `error` is a stdout line's violation (it carries the line's excerpt) on a connection that tolerates stdout noise. */
  private isToleratedNoise(error: Error): boolean {
    return this.settings.stdoutNoise === 'tolerate' && isHostError(error) && typeof error.details.line_excerpt === 'string';
  }

  private onStdoutViolation(violation: HostError, output: boolean): void {
    this.settings.onStdoutViolation(violation);
    if (output && this.settings.stdoutNoise === 'tolerate') {
      // Published servers print banners and logs there: plugin output, not a fault.
      const pid = this.process.pid;
      const summary = (suppressed: number): void => {
        this.settings.logger.info({ pid, suppressed }, `plugin output on stdout (not JSON-RPC): ${suppressed} more lines dropped, not logged one by one (etc/mcp-stdout.json)`);
        this.settings.onStdoutNoise?.('', suppressed);
      };
      if (!this.noise.admit(NOISE, summary)) return;
      this.settings.logger.info({ pid, code: violation.code, details: violation.details }, 'plugin output on stdout (not JSON-RPC), dropped');
      const line = violation.details.line_excerpt;
      if (typeof line === 'string') this.settings.onStdoutNoise?.(line);
      return;
    }
    // The dropped line may have been any pending answer, so no pending call can be trusted to complete.
    void this.end(violation);
  }

  /** A failed `tools/call` of `tool` under the `stated` budget, mapped with its context; `abortedBy` when the host or the caller ended it. */
  private callFailure(tool: string, stated: { readonly timeoutMs: number; readonly maxTotalTimeoutMs: number }, error: unknown, abortedBy?: AbortedBy): Promise<HostError> {
    const context = { phase: 'tools/call' as const, tool, timeoutMs: stated.timeoutMs, maxTotalTimeoutMs: stated.maxTotalTimeoutMs };
    return this.failure(error, abortedBy === undefined ? context : { ...context, abortedBy });
  }

  private failure(error: unknown, inputs: FailureInputs): Promise<HostError> {
    const offered = this.transport.offeredProtocolVersion;
    const partial = this.transport.partialLine;
    return mapMcpFailure(error, {
      ...inputs,
      process: this.process,
      clock: this.settings.clock,
      exitGraceMs: EXIT_GRACE_MS,
      fatal: this.fatal,
      connectionClosed: this.transport.closedByPeer,
      transportClosed: this.transport.isClosed,
      ...(offered === undefined ? {} : { offeredProtocolVersion: offered }),
      ...(partial === undefined ? {} : { partialLine: partial }),
    });
  }
}
