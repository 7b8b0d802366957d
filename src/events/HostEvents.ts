import diagnostics_channel from 'node:diagnostics_channel';
import type { LoggingLevel } from '@modelcontextprotocol/sdk/types.js';
import type { EgressEvent } from '../egress/EgressProxy.js';
import type { HostErrorCode } from '../errors/registry.js';
import type { ExitInfo } from '../process/PluginProcess.js';

/** Every event a host emits, with its payload. */
export interface HostEventMap {
  /** A plugin process started. */
  readonly spawn: { readonly plugin_id: string; readonly pid: number; readonly sandboxed: boolean; readonly sha256: string };
  /** A plugin process ended (stopped by the host or on its own). */
  readonly exit: { readonly plugin_id: string; readonly pid: number; readonly exit: ExitInfo };
  /** A tool call began. */
  readonly 'call:start': { readonly plugin_id: string; readonly op_id: string; readonly call_id: number };
  /** A tool call ended; `code` is set when it failed. */
  readonly 'call:end': {
    readonly plugin_id: string;
    readonly op_id: string;
    readonly call_id: number;
    readonly duration_ms: number;
    readonly ok: boolean;
    readonly code?: HostErrorCode;
  };
  /** A plugin failed in a way that counts toward quarantine. */
  readonly crash: { readonly plugin_id: string; readonly code: HostErrorCode; readonly stderr_tail: string };
  /** A plugin entered or left quarantine. */
  readonly quarantine: {
    readonly plugin_id: string;
    readonly quarantined: boolean;
    readonly permanent: boolean;
    readonly retry_count: number;
    readonly next_retry_at?: number;
  };
  /**
   * A connection or request a plugin with a destination list made through
   * the host's egress proxy, allowed (`address`: what was dialled) or
   * refused (`reason`, and `refused_kind` for an address in a refused range).
   * Refused ones past a budget per plugin and reason come as one summary
   * (`suppressed`: how many) instead of one event each.
   */
  readonly egress: EgressEvent;
  /**
   * Before a start, the host found start-up code in the plugin's data
   * directory (its `HOME`): files a shell or an interpreter runs on its own,
   * such as `.bashrc`, the Python user site-packages or `.node_modules`
   * (`etc/sandbox/startup-code-paths.json`). They were moved out of it, to
   * `moved_to` (a host folder no sandbox shows), so that no child the plugin
   * starts runs them. `paths` are relative to the data directory. A plugin
   * that keeps writing such files sees them gone at each start.
   */
  readonly 'startup_code:moved': { readonly plugin_id: string; readonly paths: readonly string[]; readonly moved_to: string };
  /**
   * One line a plugin wrote to stderr. Lines past a budget per plugin process
   * (etc/plugin-line-events.json `stderr`: a burst, then a rate) come as one
   * summary (`suppressed`: how many, `line` empty) instead of one event each;
   * the count still waiting goes out when the process exits, before `exit`.
   * Lines = events without `suppressed` + the sum of `suppressed`.
   */
  readonly stderr: {
    readonly plugin_id: string;
    readonly line: string;
    /** Set on a summary, not a line: how many lines were not reported one by one since the last summary. */
    readonly suppressed?: number;
  };
  /**
   * One line an MCP-speaking plugin wrote to stdout that is not JSON-RPC (a
   * banner, a log line), dropped under the `tolerate` stdout policy; `line`
   * holds at most its first 200 characters. Lines past a budget per plugin
   * process (etc/mcp-stdout.json: a burst, then a rate) come as one summary
   * (`suppressed`: how many, `line` empty) instead of one event each; the
   * count still waiting goes out when the process's stdout ends or it is
   * stopped. Dropped lines = events without `suppressed` + the sum of `suppressed`.
   */
  readonly stdout: {
    readonly plugin_id: string;
    readonly line: string;
    /** Set on a summary, not a line: how many lines were not reported one by one since the last summary. */
    readonly suppressed?: number;
  };
  /**
   * An MCP-speaking plugin said its list of tools, resources or prompts
   * changed. For tools, `code` is `PLUGIN_TOOLS_MISMATCH` when the new list
   * no longer matches the manifest: its tool calls are refused until it does.
   */
  readonly list_changed: { readonly plugin_id: string; readonly list: 'tools' | 'resources' | 'prompts'; readonly code?: HostErrorCode };
  /**
   * A tool an MCP-speaking plugin lists has an output schema past a bound of
   * the host's compile (etc/plugin-answers.json): `bytes`, `depth`, `nodes`
   * (objects and arrays), `patterns`, `json` (no JSON form), `expansion`
   * (one validation against it could visit more subschemas through its
   * `$ref`s than the host allows, src/manifest/schemaExpansion.ts), or
   * `process_budget` (new after the plugin's process had
   * maxCompiledSchemaBytes of schemas compiled). The schema is not compiled
   * and the tool stays listed and callable, but the `structuredContent` of
   * its results is passed on unchecked against it (every other check of an
   * answer still applies). Once per tool per plugin process.
   */
  readonly 'output_schema:unchecked': {
    readonly plugin_id: string;
    readonly tool: string;
    readonly bound: 'bytes' | 'depth' | 'nodes' | 'patterns' | 'json' | 'expansion' | 'process_budget';
    /** Bytes of the schema's JSON text, when it was measured. */
    readonly schema_bytes?: number;
  };
  /**
   * A plugin's answer over offThreadValidationBytes (etc/plugin-answers.json)
   * checked against its schema on a validation worker, off the host's
   * thread: `schema` `output` (an MCP tool's output schema) or `response` (a
   * manifest's response schema). `phase` `start` when it is handed over,
   * `end` with the `outcome`: `valid`, `invalid`, `timeout` (the worker ran
   * past offThreadValidationTimeoutMs and was ended), `failed` (the worker
   * could not run it) or `cancelled` (the call was aborted or its host or
   * connection closed first: the worker was terminated and the call ends
   * with its abort or close code); the call fails on any outcome but `valid`.
   * `duration_ms` is the worker's time, from its start to its verdict.
   */
  readonly 'answer:validation': {
    readonly plugin_id: string;
    readonly tool: string;
    readonly schema: 'output' | 'response';
    readonly phase: 'start' | 'end';
    readonly outcome?: 'valid' | 'invalid' | 'timeout' | 'failed' | 'cancelled';
    readonly duration_ms?: number;
  };
  /** A resource the host subscribed to (`subscribeResource`) changed; read it again to see how. */
  readonly 'resource:updated': { readonly plugin_id: string; readonly uri: string };
  /**
   * A subscription the host holds (`subscribeResource`) that a new process
   * of the plugin refused or no longer offers (`code`, `message`): it is
   * dropped, and no more updates of that resource arrive.
   */
  readonly 'resource:subscription_lost': { readonly plugin_id: string; readonly uri: string; readonly code: HostErrorCode; readonly message: string };
  /**
   * A plugin's request to its client (`sampling/createMessage`,
   * `elicitation/create`, `roots/list`) of a kind it declares, and how it
   * ended: answered by a callback, refused at once, abandoned (time ran out,
   * the call ended) or failed; `error_code` is the JSON-RPC code the plugin got.
   */
  readonly client_request: {
    readonly plugin_id: string;
    readonly method: string;
    readonly op_id?: string;
    readonly outcome: 'answered' | 'refused' | 'abandoned' | 'failed';
    readonly error_code?: number;
    readonly duration_ms: number;
  };
  /**
   * A log message an MCP-speaking plugin sent (`notifications/message`), at or
   * above the level set with `setLogLevel`. Messages past a budget per plugin
   * process (etc/plugin-line-events.json `mcpLog`: a burst, then a rate) come
   * as one summary instead of one event each: `suppressed` (how many), `level`
   * the most severe of them, `data` a sentence saying so, no `logger`; the
   * count still waiting goes out when the connection closes.
   */
  readonly log: {
    readonly plugin_id: string;
    readonly level: LoggingLevel;
    readonly logger?: string;
    readonly data: unknown;
    /** Set on a summary, not a message: how many messages were not reported one by one since the last summary. */
    readonly suppressed?: number;
  };
  /**
   * The host saw a new catalog generation that installs, removes or
   * upgrades (a new install root or executable) plugins, by whichever
   * process, or in which another process quarantined plugins. Removed ones
   * are gone, quarantined ones refused, and a running process of a removed,
   * upgraded or quarantined plugin finishes its calls in flight, then stops.
   * With `hotReload`, installed and upgraded plugins are callable (on the new
   * code) from now on; without it they are pending restart until the next
   * open, as the host's own installs are (unless `activation: 'immediate'`).
   */
  readonly 'catalog:changed': {
    readonly install_generation: number;
    readonly installed: readonly string[];
    readonly removed: readonly string[];
    readonly upgraded: readonly string[];
    /**
     * Plugins another process quarantined (by hand, a failed canary, crashes
     * there), or quarantined anew; this host's own quarantines are
     * `quarantine` events.
     */
    readonly quarantined: readonly string[];
  };
}

/** The name of an event. */
export type HostEventName = keyof HostEventMap;

/** The `node:diagnostics_channel` name an event is also published on. */
export function diagnosticsChannelName(event: HostEventName): string {
  return `mcp-plugin-host:${event}`;
}

/** A listener of one event. */
export type HostEventListener<E extends HostEventName> = (payload: HostEventMap[E]) => void;

/**
 * What `PluginHost.events` gives a host application: listeners come and go,
 * only the host emits. A frozen object, so no cast reaches the emitter.
 */
export interface HostEventSubscriptions {
  /** Subscribes to one event; returns a function that unsubscribes. */
  on<E extends HostEventName>(event: E, listener: HostEventListener<E>): () => void;
  /** Subscribes to the next occurrence of one event only; returns a function that unsubscribes before it. */
  once<E extends HostEventName>(event: E, listener: HostEventListener<E>): () => void;
  /** Unsubscribes a listener given to `on` or `once` for this event (nothing happens when it was not subscribed). */
  off<E extends HostEventName>(event: E, listener: HostEventListener<E>): void;
}

/**
 * Typed events of one host. Each event is delivered to listeners registered
 * here and published on a `node:diagnostics_channel` channel
 * (`mcp-plugin-host:<event>`) for tracing tools that subscribe process-wide.
 * A throwing listener is isolated: it cannot break the host or other listeners.
 */
export class HostEvents implements HostEventSubscriptions {
  private readonly listeners = new Map<HostEventName, Set<(payload: never) => void>>();
  /** The wrapper `once` registered for a listener, so `off` with the listener the caller holds finds it. */
  private readonly onceWrappers = new Map<HostEventName, Map<(payload: never) => void, (payload: never) => void>>();
  private readonly channels = new Map<HostEventName, diagnostics_channel.Channel>();

  /** The subscribe-only view handed to host applications. */
  readonly subscriptions: HostEventSubscriptions = Object.freeze({
    on: <E extends HostEventName>(event: E, listener: HostEventListener<E>) => this.on(event, listener),
    once: <E extends HostEventName>(event: E, listener: HostEventListener<E>) => this.once(event, listener),
    off: <E extends HostEventName>(event: E, listener: HostEventListener<E>) => this.off(event, listener),
  });

  /** Subscribes to one event; returns a function that unsubscribes. */
  on<E extends HostEventName>(event: E, listener: HostEventListener<E>): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    const entry = listener as (payload: never) => void;
    set.add(entry);
    return () => set.delete(entry);
  }

  /** Subscribes to the next occurrence of one event only; returns a function that unsubscribes before it. */
  once<E extends HostEventName>(event: E, listener: HostEventListener<E>): () => void {
    const wrappers = this.onceWrappers.get(event) ?? new Map<(payload: never) => void, (payload: never) => void>();
    this.onceWrappers.set(event, wrappers);
    const key = listener as (payload: never) => void;
    const wrapper: HostEventListener<E> = (payload) => {
      this.off(event, listener);
      listener(payload);
    };
    wrappers.set(key, wrapper as (payload: never) => void);
    this.on(event, wrapper);
    return () => this.off(event, listener);
  }

  /** Unsubscribes a listener given to `on` or `once` for this event. */
  off<E extends HostEventName>(event: E, listener: HostEventListener<E>): void {
    const key = listener as (payload: never) => void;
    const wrapper = this.onceWrappers.get(event)?.get(key);
    this.onceWrappers.get(event)?.delete(key);
    const set = this.listeners.get(event);
    set?.delete(key);
    if (wrapper !== undefined) set?.delete(wrapper);
  }

  /** Whether anyone listens to an event, here or on its diagnostics channel (so a hot path can skip building its payload). */
  wants(event: HostEventName): boolean {
    return (this.listeners.get(event)?.size ?? 0) > 0 || this.channel(event).hasSubscribers;
  }

  /** Delivers an event. */
  emit<E extends HostEventName>(event: E, payload: HostEventMap[E]): void {
    for (const listener of this.listeners.get(event) ?? []) {
      try {
        (listener as (p: HostEventMap[E]) => void)(payload);
      } catch {
        // A listener's failure is the listener's business; delivery goes on.
      }
    }
    const channel = this.channel(event);
    if (channel.hasSubscribers) channel.publish(payload);
  }

  private channel(event: HostEventName): diagnostics_channel.Channel {
    let channel = this.channels.get(event);
    if (!channel) {
      channel = diagnostics_channel.channel(diagnosticsChannelName(event));
      this.channels.set(event, channel);
    }
    return channel;
  }
}
