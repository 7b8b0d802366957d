import type { Implementation, LoggingLevel, Prompt, Resource, ResourceTemplate, ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { err, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import packageJson from '../../../package.json' with { type: 'json' };
import { hostError, type HostError } from '../../errors/HostError.js';
import { sessionClosedError } from '../../framing/LineChannel.js';
import { DEFAULT_MAX_FRAME_BYTES } from '../../framing/LineReader.js';
import { silentLogger, systemClock, type Clock, type Logger } from '../../ports/ports.js';
import type { CallOptions, CallPresence, PluginSession, ProcessLauncher, ToolDescriptor } from '../PluginSession.js';
import { isRecord } from '../../manifest/access.js';
import { InFlightLimiter } from '../InFlightLimiter.js';
import { LazyStart } from '../LazyStart.js';
import { CallWait } from './CallWait.js';
import type { ClientRequestSettings } from './clientRequests.js';
import { McpConnection, type McpConnectionSettings, type McpToolRecord, type McpToolResult, type McpToolsChange, type StdoutNoisePolicy } from './McpConnection.js';
import type { McpPluginNotice, McpSurface, McpSurfaceMethod, McpSurfaceMethods, SurfaceRequestOptions, SurfaceState } from './McpSurface.js';

/** Default time a `tools/call` may go without an answer or progress: 30 s. */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 30_000;
/** Default cap on one `tools/call`, progress or not: 5 min. */
export const DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS = 300_000;
/** Default time allowed for `initialize` and the first `tools/list` of a new process: 30 s. */
export const DEFAULT_MCP_STARTUP_TIMEOUT_MS = 30_000;
const MAX_LIST_PAGES = pluginAnswerLimits.maxListPages;
/** What one list may take across its pages: every page is held until the last (a plugin's list_changed invites clients to list again). */
const MAX_LIST_BYTES = pluginAnswerLimits.maxListBytes;

/** Default number of `tools/call` requests outstanding at one plugin: 16. */
export const DEFAULT_MCP_MAX_IN_FLIGHT = 16;

/** The `clientInfo` sent in `initialize` unless the session is given another. */
export const DEFAULT_MCP_CLIENT_INFO: Readonly<Implementation> = Object.freeze({ name: 'mcp-plugin-host', version: packageJson.version });

/** Options of an {@link McpSession}. */
export interface McpSessionOptions {
  /** Starts the plugin process (verified and sandboxed); called lazily, and again after the process dies. */
  readonly launch: ProcessLauncher;
  /**
   * The unprefixed tool names the manifest declares. When given, the plugin's
   * `tools/list` must name exactly these, at start and after every
   * `tools/list_changed`, or calls fail with `PLUGIN_TOOLS_MISMATCH`. Omit to skip the check.
   */
  readonly expectedTools?: readonly string[];
  /**
   * The host's own check of the listed tools, at start and after every
   * `tools/list_changed` (after `expectedTools`): an error it returns fails
   * the start, or the calls until the tools change again, as a mismatch does.
   */
  readonly validateListedTools?: (tools: readonly ToolDescriptor[]) => HostError | undefined;
  /** `clientInfo` for `initialize`. Default {@link DEFAULT_MCP_CLIENT_INFO}. */
  readonly clientInfo?: Implementation;
  /** Per-call time without an answer, reset by each progress notification. Default {@link DEFAULT_MCP_CALL_TIMEOUT_MS}. */
  readonly defaultTimeoutMs?: number;
  /** Per-call hard cap, progress or not. Default {@link DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS}. */
  readonly maxTotalTimeoutMs?: number;
  /** Time for `initialize` plus the first `tools/list`. Default {@link DEFAULT_MCP_STARTUP_TIMEOUT_MS}. */
  readonly startupTimeoutMs?: number;
  /** Calls outstanding at the plugin at once; more wait in order. Default {@link DEFAULT_MCP_MAX_IN_FLIGHT}. */
  readonly maxInFlight?: number;
  /** Cap on one stdout line, in bytes. Default 1 MiB. */
  readonly maxFrameBytes?: number;
  /**
   * A stdout line that is not JSON-RPC: `fail` (default) ends the process and
   * fails every in-flight call with `PLUGIN_INVALID_JSON` or
   * `PLUGIN_MALFORMED_RESPONSE`; `tolerate` drops and counts a line that
   * looks like plugin output (not JSON, or JSON without a `jsonrpc` member).
   * A message with a `jsonrpc` member that breaks the schema, and a line over
   * the cap that answers no request, always fail.
   */
  readonly stdoutNoise?: StdoutNoisePolicy;
  /**
   * Told the text (at most 200 characters) of each stdout line dropped under
   * `tolerate`: the plugin's own output. Past a budget per process
   * (etc/mcp-stdout.json), lines are counted instead, and told in summaries:
   * an empty `line` and the count (`suppressed`); one comes when the process ends.
   */
  readonly onStdoutNoise?: (line: string, suppressed?: number) => void;
  /** How the plugin's requests to its client (sampling, elicitation, roots) are answered. Default: none is; each is refused. */
  readonly clientRequests?: ClientRequestSettings;
  /** Told about every `tools/list_changed` once the new list is read. */
  readonly onToolsChanged?: (change: McpToolsChange) => void;
  /**
   * The tool list verified at an earlier start of the same pinned code, and
   * where each newly verified one is saved. Omit, and every start runs
   * `tools/list` before its first call.
   */
  readonly toolRecord?: McpToolRecord;
  /** Told each resources or prompts list_changed, resource update and log message the plugin sends. */
  readonly onNotice?: (notice: McpPluginNotice) => void;
  /** Told when a start failed after every call waiting for it left: a failure no call reports. */
  readonly onUnseenStartFailure?: (failure: HostError) => void;
  /** Timers for the total cap and exit grace. Default {@link systemClock}. */
  readonly clock?: Clock;
  /** Where warnings (tolerated stdout noise, failed refreshes) go. Default {@link silentLogger}. */
  readonly logger?: Logger;
}

/** Counters of an {@link McpSession}. */
export interface McpSessionStats {
  /** Processes started so far. */
  readonly launches: number;
  /** Stdout lines dropped because they were not JSON-RPC or over the frame cap (an answer over it included). */
  readonly stdoutViolations: number;
  /** Calls outstanding at the plugin now. */
  readonly inFlight: number;
  /** Calls waiting for a slot now. */
  readonly waiting: number;
}

function invalidOptions(options: McpSessionOptions): HostError | undefined {
  const numbers = {
    defaultTimeoutMs: options.defaultTimeoutMs,
    maxTotalTimeoutMs: options.maxTotalTimeoutMs,
    startupTimeoutMs: options.startupTimeoutMs,
    maxInFlight: options.maxInFlight,
    maxFrameBytes: options.maxFrameBytes,
  };
  for (const [name, value] of Object.entries(numbers)) {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
      return hostError('HOST_INVALID_OPTIONS', `McpSession option ${name} must be a positive number, got ${String(value)}`);
    }
  }
  if (options.maxInFlight !== undefined && !Number.isInteger(options.maxInFlight)) {
    return hostError('HOST_INVALID_OPTIONS', `McpSession option maxInFlight must be an integer, got ${options.maxInFlight}`);
  }
  return undefined;
}

function isArguments(value: unknown): value is Record<string, unknown> | undefined {
  return value === undefined || isRecord(value);
}

/**
 * A {@link PluginSession} for Shape 1 plugins: MCP over stdio, through the
 * official SDK `Client` on a process the host launched (verified and
 * sandboxed) rather than one the SDK spawns.
 *
 * The process starts on the first `listTools` or `callTool`; `initialize`
 * and the manifest check of `tools/list` run once per process. When the
 * process dies, the calls in flight fail (`PLUGIN_CRASHED` with the stderr
 * tail) and the next call starts a new process; deciding when to stop
 * retrying (quarantine) is the host's job.
 */
export class McpSession implements PluginSession, McpSurface {
  /** Always `mcp-plugin`. */
  readonly shape = 'mcp-plugin' as const;

  private readonly settings: McpConnectionSettings;
  private readonly subscribed = new Set<string>();
  private logLevel: LoggingLevel | undefined;
  private readonly limiter: InFlightLimiter;
  private readonly connections: LazyStart<McpConnection>;
  private launches = 0;
  private stdoutViolations = 0;

  /**
   * Checks the options (HOST_INVALID_OPTIONS) and builds a session; nothing
   * is launched until the first call.
   *
   * @param options - The launcher, the manifest's tools, timeouts and limits.
   */
  static create(options: McpSessionOptions): Result<McpSession, HostError> {
    const invalid = invalidOptions(options);
    return invalid === undefined ? ok(new McpSession(options)) : err(invalid);
  }

  private constructor(private readonly options: McpSessionOptions) {
    this.limiter = new InFlightLimiter(options.maxInFlight ?? DEFAULT_MCP_MAX_IN_FLIGHT);
    this.settings = {
      clientInfo: options.clientInfo ?? DEFAULT_MCP_CLIENT_INFO,
      expectedTools: options.expectedTools,
      validateListedTools: options.validateListedTools,
      startupTimeoutMs: options.startupTimeoutMs ?? DEFAULT_MCP_STARTUP_TIMEOUT_MS,
      defaultTimeoutMs: options.defaultTimeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS,
      maxTotalTimeoutMs: options.maxTotalTimeoutMs ?? DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS,
      maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      stdoutNoise: options.stdoutNoise ?? 'fail',
      clock: options.clock ?? systemClock,
      logger: options.logger ?? silentLogger,
      onToolsChanged: options.onToolsChanged,
      onNotice: options.onNotice,
      onStdoutViolation: () => {
        this.stdoutViolations++;
      },
      onStdoutNoise: options.onStdoutNoise,
      clientRequests: options.clientRequests,
      toolRecord: options.toolRecord,
    };
    this.connections = new LazyStart({
      start: (abandoned) => this.open(abandoned),
      isLive: (connection) => !connection.closed,
      discard: (connection) => connection.end(sessionClosedError(this.shape)),
      closedError: () => sessionClosedError(this.shape),
      ...(options.onUnseenStartFailure === undefined ? {} : { onUnseenFailure: options.onUnseenStartFailure }),
    });
  }

  /** The MCP protocol version negotiated with the running process, if one runs. */
  get protocolVersion(): string | undefined {
    return this.connections.live?.protocolVersion;
  }

  /** The running plugin's `serverInfo`, if one runs. */
  get serverInfo(): Implementation | undefined {
    return this.connections.live?.serverInfo;
  }

  /** Counters for monitoring and tests. */
  stats(): McpSessionStats {
    return { launches: this.launches, stdoutViolations: this.stdoutViolations, inFlight: this.limiter.inFlight, waiting: this.limiter.waiting };
  }

  /** The plugin's tools (starting it if needed); `PLUGIN_TOOLS_MISMATCH` when they do not match the manifest. */
  listTools(): ResultAsync<readonly ToolDescriptor[], HostError> {
    return new ResultAsync(
      this.connection().then((connection) => (connection.isErr() ? err(connection.error) : connection.value.checkedTools())),
    );
  }

  /**
   * Calls a tool. Success and `isError: true` results both come back `ok`
   * with the plugin's `CallToolResult`; protocol failures are `err` with a
   * registry code (`PLUGIN_TIMEOUT`, `PLUGIN_CANCELLED`, `PLUGIN_CRASHED`, …).
   */
  callTool(name: string, args: unknown, options: CallOptions = {}): ResultAsync<McpToolResult, HostError> {
    return new ResultAsync(this.call(name, args, options));
  }

  /** Resources, prompts, completions and logging of the plugin. */
  get surface(): McpSurface {
    return this;
  }

  /** The capabilities the plugin announced at `initialize`, starting it if needed. */
  capabilities(): ResultAsync<ServerCapabilities, HostError> {
    return new ResultAsync(this.connection()).map((c) => c.serverCapabilities);
  }

  /** One request beyond tools, starting the plugin if needed. */
  request<M extends McpSurfaceMethod>(method: M, params: McpSurfaceMethods[M]['params'], options: SurfaceRequestOptions = {}): ResultAsync<McpSurfaceMethods[M]['result'], HostError> {
    return new ResultAsync(this.connection()).andThen((c) => new ResultAsync(c.request(method, params, options)));
  }

  /** Every resource the plugin lists. */
  listResources(options?: SurfaceRequestOptions): ResultAsync<readonly Resource[], HostError> {
    return this.allPages('resources/list', options, (page) => page.resources);
  }

  /** Every resource template the plugin lists. */
  listResourceTemplates(options?: SurfaceRequestOptions): ResultAsync<readonly ResourceTemplate[], HostError> {
    return this.allPages('resources/templates/list', options, (page) => page.resourceTemplates);
  }

  /** Every prompt the plugin lists. */
  listPrompts(options?: SurfaceRequestOptions): ResultAsync<readonly Prompt[], HostError> {
    return this.allPages('prompts/list', options, (page) => page.prompts);
  }

  /** The URIs subscribed now. */
  get subscriptions(): ReadonlySet<string> {
    return this.subscribed;
  }

  /** Subscribes to a resource's updates; the subscription is made again on every new process of this session. */
  subscribe(uri: string): ResultAsync<void, HostError> {
    return this.request('resources/subscribe', { uri }).map(() => {
      this.subscribed.add(uri);
    });
  }

  /** Ends a subscription. */
  unsubscribe(uri: string): ResultAsync<void, HostError> {
    if (!this.subscribed.has(uri)) return okAsync(undefined);
    this.subscribed.delete(uri);
    const live = this.connections.live;
    if (live === undefined) return okAsync(undefined);
    return new ResultAsync(live.request('resources/unsubscribe', { uri })).map(() => undefined);
  }

  /** Sets the plugin's log level; it is set again on every new process of this session. */
  setLogLevel(level: LoggingLevel): ResultAsync<void, HostError> {
    return this.request('logging/setLevel', { level }).map(() => {
      this.logLevel = level;
    });
  }

  /** Takes over an earlier session's subscriptions and log level; the next process started gets them. */
  adopt(state: SurfaceState): void {
    for (const uri of state.subscriptions) this.subscribed.add(uri);
    if (state.logLevel !== undefined) this.logLevel = state.logLevel;
  }

  /** Fails calls in flight with `HOST_CLOSED`, stops the process, and refuses later calls. */
  async close(): Promise<void> {
    const connection = await this.connections.close();
    await connection?.end(sessionClosedError(this.shape));
  }

  private call(name: string, args: unknown, options: CallOptions): Promise<Result<McpToolResult, HostError>> {
    if (!isArguments(args)) {
      return Promise.resolve(
        err(hostError('INVALID_ARGS', `MCP tool arguments must be a JSON object, got ${Array.isArray(args) ? 'an array' : typeof args}`, { details: { tool: name } })),
      );
    }
    // Warm and uncontended, the common case, takes no promise hop and no timer before the request, and one reaction after it.
    const warm = options.signal?.aborted === true ? undefined : this.connections.live;
    const release = warm === undefined ? undefined : this.limiter.tryAcquire();
    if (warm !== undefined && release !== undefined) {
      const { presence } = options;
      let sent: Promise<Result<McpToolResult, HostError>>;
      try {
        sent = this.send(warm, name, args, options);
      } catch (error) {
        release();
        return Promise.reject(error);
      }
      presence?.sent();
      return sent.then(
        (outcome) => {
          release();
          presence?.settled();
          return outcome;
        },
        (error: unknown) => {
          release();
          presence?.settled();
          throw error;
        },
      );
    }
    const budget = { timeoutMs: options.timeoutMs ?? this.settings.defaultTimeoutMs, maxTotalTimeoutMs: options.maxTotalTimeoutMs ?? this.settings.maxTotalTimeoutMs };
    return this.callWithin(new CallWait(name, { ...options, ...budget }, this.settings.clock), args, options.caller, options.presence);
  }

  /**
   * A call that waits for a slot or for the plugin to start: the call's
   * timeout and signal count from the moment of the call, so the wait ends
   * with PLUGIN_TIMEOUT or PLUGIN_CANCELLED like the request itself would.
   * The start goes on without the call, to its own startup timeout: the next
   * call joins it, and its failure is reported even when no call is left
   * waiting (LazyStart's onUnseenFailure).
   */
  private async callWithin(
    wait: CallWait,
    args: Record<string, unknown> | undefined,
    caller: string | undefined,
    presence: CallPresence | undefined,
  ): Promise<Result<McpToolResult, HostError>> {
    const release = await this.limiter.acquire(wait.signal, caller);
    if (release === undefined) {
      wait.dispose();
      return err(wait.failure('a free slot'));
    }
    let sent = false;
    try {
      let c = this.connections.live;
      if (c === undefined) {
        const connection = await this.connections.join(wait.signal);
        if (connection === undefined) return err(wait.failure('the plugin to start'));
        if (connection.isErr()) return err(connection.error);
        c = connection.value;
      }
      const remaining = wait.remaining();
      wait.dispose();
      if (remaining === undefined) return err(wait.failure('the plugin to start'));
      const answer = this.send(c, wait.tool, args, remaining, wait.budget);
      sent = true;
      presence?.sent();
      return await answer;
    } finally {
      wait.dispose();
      release();
      if (sent) presence?.settled();
    }
  }

  private send(
    c: McpConnection,
    name: string,
    args: Record<string, unknown> | undefined,
    options: CallOptions,
    budget?: CallWait['budget'],
  ): Promise<Result<McpToolResult, HostError>> {
    if (options.signal?.aborted) return Promise.resolve(err(this.cancelledBeforeSending(name)));
    if (c.mismatch !== undefined) return Promise.resolve(err(c.mismatch));
    if (!c.lists(name)) {
      const listed = c.toolDescriptors.map((t) => t.name);
      return Promise.resolve(err(hostError('PLUGIN_TOOL_NOT_EXPOSED', `plugin does not list a tool named "${name}"`, { details: { tool: name, listed } })));
    }
    return c.callTool(name, args, options, budget);
  }

  private connection(): Promise<Result<McpConnection, HostError>> {
    return this.connections.get();
  }

  private async open(abandoned: AbortSignal): Promise<Result<McpConnection, HostError>> {
    const launched = await this.options.launch();
    if (launched.isErr()) return err(launched.error);
    this.launches++;
    if (abandoned.aborted) {
      await launched.value.stop();
      return err(sessionClosedError(this.shape));
    }
    const opened = await McpConnection.open(launched.value, this.settings, abandoned);
    if (opened.isOk()) await this.restoreSurface(opened.value);
    return opened;
  }

  /**
   * A new process of this session gets the log level and subscriptions its
   * predecessor had. A subscription it refuses (or no longer offers) is
   * dropped and reported; the start itself succeeds.
   */
  private async restoreSurface(c: McpConnection): Promise<void> {
    const level = this.logLevel === undefined ? undefined : c.request('logging/setLevel', { level: this.logLevel });
    const subscriptions = [...this.subscribed].map(async (uri) => ({ uri, outcome: await c.request('resources/subscribe', { uri }) }));
    const leveled = await level;
    if (leveled?.isErr() === true) this.settings.logger.warn({ pid: c.process.pid, code: leveled.error.code }, 'could not set the log level again on a new plugin process');
    for (const { uri, outcome } of await Promise.all(subscriptions)) {
      if (outcome.isOk()) continue;
      this.subscribed.delete(uri);
      this.settings.logger.warn({ pid: c.process.pid, code: outcome.error.code, uri }, 'a new plugin process refused a subscription of its predecessor');
      this.options.onNotice?.({ kind: 'subscription_lost', uri, error: outcome.error });
    }
  }

  private allPages<M extends 'resources/list' | 'resources/templates/list' | 'prompts/list', T>(
    method: M,
    options: SurfaceRequestOptions | undefined,
    items: (page: McpSurfaceMethods[M]['result']) => readonly T[],
  ): ResultAsync<readonly T[], HostError> {
    const read = async (): Promise<Result<readonly T[], HostError>> => {
      const all: T[] = [];
      let cursor: string | undefined;
      let bytes = 0;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const answer = await this.request(method, (cursor === undefined ? {} : { cursor }) as McpSurfaceMethods[M]['params'], options);
        if (answer.isErr()) return err(answer.error);
        const pageItems = items(answer.value);
        all.push(...pageItems);
        cursor = answer.value.nextCursor;
        if (cursor === undefined) return ok(all);
        // The items as JSON: what the page holds in the host, whatever whitespace its line had.
        bytes += Buffer.byteLength(JSON.stringify(pageItems));
        if (bytes > MAX_LIST_BYTES) {
          return err(
            hostError('PLUGIN_MALFORMED_RESPONSE', `plugin's ${method} took more than ${MAX_LIST_BYTES} bytes in ${page + 1} pages`, {
              details: { phase: method, pages: page + 1, max_list_bytes: MAX_LIST_BYTES },
            }),
          );
        }
      }
      return err(hostError('PLUGIN_MALFORMED_RESPONSE', `plugin's ${method} did not end after ${MAX_LIST_PAGES} pages`, { details: { phase: method } }));
    };
    return new ResultAsync(read());
  }

  private cancelledBeforeSending(tool: string): HostError {
    return hostError('PLUGIN_CANCELLED', `tools/call of "${tool}" was cancelled by its caller before it was sent`, {
      details: { phase: 'tools/call', tool },
    });
  }
}
