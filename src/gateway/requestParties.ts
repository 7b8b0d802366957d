/**
 * Which gateway clients have a request at each plugin right now, so that a
 * plugin's log message goes to the client it was logging for. A plugin's
 * process serves every client, and over stdio its `notifications/message`
 * names no request: while requests of exactly one client are at the plugin,
 * the message is taken to be about them and goes to that client alone;
 * while several clients' are, it cannot be attributed and goes to none of
 * them (it could carry one client's data to another); while none is, it is
 * the plugin's own and goes to every client offered the plugin.
 */
export class PluginRequestParties {
  /** By plugin id: each client with requests there, and how many. */
  readonly #byPlugin = new Map<string, Map<object, number>>();

  /** Runs `work`, a request of `client` served by `pluginId`, counting it at that plugin until it settles. */
  async during<T>(pluginId: string | undefined, client: object, work: () => PromiseLike<T>): Promise<T> {
    if (pluginId === undefined) return work();
    const parties = this.#byPlugin.get(pluginId) ?? new Map<object, number>();
    this.#byPlugin.set(pluginId, parties.set(client, (parties.get(client) ?? 0) + 1));
    try {
      return await work();
    } finally {
      const left = (parties.get(client) ?? 1) - 1;
      if (left > 0) parties.set(client, left);
      else parties.delete(client);
      if (parties.size === 0 && this.#byPlugin.get(pluginId) === parties) this.#byPlugin.delete(pluginId);
    }
  }

  /** Whether a log message `pluginId` sends now may go to `client` (see the class comment). */
  mayHear(pluginId: string, client: object): boolean {
    const parties = this.#byPlugin.get(pluginId);
    return parties === undefined || (parties.size === 1 && parties.has(client));
  }
}
