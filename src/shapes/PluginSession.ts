import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ResultAsync } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import type { ProfileOutcome } from '../manifest/outputProfiles.js';
import type { PluginShape } from '../manifest/model.js';
import type { PluginProcess } from '../process/PluginProcess.js';
import type { CallClientRequests } from './mcp/clientRequests.js';
import type { McpSurface } from './mcp/McpSurface.js';

/**
 * Starts the plugin's process: verify the executable binding, sandbox, spawn.
 * Sessions call it lazily (on first use) and again when a protocol launches
 * once per call.
 */
export type ProcessLauncher = () => ResultAsync<PluginProcess, HostError>;

/** A tool as the plugin describes it, names unprefixed. */
export interface ToolDescriptor {
  /** The tool's unprefixed name. */
  readonly name: string;
  /** What it does. */
  readonly description?: string;
  /** Its JSON Schema for arguments, when the protocol carries one. */
  readonly inputSchema?: unknown;
  /** A display name for people (MCP `title`), when the plugin gives one. */
  readonly title?: string;
  /** The JSON Schema of its `structuredContent` (MCP `outputSchema`), when the plugin declares one. */
  readonly outputSchema?: unknown;
  /**
   * Set when the host does not check this tool's `structuredContent` against
   * its `outputSchema`: the schema is past a bound of the host's compile
   * (etc/plugin-answers.json) named here, `process_budget` when it was new
   * after the plugin's process had compiled its budget of schemas. The tool
   * is callable; its results are passed on as the plugin wrote them.
   */
  readonly outputSchemaUnchecked?: 'bytes' | 'depth' | 'nodes' | 'patterns' | 'json' | 'expansion' | 'process_budget';
  /** MCP tool annotations (`readOnlyHint`, `destructiveHint`, `title`, …) as the plugin states them: hints, not guarantees. */
  readonly annotations?: Readonly<Record<string, unknown>>;
}

/** Progress reported by a plugin during a call. */
export interface CallProgress {
  /** Units of work done so far. */
  readonly progress: number;
  /** Total units, when known. */
  readonly total?: number;
  /** A message for people. */
  readonly message?: string;
}

/**
 * Told when a call reaches its plugin and when it leaves it, so that what the
 * plugin does meanwhile can be put down to the call (a gateway sends a
 * plugin's log messages to the client whose calls are at it). One object may
 * serve many calls: it is told once per call each way.
 */
export interface CallPresence {
  /** The call was sent to the plugin's process and holds one of its in-flight slots. */
  sent(): void;
  /** The call no longer holds its slot: the plugin answered it, or was told to cancel it. */
  settled(): void;
}

/** Per-call options shared by every protocol. */
export interface CallOptions {
  /** Time allowed without an answer (reset by progress where the protocol has it), in ms. */
  readonly timeoutMs?: number;
  /** Hard cap on the whole call, progress or not, in ms. */
  readonly maxTotalTimeoutMs?: number;
  /** Cancels the call; the protocol tells the plugin where it can. */
  readonly signal?: AbortSignal;
  /** Receives progress notifications. */
  readonly onProgress?: (progress: CallProgress) => void;
  /** Who answers the plugin's requests to its client during the call (MCP-speaking shapes); absent: the host's callbacks. */
  readonly clientRequests?: CallClientRequests;
  /**
   * Whose call this is, for sharing the session's in-flight slots: calls
   * waiting for a slot are served caller by caller in turn, so that one
   * caller's backlog does not hold up another's calls. Absent: the application's.
   */
  readonly caller?: string;
  /** Told when the call is sent and when it settles at the plugin (MCP-speaking shapes, whose plugins log to their client). */
  readonly presence?: CallPresence;
}

/** What a tool call returned, before the host maps plugin-local errors. */
export interface ToolResult {
  /**
   * The protocol's payload: an MCP `CallToolResult`, an ndjson-rpc response's
   * `result` or `error` object, or a handshake execute response.
   */
  readonly value: unknown;
  /** Whether the plugin reported an application-level failure. */
  readonly isError: boolean;
}

/** A tool result of an MCP-speaking plugin (`mcp-plugin`, `esm-module`), as `PluginHost.call` returns it. */
export interface McpCallResult extends ToolResult {
  /** The shape that answered. */
  readonly shape: 'mcp-plugin' | 'esm-module';
  /** The plugin's MCP `CallToolResult` (`content`, `structuredContent`, `_meta`), shaped by the variant's output profile if it binds one. */
  readonly value: CallToolResult;
  /** What the variant's output profile did to the result, when one applied. */
  readonly profile?: ProfileOutcome;
}

/** A tool result of an `ndjson-rpc` or `handshake` plugin, as `PluginHost.call` returns it. */
export interface ProtocolCallResult extends ToolResult {
  /** The shape that answered. */
  readonly shape: 'ndjson-rpc' | 'handshake';
  /** What the variant's output profile did to the result, when one applied. */
  readonly profile?: ProfileOutcome;
}

/**
 * What `PluginHost.call` returns: a {@link ToolResult} that names the shape
 * that answered, so that checking `shape` types `value` (an MCP
 * `CallToolResult` for the MCP-speaking shapes).
 */
export type CallResult = McpCallResult | ProtocolCallResult;

/**
 * One interface over every protocol: list tools, call a tool with timeout,
 * cancellation and progress, close. Protocol failures are `HostError`s with a
 * registry code; application failures come back as `ToolResult.isError`.
 */
export interface PluginSession {
  /** Which protocol this session speaks. */
  readonly shape: PluginShape;
  /** The tools the plugin offers. */
  listTools(): ResultAsync<readonly ToolDescriptor[], HostError>;
  /** Calls one tool. */
  callTool(name: string, args: unknown, options?: CallOptions): ResultAsync<ToolResult, HostError>;
  /** Resources, prompts, completions and logging, for the shapes that speak MCP. */
  readonly surface?: McpSurface;
  /** Ends the session and stops its process, if one runs. */
  close(): Promise<void>;
}
