import { ErrorCode, McpError, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { HostError, hostError } from '../../errors/HostError.js';
import { ERROR_CODES, type ErrorCodeInfo, type HostErrorCode } from '../../errors/registry.js';
import type { Clock } from '../../ports/ports.js';
import type { PluginProcess } from '../../process/PluginProcess.js';
import { crashOrLimit, exitWithin } from '../../process/exitInfo.js';
import type { AbortedBy } from './DirectToolCalls.js';
import type { McpSurfaceMethod } from './McpSurface.js';

/** Which exchange of the MCP session failed. */
export type McpPhase = 'initialize' | 'tools/list' | 'tools/call' | McpSurfaceMethod;

/** What the session knows when an SDK request fails. */
export interface McpFailureContext {
  readonly phase: McpPhase;
  readonly process: PluginProcess;
  readonly clock: Clock;
  /** How long to wait for the exit status of a plugin that closed the connection. */
  readonly exitGraceMs: number;
  /** Why the host ended the connection, when it did (a stdout violation, the session closing). */
  readonly fatal: HostError | undefined;
  /** Whether the plugin ended the connection (exited or closed stdout). */
  readonly connectionClosed: boolean;
  /**
   * Whether the connection is over, whoever ended it. A ConnectionClosed
   * error means a closed connection only then: a plugin may answer a
   * request with that code (-32000, the first server error) itself.
   */
  readonly transportClosed?: boolean;
  /** The tool being called, for `tools/call`. */
  readonly tool?: string;
  /** The per-request timeout in force. */
  readonly timeoutMs: number;
  /** The total cap in force. */
  readonly maxTotalTimeoutMs?: number;
  /** Who aborted the request, when the session aborted it. */
  readonly abortedBy?: AbortedBy;
  /** The protocolVersion the plugin answered `initialize` with, when it answered. */
  readonly offeredProtocolVersion?: string;
  /** The unfinished line the plugin left when its stdout ended. */
  readonly partialLine?: string;
}

const byJsonRpcCode = new Map<number, HostErrorCode>();
for (const [code, info] of Object.entries(ERROR_CODES) as [HostErrorCode, ErrorCodeInfo][]) {
  if (info.spellings?.jsonrpc !== undefined) byJsonRpcCode.set(info.spellings.jsonrpc, code);
}

function where(ctx: McpFailureContext): string {
  return ctx.tool === undefined ? ctx.phase : `${ctx.phase} of "${ctx.tool}"`;
}

function baseDetails(ctx: McpFailureContext): Record<string, unknown> {
  const details: Record<string, unknown> = { phase: ctx.phase, stderr_tail: ctx.process.stderrTail() };
  if (ctx.tool !== undefined) details.tool = ctx.tool;
  return details;
}

async function crashed(ctx: McpFailureContext, cause: unknown): Promise<HostError> {
  const exit = await exitWithin(ctx.process, ctx.exitGraceMs, ctx.clock);
  const details = {
    ...baseDetails(ctx),
    ...(exit === undefined ? {} : { exit }),
    ...(ctx.partialLine === undefined ? {} : { partial_line: ctx.partialLine }),
  };
  const how = exit === undefined ? 'closed its stdout' : exit.description;
  return crashOrLimit(hostError('PLUGIN_CRASHED', `plugin ${how} during ${where(ctx)}`, { details, cause }), ctx.process, exit);
}

// The hint travels with the failure: a connection's own (a tool list that varied between starts of the same code) said
// more than the registry's, and a call that met it after the connection ended got "Make advertised_tools match".
function withContext(fatal: HostError, ctx: McpFailureContext): HostError {
  return new HostError(fatal.code, `${fatal.message} (during ${where(ctx)})`, {
    details: { ...baseDetails(ctx), ...fatal.details },
    cause: fatal.cause,
    hint: fatal.hint,
  });
}

function timeout(ctx: McpFailureContext, total: boolean, cause: unknown): HostError {
  const details = { ...baseDetails(ctx), ...(total ? { max_total_timeout_ms: ctx.maxTotalTimeoutMs } : { timeout_ms: ctx.timeoutMs }) };
  const message = total
    ? `plugin did not finish ${where(ctx)} within the total cap of ${ctx.maxTotalTimeoutMs} ms`
    : `plugin did not answer ${where(ctx)} within ${ctx.timeoutMs} ms`;
  return hostError('PLUGIN_TIMEOUT', message, { details, cause });
}

/**
 * Codes with which a plugin says it could not parse or accept the request. A
 * well-formed error object carrying one is the plugin's answer, which a
 * client's arguments may provoke, not a protocol violation by the plugin: it
 * must not map to the quarantine codes these numbers spell for the host's
 * own findings, or one client could quarantine the plugin for all.
 */
const REJECTED_REQUEST_CODES: ReadonlySet<number> = new Set([ErrorCode.ParseError, ErrorCode.InvalidRequest]);

// PLUGIN_INTERNAL_ERROR's own hint, "See the plugin stderr.", points at nothing when the plugin wrote nothing there: mcp-mermaid@0.4.1
// answers -32603 "browserType.launch: Executable doesn't exist at <data dir>/.cache/ms-playwright/…" (Chromium, which its postinstall
// downloads, never came) with an empty stderr. Its message is then all there is, and for an npm server `info` names the skipped scripts.
const SILENT_INTERNAL_ERROR_HINT =
  "The plugin had written nothing on stderr when it answered: its message (details.jsonrpc_message) is all it said of the cause. When that names a file it cannot find (a browser, a native addon, a platform binary), see the risk that 'info <plugin>' shows: the packages of an npm server whose install scripts, which fetch or build such files, never ran.";

// A successful result whose structuredContent breaks the outputSchema the tool listed (or that has none): the plugin's own
// contradiction, refused as the SDK client refuses it. A tool error is exempt (McpConnection), so this is never a failure report.
const OUTPUT_SCHEMA_HINT =
  "The tool listed an outputSchema, and this successful result's structuredContent does not match it (or is missing): the plugin contradicts itself, which its author must fix (the schema or the result). Its stderr (details.stderr_tail) may show what went wrong underneath; 'tools <plugin>' shows the schema it lists.";

function jsonRpcFailure(error: McpError, ctx: McpFailureContext): HostError {
  // The SDK reports a tool result that breaks the tool's own outputSchema as -32602/-32600;
  // that is the plugin's malformed answer, not our params.
  // Invalid params of a tools/call are the tool's arguments, which the caller chose.
  const schemaBroken = /structured content/i.test(error.message);
  const code = schemaBroken
    ? 'PLUGIN_MALFORMED_RESPONSE'
    : ctx.phase === 'tools/call' && error.code === ErrorCode.InvalidParams
      ? 'INVALID_ARGS'
      : REJECTED_REQUEST_CODES.has(error.code)
        ? 'PLUGIN_REQUEST_REJECTED'
        : (byJsonRpcCode.get(error.code) ?? 'PLUGIN_INTERNAL_ERROR');
  const details = baseDetails(ctx);
  const silent = code === 'PLUGIN_INTERNAL_ERROR' && String(details['stderr_tail']).trim() === '';
  // The check is the host's own (McpConnection, as the SDK client's): no JSON-RPC error was answered, and the registry's hint
  // for a malformed answer ("Send exactly one of result and error") is about another fault.
  const message = schemaBroken
    ? `plugin answered ${where(ctx)} with a result its tool's outputSchema rejects: ${error.message.replace(/^MCP error -?\d+: /, '')}`
    : `plugin answered ${where(ctx)} with JSON-RPC error ${error.code}: ${error.message}`;
  return hostError(code, message, {
    ...(silent ? { hint: SILENT_INTERNAL_ERROR_HINT } : schemaBroken ? { hint: OUTPUT_SCHEMA_HINT } : {}),
    details: {
      ...details,
      jsonrpc_code: error.code,
      // McpError prefixes the plugin's message with `MCP error <code>: `.
      ...(schemaBroken ? {} : { jsonrpc_message: error.message.replace(/^MCP error -?\d+: /, '') }),
      ...(error.data === undefined ? {} : { jsonrpc_data: error.data }),
    },
    cause: error,
  });
}

function initializeFailure(error: unknown, ctx: McpFailureContext): HostError {
  const offered = ctx.offeredProtocolVersion;
  if (offered !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(offered)) {
    return hostError('PLUGIN_PROTOCOL_VERSION_MISMATCH', `plugin speaks MCP ${offered}, which this host does not support`, {
      details: { ...baseDetails(ctx), offered, supported: [...SUPPORTED_PROTOCOL_VERSIONS] },
      cause: error,
    });
  }
  const reason = error instanceof Error ? error.message : String(error);
  const details = { ...baseDetails(ctx), reason, ...(error instanceof McpError ? { jsonrpc_code: error.code } : {}) };
  // The registry's hint speaks of a handshake line, which an MCP server that is merely slow to start never got wrong:
  // published servers with large trees (mongodb-mcp-server, @elastic/mcp-server-elasticsearch) miss 30 s on a loaded machine.
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return hostError('PLUGIN_HANDSHAKE_FAILED', `plugin did not answer initialize within ${ctx.timeoutMs} ms: ${reason}`, {
      details: { ...details, timeout_ms: ctx.timeoutMs },
      cause: error,
      hint: 'A server that loads a large tree, or any server on a busy machine, may need longer to start: raise startupTimeoutMs (a host option, or plugins.<plugin_id>.startupTimeoutMs for this plugin alone). details.stderr_tail shows what it printed meanwhile.',
    });
  }
  return hostError('PLUGIN_HANDSHAKE_FAILED', `plugin did not complete the MCP initialize exchange: ${reason}`, { details, cause: error });
}

/**
 * Turns whatever an SDK request rejected with into a registry error: abort
 * and time caps first (the session knows who aborted), then a connection the
 * host ended on purpose, then the SDK's own codes.
 */
export async function mapMcpFailure(error: unknown, ctx: McpFailureContext): Promise<HostError> {
  if (ctx.abortedBy === 'caller') {
    const details: Record<string, unknown> = { phase: ctx.phase };
    if (ctx.tool !== undefined) details.tool = ctx.tool;
    return hostError('PLUGIN_CANCELLED', `${where(ctx)} was cancelled by its caller`, { details, cause: error });
  }
  if (ctx.abortedBy === 'total-timeout') return timeout(ctx, true, error);
  if (ctx.abortedBy === 'timeout') return timeout(ctx, false, error);
  if (ctx.fatal !== undefined) return withContext(ctx.fatal, ctx);
  if (ctx.connectionClosed || (error instanceof McpError && error.code === ErrorCode.ConnectionClosed && ctx.transportClosed !== false)) return crashed(ctx, error);
  if (ctx.phase === 'initialize') return initializeFailure(error, ctx);
  if (error instanceof McpError) {
    // The transport's own verdict on this one request (an answer over the frame cap).
    if (error.data instanceof HostError) return withContext(error.data, ctx);
    // A tools/call's own timeouts come with abortedBy; -32001 in its answer is the plugin's error, not the host's clock.
    if (error.code === ErrorCode.RequestTimeout && ctx.phase !== 'tools/call') {
      const data = error.data as { maxTotalTimeout?: unknown } | undefined;
      return timeout(ctx, data?.maxTotalTimeout !== undefined, error);
    }
    return jsonRpcFailure(error, ctx);
  }
  const reason = error instanceof Error ? error.message : String(error);
  return hostError('PLUGIN_MALFORMED_RESPONSE', `plugin answered ${where(ctx)} with a result that does not match the MCP schema: ${reason}`, {
    details: { ...baseDetails(ctx), reason },
    cause: error,
  });
}
