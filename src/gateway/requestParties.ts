import type { CallPresence } from '../shapes/PluginSession.js';

/**
 * Which gateway clients have a request at each plugin right now, so that a
 * plugin's log message goes to the client it was logging for. A plugin's
 * process serves every client, and over stdio its `notifications/message`
 * names no request: while requests of exactly one client are at the plugin,
 * the message is taken to be about them and goes to that client alone;
 * while several clients' are, it cannot be attributed and goes to none of
 * them (it could carry one client's data to another); while none is, it is
 * the plugin's own and goes to every client offered the plugin. A tool call
 * counts from when it is sent to the plugin until the plugin answers it or is
 * told to cancel it (a timeout, the client's cancellation): not while it waits
 * for one of the plugin's in-flight slots or for the plugin to start, when the
 * plugin is not working for it (one client's queued backlog would otherwise
 * silence what the plugin logs for every other client's calls).
 */
export class PluginRequestParties {
  /** By plugin id: each client with requests there, and how many. */
  readonly #byPlugin = new Map<string, Map<object, number>>();
  /** By client, then plugin id: what its tool calls there tell these books, made once so that a call allocates none. */
  readonly #presences = new WeakMap<object, Map<string, CallPresence>>();

  /** Runs `work`, a request of `client` served by `pluginId`, counting it at that plugin until it settles. */
  async during<T>(pluginId: string | undefined, client: object, work: () => PromiseLike<T>): Promise<T> {
    if (pluginId === undefined) return work();
    this.#arrive(pluginId, client);
    try {
      return await work();
    } finally {
      this.#leave(pluginId, client);
    }
  }

  /** What counts a tool call of `client` at `pluginId` from when it is sent there until it settles there (`PluginHost.call`'s `presence`). */
  presence(pluginId: string, client: object): CallPresence {
    let byPlugin = this.#presences.get(client);
    if (byPlugin === undefined) {
      byPlugin = new Map();
      this.#presences.set(client, byPlugin);
    }
    let presence = byPlugin.get(pluginId);
    if (presence === undefined) {
      presence = { sent: () => this.#arrive(pluginId, client), settled: () => this.#leave(pluginId, client) };
      byPlugin.set(pluginId, presence);
    }
    return presence;
  }

  #arrive(pluginId: string, client: object): void {
    let parties = this.#byPlugin.get(pluginId);
    if (parties === undefined) {
      parties = new Map<object, number>();
      this.#byPlugin.set(pluginId, parties);
    }
    parties.set(client, (parties.get(client) ?? 0) + 1);
  }

  #leave(pluginId: string, client: object): void {
    const parties = this.#byPlugin.get(pluginId);
    if (parties === undefined) return;
    const left = (parties.get(client) ?? 1) - 1;
    if (left > 0) parties.set(client, left);
    else parties.delete(client);
    // An emptied map stays for the plugin's next call (one entry per plugin ever called): dropped, each call of a
    // client calling alone made a new one.
  }

  /** Whether a log message `pluginId` sends now may go to `client` (see the class comment). */
  mayHear(pluginId: string, client: object): boolean {
    const parties = this.#byPlugin.get(pluginId);
    return parties === undefined || parties.size === 0 || (parties.size === 1 && parties.has(client));
  }
}
