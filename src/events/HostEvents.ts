import diagnostics_channel from 'node:diagnostics_channel';
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
  /** One line a plugin wrote to stderr. */
  readonly stderr: { readonly plugin_id: string; readonly line: string };
}

/** The name of an event. */
export type HostEventName = keyof HostEventMap;

/** The `node:diagnostics_channel` name an event is also published on. */
export function diagnosticsChannelName(event: HostEventName): string {
  return `mcp-plugin-host:${event}`;
}

/**
 * Typed events of one host. Each event is delivered to listeners registered
 * here and published on a `node:diagnostics_channel` channel
 * (`mcp-plugin-host:<event>`) for tracing tools that subscribe process-wide.
 * A throwing listener is isolated: it cannot break the host or other listeners.
 */
export class HostEvents {
  private readonly listeners = new Map<HostEventName, Set<(payload: never) => void>>();
  private readonly channels = new Map<HostEventName, diagnostics_channel.Channel>();

  /** Subscribes to one event; returns a function that unsubscribes. */
  on<E extends HostEventName>(event: E, listener: (payload: HostEventMap[E]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    const entry = listener as (payload: never) => void;
    set.add(entry);
    return () => set.delete(entry);
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
