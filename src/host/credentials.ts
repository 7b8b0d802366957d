/**
 * Credentials as people name them (descriptor aliases) and as plugins
 * receive them (declared env names). Raw env names stay out of messages.
 */
import { err, ok, okAsync, type Result, type ResultAsync } from 'neverthrow';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { isStoredOnlyCredentialName } from '../env/EnvDenylist.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { SecretStore } from '../secrets/SecretStore.js';

/** Maps setup values keyed by alias or env name to declared env names; anything else is refused. */
export function credentialsByEnv(plugin: InstalledPlugin, values: Readonly<Record<string, string>>): Result<Record<string, string>, HostError> {
  const id = plugin.plugin_id;
  const declared = plugin.descriptor?.needs_user_creds ?? [];
  const descriptors = plugin.descriptor?.credential_descriptors ?? [];
  const out: Record<string, string> = {};
  let undeclared = 0;
  let empty = 0;
  for (const [key, value] of Object.entries(values)) {
    const env = declared.includes(key) ? key : descriptors.find((d) => d.alias === key && declared.includes(d.env))?.env;
    if (env === undefined) undeclared++;
    else if (typeof value !== 'string' || value === '') empty++;
    else out[env] = value;
  }
  if (undeclared > 0 || empty > 0) {
    return err(
      hostError(
        'HOST_INVALID_OPTIONS',
        `setup of '${id}' got ${undeclared} undeclared and ${empty} empty credential(s); it declares: ${descriptors.map((d) => `${d.alias} (${d.display_name})`).join(', ') || 'none'}`,
        {
          details: { plugin_id: id, undeclared_count: undeclared, empty_count: empty, aliases: descriptors.map((d) => d.alias) },
        },
      ),
    );
  }
  return ok(out);
}

/** The aliases of declared env names, in order (`unnamed` where no descriptor names one). */
export function aliasesOf(plugin: InstalledPlugin, envNames: readonly string[]): string[] {
  const descriptors = plugin.descriptor?.credential_descriptors ?? [];
  return envNames.map((name) => descriptors.find((d) => d.env === name)?.alias ?? 'unnamed');
}


/**
 * Where a plugin's declared credentials come from: the secret store, and,
 * when the host opts in (`credentialsFromEnv`), the user's environment as
 * the GUM contract passes `needs_user_creds` through. A value set in the
 * environment wins over a stored one, as an exported variable overrides
 * saved configuration; empty values count as absent. A name the host's
 * denylist keeps from plugins but lets a user store
 * ({@link isStoredOnlyCredentialName}) comes from the store alone.
 */
export class CredentialSource {
  readonly #secrets: SecretStore;
  readonly #env: Readonly<Record<string, string | undefined>> | undefined;

  /** @param env - The user's environment, or undefined when credentials come from the secret store alone. */
  constructor(secrets: SecretStore, env: Readonly<Record<string, string | undefined>> | undefined) {
    this.#secrets = secrets;
    this.#env = env;
  }

  /** The values of the `declared` credentials that are set, by env name; nothing undeclared. */
  values(pluginId: string, declared: readonly string[]): ResultAsync<Record<string, string>, HostError> {
    if (declared.length === 0) return okAsync({});
    return this.#secrets.get(pluginId).map((stored) => {
      const out: Record<string, string> = {};
      for (const name of declared) {
        const value = this.#fromEnv(name) ?? stored[name];
        if (value !== undefined && value !== '') out[name] = value;
      }
      return out;
    });
  }

  /** The declared credentials no source holds a value for (an unreadable store holds none). */
  async missing(pluginId: string, needed: readonly string[]): Promise<string[]> {
    if (needed.length === 0) return [];
    const present = await this.values(pluginId, needed);
    const values = present.isOk() ? present.value : {};
    return needed.filter((name) => values[name] === undefined);
  }

  #fromEnv(name: string): string | undefined {
    // A name on the host's extension of the env denylist (PERPLEXITY_API_KEY…) reaches a plugin only as the value the
    // user stored for it: the host's own value under that name is the host's credential, never the plugin's.
    if (isStoredOnlyCredentialName(name)) return undefined;
    const value = this.#env === undefined || !Object.hasOwn(this.#env, name) ? undefined : this.#env[name];
    return value === '' ? undefined : value;
  }
}
