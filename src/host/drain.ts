/**
 * The drain on remove, upgrade and another process's quarantine: a retired plugin refuses new calls, its
 * calls in flight get a while to finish, and a call still running then ends
 * with PLUGIN_CALL_INTERRUPTED rather than HOST_CLOSED.
 */
import { hostError, type HostError } from '../errors/HostError.js';
import type { PluginRuntime } from './PluginRuntime.js';

/** Options of {@link PluginHost.remove}. */
export interface RemoveOptions {
  /** Also forget the plugin's stored credentials. Default false: a reinstall finds them again. */
  readonly forgetSecrets?: boolean;
  /**
   * How long calls in flight may run before the plugin is stopped; a call
   * still running then fails with PLUGIN_CALL_INTERRUPTED. Default the
   * host's `callTimeoutMs`, else {@link DEFAULT_DRAIN_TIMEOUT_MS}.
   */
  readonly drainTimeoutMs?: number;
}

/** Options of {@link PluginHost.quarantine}. */
export interface QuarantineOptions {
  /**
   * How long the plugin's calls in flight in this host may run before its
   * process is stopped; a call still running then fails with
   * PLUGIN_CALL_INTERRUPTED. Other hosts on the profile drain with their own
   * deadline. Default the host's `callTimeoutMs`, else {@link DEFAULT_DRAIN_TIMEOUT_MS}.
   */
  readonly drainTimeoutMs?: number;
}

/** Why a plugin's session is retired: removed or upgraded (here or by another process), or quarantined by another process. */
export type RetireReason = 'removed' | 'upgraded' | 'quarantined';

/** Sessions being drained, and the plugins that refuse new calls meanwhile. */
export class RuntimeDrains {
  /** Sessions of removed, upgraded or quarantined plugins whose calls in flight are draining; close stops them too. */
  readonly #draining = new Set<PluginRuntime>();
  /** Plugins being removed or upgraded here: a call that would start them fails with this error meanwhile. */
  readonly #retiring = new Map<string, HostError>();

  /** The error a call that would start `pluginId` gets while it is retired, or undefined. */
  refusal(pluginId: string): HostError | undefined {
    return this.#retiring.get(pluginId);
  }

  /** The sessions still draining. */
  get draining(): readonly PluginRuntime[] {
    return [...this.#draining];
  }

  /**
   * Refuses new calls of `pluginId`, lets `runtime`'s calls in flight run for
   * `drainMs`, then stops it. With `keepRefusing` new calls stay refused
   * until {@link RuntimeDrains.release} (a remove, until its rows are gone).
   */
  async retire(pluginId: string, runtime: PluginRuntime | undefined, reason: RetireReason, drainMs: number, keepRefusing: boolean): Promise<void> {
    const interrupted = hostError('PLUGIN_CALL_INTERRUPTED', `plugin '${pluginId}' was ${reason} while this call ran; the call was stopped`, {
      details: { plugin_id: pluginId, reason },
    });
    this.#retiring.set(pluginId, interrupted);
    if (runtime !== undefined) {
      this.#draining.add(runtime);
      try {
        await runtime.retire(interrupted, drainMs);
      } finally {
        this.#draining.delete(runtime);
      }
    }
    if (!keepRefusing) this.release(pluginId);
  }

  /** Lets calls start `pluginId` again. */
  release(pluginId: string): void {
    this.#retiring.delete(pluginId);
  }
}

/**
 * A call cut short because its plugin was removed or upgraded gets the
 * retirement's PLUGIN_CALL_INTERRUPTED (its session reports HOST_CLOSED,
 * which would wrongly suggest the host itself was closed).
 */
export function stoppedByRetirement(error: HostError, runtime: PluginRuntime, hostClosed: boolean): HostError {
  const retiredBy = runtime.retiredBy;
  return error.code === 'HOST_CLOSED' && !hostClosed && retiredBy !== undefined ? retiredBy : error;
}
