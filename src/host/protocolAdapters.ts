/**
 * One adapter per plugin shape: everything the host does differently for a
 * protocol lives here, so the host itself never switches on the shape.
 */
import { err, ok, type Result, type ResultAsync } from 'neverthrow';
import { verifyExecutableBinding, type ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import { verifyModuleEntry } from '../binding/ModuleEntryBinding.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { mapMcpToolResult, type McpToolResultValue, type PluginErrorContext } from '../error-mapper/ErrorMapper.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { Clock, Logger, Random } from '../ports/ports.js';
import type { VerifiedExecutable } from '../process/VerifiedExecutable.js';
import { esmRunnerCommand } from '../shapes/esm/esmRunnerCommand.js';
import type { EsmHostLoaderOptions } from '../shapes/esm/EsmLoaderOptions.js';
import { checkListedTools } from '../shapes/esm/validateTools.js';
import { EsmSession } from '../shapes/esm/EsmSession.js';
import { issueRunnerReportSeal } from '../shapes/esm/runnerReportSeal.js';
import { HandshakeSession } from '../shapes/handshake/HandshakeSession.js';
import { McpSession } from '../shapes/mcp/McpSession.js';
import type { ClientRequestReport } from '../shapes/mcp/clientRequests.js';
import type { McpPluginNotice } from '../shapes/mcp/McpSurface.js';
import { NdjsonRpcSession } from '../shapes/ndjson-rpc/NdjsonRpcSession.js';
import type { PluginShape } from '../manifest/model.js';
import type { CallResult, McpCallResult, PluginSession, ProcessLauncher, ProtocolCallResult, ToolResult } from '../shapes/PluginSession.js';
import { clientRequestSettings } from './clientRequests.js';
import { pluginRunSettings, type HostConfig, type PluginRunSettings } from './hostConfig.js';
import type { ToolListRecords } from './toolListRecords.js';

/** What an adapter builds a session from. */
export interface SessionContext {
  /** The installed plugin. */
  readonly plugin: InstalledPlugin;
  /** Starts one verified, sandboxed process of the plugin. */
  readonly launch: ProcessLauncher;
  /** The host's resolved options. */
  readonly config: HostConfig;
  /** Time source for the protocol's timeouts. */
  readonly clock: Clock;
  /** Structured logs. */
  readonly logger: Logger;
  /** Randomness for request ids. */
  readonly random: Random;
  /**
   * Told each stdout line the plugin wrote that is not its protocol's
   * (dropped under the `tolerate` policy), up to a budget per process; past
   * it, summaries: an empty `line` and the count of lines not told (`suppressed`).
   */
  readonly onStdoutNoise: (line: string, suppressed?: number) => void;
  /** Told each list_changed, resource update and log message an MCP-speaking plugin sends. */
  readonly onNotice: (notice: McpPluginNotice) => void;
  /** Told when a start failed after every call waiting for it left (a failure no call reports), for the crash policy. */
  readonly onUnseenStartFailure: (failure: HostError) => void;
  /** Told how each request to its client an MCP-speaking plugin sends (of a kind it declares) ended. */
  readonly onClientRequest: (report: ClientRequestReport) => void;
  /** The tool lists verified at earlier starts, by pinned code; undefined: every start lists before its first call. */
  readonly toolLists?: ToolListRecords;
}

/** What an adapter verifies a plugin's main file with. */
export interface VerifyContext {
  /** Where verified copies of executables are written. */
  readonly copyDir: string;
  /** Randomness for the copies' names. */
  readonly random: Random;
  /** The host's resolved options. */
  readonly config: HostConfig;
  /** Whether the launcher mounts a Node main module's verified copy at its path (bubblewrap), which spares the integrity policy. */
  readonly launcherMountsMain: boolean;
}

/**
 * How far a failure reaches when its protocol says less than the host's
 * default (stop the plugin and count the failure toward quarantine): `call`
 * fails only the call concerned and the process keeps running; `sticky`
 * stops the process and reports the failure to every later call until the
 * plugin is reloaded, without the crash books.
 */
export type FailureScope = 'call' | 'sticky';

/** How the host runs plugins of one shape. */
export interface ProtocolAdapter {
  /** The shape this adapter serves. */
  readonly shape: PluginShape;
  /**
   * Whether each call launches its own process: a failed launch is then that
   * call's, and the session's other calls go on; otherwise a failure is the
   * shared process's and stops the session.
   */
  readonly processPerCall: boolean;
  /** The plugin's protocol session (it launches its process lazily). */
  createSession(context: SessionContext): Result<PluginSession, HostError>;
  /** The pinned main file (the executable, or the ESM entry under the runner), verified and ready to run. */
  verifyMain(binding: ExecutableBindingRecord, context: VerifyContext): ResultAsync<VerifiedExecutable, HostError>;
  /** The program the process starts with when the binding pins no interpreter (its directory goes on the plugin's PATH). */
  runnerPath(config: HostConfig): string | undefined;
  /**
   * A result the plugin returned: an application error the protocol defines
   * becomes the mapped host error, whose details carry `context`.
   */
  mapResult(result: ToolResult, context: Required<PluginErrorContext>): Result<CallResult, HostError>;
  /** Where a failure counted against the plugin stops, by its run settings; `undefined` (or no method) keeps the host's default. */
  failureScope?(failure: HostError, run: PluginRunSettings): FailureScope | undefined;
}

const toolNames = (plugin: InstalledPlugin): string[] => [...new Set(plugin.variants.map((v) => v.tool_name))];

/** The options every MCP-speaking session takes from the host and the plugin's run settings. */
function mcpSessionOptions(context: SessionContext, shape: 'mcp-plugin' | 'esm-module'): Parameters<typeof McpSession.create>[0] {
  const config = context.config;
  const run = pluginRunSettings(config, context.plugin.plugin_id);
  const clientRequests = clientRequestSettings(context.plugin, config, context.onClientRequest);
  const expectedTools = toolNames(context.plugin);
  return {
    launch: context.launch,
    clock: context.clock,
    logger: context.logger,
    expectedTools,
    ...(context.toolLists === undefined ? {} : { toolRecord: context.toolLists.recordFor(context.plugin, expectedTools) }),
    defaultTimeoutMs: run.callTimeoutMs,
    maxTotalTimeoutMs: config.maxTotalTimeoutMs,
    startupTimeoutMs: run.startupTimeoutMs,
    maxFrameBytes: run.maxFrameBytes,
    maxInFlight: run.maxInFlight ?? config.maxInFlight[shape],
    stdoutNoise: run.stdout === 'strict' ? 'fail' : 'tolerate',
    onStdoutNoise: context.onStdoutNoise,
    ...(clientRequests === undefined ? {} : { clientRequests }),
    ...(config.clientInfo === undefined ? {} : { clientInfo: config.clientInfo }),
    onNotice: context.onNotice,
    onUnseenStartFailure: context.onUnseenStartFailure,
    onToolsChanged: (change) => context.onNotice({ kind: 'list_changed', list: 'tools', ...(change.mismatch === undefined ? {} : { mismatch: change.mismatch }) }),
  };
}

/** An MCP result, by the result semantics of the error mapper (MCP-native errors and GUM envelopes). */
const mapMcpResult =
  (shape: McpCallResult['shape']) =>
  (result: ToolResult, context: Required<PluginErrorContext>): Result<CallResult, HostError> =>
    mapMcpToolResult(result.value as McpCallResult['value'] & McpToolResultValue, context).map((value) => ({ shape, value, isError: false }));

/** Protocols whose application errors reach the caller as `isError` results. */
const keepResult =
  (shape: ProtocolCallResult['shape']) =>
  (result: ToolResult): Result<CallResult, HostError> =>
    ok({ shape, value: result.value, isError: result.isError });

const verifyExecutable = (binding: ExecutableBindingRecord, context: VerifyContext): ResultAsync<VerifiedExecutable, HostError> =>
  verifyExecutableBinding(binding, { copyDir: context.copyDir, random: context.random, launcherMountsMain: context.launcherMountsMain });

const mcpPlugin: ProtocolAdapter = {
  shape: 'mcp-plugin',
  processPerCall: false,
  createSession: (context) => McpSession.create(mcpSessionOptions(context, 'mcp-plugin')),
  verifyMain: verifyExecutable,
  runnerPath: () => undefined,
  mapResult: mapMcpResult('mcp-plugin'),
};

const strictModes = ({ strictCapabilities, strictTools }: EsmHostLoaderOptions): EsmHostLoaderOptions => ({
  ...(strictCapabilities === undefined ? {} : { strictCapabilities }),
  ...(strictTools === undefined ? {} : { strictTools }),
});

const esmModule: ProtocolAdapter = {
  shape: 'esm-module',
  processPerCall: false,
  // The ESM runner serves the plugin over MCP; its launcher starts the runner on the verified entry.
  createSession: (context) => {
    const { validateTool } = context.config.esmLoader;
    const listedToolCheck = validateTool === undefined ? {} : { validateListedTools: checkListedTools(context.plugin.plugin_id, validateTool) };
    return EsmSession.create({ ...mcpSessionOptions(context, 'esm-module'), ...listedToolCheck });
  },
  verifyMain: (binding, context) => {
    const runnerArgv = context.config.esmRunnerArgv;
    return verifyModuleEntry(binding, { copyDir: context.copyDir, random: context.random }).andThen((verifiedEntry) =>
      // A fresh seal per start: the runner's reports made before the plugin's code runs are believed by it (runnerReportSeal.ts).
      issueRunnerReportSeal(context.copyDir, context.random)
        .orElse((error) => {
          verifiedEntry.release();
          return err(error);
        })
        .andThen((reportSeal) =>
          esmRunnerCommand(binding.install_root, { verifiedEntry, reportSeal, ...strictModes(context.config.esmLoader), ...(runnerArgv === undefined ? {} : { runnerArgv }) }),
        ),
    );
  },
  runnerPath: (config) => config.esmRunnerArgv?.[0] ?? process.execPath,
  mapResult: mapMcpResult('esm-module'),
};

/** An ndjson-rpc answer that is not JSON, breaks the response shape, or crosses the frame cap. */
const MALFORMED_ANSWER_CODES: ReadonlySet<string> = new Set(['PLUGIN_INVALID_JSON', 'PLUGIN_MALFORMED_RESPONSE', 'PLUGIN_FRAME_TOO_LARGE']);

const ndjsonRpc: ProtocolAdapter = {
  shape: 'ndjson-rpc',
  processPerCall: false,
  createSession: (context) => {
    const config = context.config;
    const run = pluginRunSettings(config, context.plugin.plugin_id);
    return NdjsonRpcSession.create({
      launch: context.launch,
      clock: context.clock,
      logger: context.logger,
      tools: toolNames(context.plugin),
      respawn: run.ndjsonCrash === 'respawn',
      callTimeoutMs: run.callTimeoutMs,
      maxTotalTimeoutMs: config.maxTotalTimeoutMs,
      maxInFlight: run.maxInFlight ?? config.maxInFlight['ndjson-rpc'],
      maxFrameBytes: run.maxFrameBytes,
    });
  },
  verifyMain: verifyExecutable,
  runnerPath: () => undefined,
  mapResult: keepResult('ndjson-rpc'),
  // The mcptest protocol leaves the child running after a malformed answer, and a crash stays the answer to every later call.
  failureScope: (failure, run) => {
    if (MALFORMED_ANSWER_CODES.has(failure.code)) return run.ndjsonMalformed === 'fail-call' ? 'call' : undefined;
    if (failure.code === 'PLUGIN_CRASHED' || failure.code === 'PLUGIN_RESOURCE_LIMIT') return run.ndjsonCrash === 'sticky' ? 'sticky' : undefined;
    return undefined;
  },
};

const handshake: ProtocolAdapter = {
  shape: 'handshake',
  processPerCall: true,
  createSession: (context) => {
    const id = context.plugin.plugin_id;
    const run = pluginRunSettings(context.config, id);
    return HandshakeSession.create({
      launch: context.launch,
      clock: context.clock,
      logger: context.logger,
      random: context.random,
      pluginId: id,
      allowedCapabilities: context.config.handshakeCapabilities[id] ?? [],
      maxTotalTimeoutMs: context.config.maxTotalTimeoutMs,
      timeouts: { handshakeMs: run.handshakeTimeoutMs, invokeMs: run.callTimeoutMs },
      maxFrameBytes: run.maxFrameBytes,
    });
  },
  verifyMain: verifyExecutable,
  runnerPath: () => undefined,
  mapResult: keepResult('handshake'),
};

const ADAPTERS: ReadonlyMap<string, ProtocolAdapter> = new Map([mcpPlugin, esmModule, ndjsonRpc, handshake].map((a) => [a.shape, a]));

/** The adapter of `plugin`'s shape, or PLUGIN_SHAPE_UNSUPPORTED for a shape no adapter runs. */
export function protocolAdapter(plugin: InstalledPlugin): Result<ProtocolAdapter, HostError> {
  const shape = plugin.descriptor?.shape ?? 'mcp-plugin';
  const adapter = ADAPTERS.get(shape);
  if (adapter !== undefined) return ok(adapter);
  const id = plugin.plugin_id;
  return err(hostError('PLUGIN_SHAPE_UNSUPPORTED', `plugin '${id}' has shape ${shape}, which this host cannot run from an install`, { details: { plugin_id: id, shape } }));
}
