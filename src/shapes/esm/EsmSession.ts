import type { Result, ResultAsync } from 'neverthrow';
import type { HostError } from '../../errors/HostError.js';
import { McpSession, type McpSessionOptions, type McpSessionStats } from '../mcp/McpSession.js';
import type { McpToolResult } from '../mcp/McpConnection.js';
import type { McpSurface } from '../mcp/McpSurface.js';
import type { CallOptions, PluginSession, ToolDescriptor } from '../PluginSession.js';
import { esmRunnerFailure } from './runnerDiagnostic.js';

/**
 * A {@link PluginSession} for an `esm-module` plugin run in the ESM runner
 * subprocess (see {@link esmRunnerCommand}): an {@link McpSession} whose
 * launcher starts the runner, with the runner's load failures reported under
 * their own codes (PLUGIN_ENTRY_INVALID, PLUGIN_CAPABILITY_MISMATCH, …)
 * instead of PLUGIN_CRASHED.
 */
export class EsmSession implements PluginSession {
  /** Always `esm-module`. */
  readonly shape = 'esm-module' as const;
  readonly #inner: McpSession;
  readonly #surface: McpSurface;

  /** Checks the options as {@link McpSession.create} does; `launch` starts the runner. Nothing is launched yet. */
  static create(options: McpSessionOptions): Result<EsmSession, HostError> {
    const unseen = options.onUnseenStartFailure;
    // A start no caller waited for is judged on the same report as one a caller saw.
    const mapped = unseen === undefined ? options : { ...options, onUnseenStartFailure: (failure: HostError) => unseen(esmRunnerFailure(failure)) };
    return McpSession.create(mapped).map((inner) => new EsmSession(inner));
  }

  private constructor(inner: McpSession) {
    this.#inner = inner;
    // The runner's load failures keep their own codes here too, as for tool calls.
    this.#surface = {
      capabilities: () => inner.capabilities().mapErr(esmRunnerFailure),
      listResources: (options) => inner.listResources(options).mapErr(esmRunnerFailure),
      listResourceTemplates: (options) => inner.listResourceTemplates(options).mapErr(esmRunnerFailure),
      listPrompts: (options) => inner.listPrompts(options).mapErr(esmRunnerFailure),
      request: (method, params, options) => inner.request(method, params, options).mapErr(esmRunnerFailure),
      subscribe: (uri) => inner.subscribe(uri).mapErr(esmRunnerFailure),
      unsubscribe: (uri) => inner.unsubscribe(uri).mapErr(esmRunnerFailure),
      get subscriptions() {
        return inner.subscriptions;
      },
      setLogLevel: (level) => inner.setLogLevel(level).mapErr(esmRunnerFailure),
      adopt: (state) => inner.adopt(state),
    };
  }

  /** Resources, prompts, completions and logging of the plugin, served by the runner. */
  get surface(): McpSurface {
    return this.#surface;
  }

  /** Counters of the underlying MCP session. */
  stats(): McpSessionStats {
    return this.#inner.stats();
  }

  /** The plugin's tools, starting the runner if needed. */
  listTools(): ResultAsync<readonly ToolDescriptor[], HostError> {
    return this.#inner.listTools().mapErr(esmRunnerFailure);
  }

  /** Calls one tool of the plugin. */
  callTool(name: string, args: unknown, options?: CallOptions): ResultAsync<McpToolResult, HostError> {
    return this.#inner.callTool(name, args, options).mapErr(esmRunnerFailure);
  }

  /** Stops the runner. */
  close(): Promise<void> {
    return this.#inner.close();
  }
}
