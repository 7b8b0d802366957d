/**
 * Credentials as people name them (descriptor aliases) and as plugins
 * receive them (declared env names). Raw env names stay out of messages.
 */
import { err, ok, okAsync, type Result, type ResultAsync } from 'neverthrow';
import { registryPackageName, type InstalledPlugin } from '../catalog/catalogContents.js';
import type { LockedPlugin } from '../catalog/catalogTypes.js';
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
 * The member of a plugin's stored values that records the package they were
 * stored for ({@link packageOrigin}). It holds `=`, which no environment
 * variable name can hold, so no declared credential is ever read from it or
 * stored over it, and a plugin is never given it.
 */
export const CREDENTIALS_ORIGIN_KEY = '=package_origin';

/**
 * The origin recorded for credentials stored before origins were, when no
 * package can be named for them (the id was not installed when the host
 * first met them): it matches no package, so they are withheld until setup.
 */
export const UNKNOWN_ORIGIN = 'unknown';

/**
 * What makes two installs under one plugin id "the same package" for the
 * credentials a user stored: the key that signed it (a signed upgrade by the
 * same signer); else, from an npm registry, the registry and the package
 * name (an upgrade from that registry: a package of the same name on
 * another registry is another publisher's); else a directory's path (dev
 * profiles: the user's own working copy); else the exact bytes: an
 * archive's or bundle's digest, a local npm tarball's pinned file tree. The
 * manifest's namespace owner and a local package.json's name are the
 * package's own claims and count for nothing here: anyone can spell them.
 *
 * An npm package installed before its registry was recorded has the origin
 * of that time, `npm-registry:<name>`: values stored for it keep reaching it
 * (and an unchanged reinstall of it), and no package recorded with a
 * registry, since which registry they were stored for is not known.
 */
export function packageOrigin(lock: Pick<LockedPlugin, 'package' | 'binding'>): string {
  const { source, checksum, signer, registry } = lock.package;
  if (signer !== undefined) return `signer:${signer}`;
  const name = registryPackageName(source);
  // The registry ends with `/`: registry and name read as the package's URL there.
  if (name !== undefined) return registry === undefined ? `npm-registry:${name}` : `npm-registry:${registry}${name}`;
  if (source.startsWith('directory:')) return source;
  if (checksum !== '') return `digest:${checksum}`;
  const tree = lock.binding.tree?.sha256;
  return tree === undefined ? `executable:${lock.binding.executable_sha256}` : `tree:${tree}`;
}

/** The package a plugin's stored values were stored for; undefined for values stored before origins were recorded. */
export function storedOrigin(stored: Readonly<Record<string, string>>): string | undefined {
  return Object.hasOwn(stored, CREDENTIALS_ORIGIN_KEY) ? stored[CREDENTIALS_ORIGIN_KEY] : undefined;
}

/** Whether `stored` holds a credential value (not only its origin). */
function holdsValues(stored: Readonly<Record<string, string>>): boolean {
  return Object.keys(stored).some((name) => name !== CREDENTIALS_ORIGIN_KEY);
}

/** The plugin whose credentials are read: its id and the package installed under it. */
export type CredentialHolder = Pick<InstalledPlugin, 'plugin_id'> & { readonly lock: Pick<LockedPlugin, 'package' | 'binding'> };

/**
 * Where a plugin's declared credentials come from: the secret store, and,
 * when the host opts in (`credentialsFromEnv`), the user's environment as
 * the GUM contract passes `needs_user_creds` through. A value set in the
 * environment wins over a stored one, as an exported variable overrides
 * saved configuration; empty values count as absent. A name the host's
 * denylist keeps from plugins but lets a user store
 * ({@link isStoredOnlyCredentialName}) comes from the store alone.
 *
 * Stored values reach only the package they were stored for
 * ({@link packageOrigin}): another package installed under the same id (a
 * local tarball or bundle claiming it, an unsigned rebuild) finds none, and
 * needs `setup` again, which stores values for it instead.
 */
export class CredentialSource {
  readonly #secrets: SecretStore;
  readonly #env: Readonly<Record<string, string | undefined>> | undefined;

  /** @param env - The user's environment, or undefined when credentials come from the secret store alone. */
  constructor(secrets: SecretStore, env: Readonly<Record<string, string | undefined>> | undefined) {
    this.#secrets = secrets;
    this.#env = env;
  }

  /** The values of the `declared` credentials that are set, by env name; nothing undeclared, nothing stored for another package. */
  values(plugin: CredentialHolder, declared: readonly string[]): ResultAsync<Record<string, string>, HostError> {
    if (declared.length === 0) return okAsync({});
    return this.#secrets.get(plugin.plugin_id).map((all) => {
      const stored = this.#forPackage(all, plugin) ? all : {};
      const out: Record<string, string> = {};
      for (const name of declared) {
        const value = this.#fromEnv(name) ?? (Object.hasOwn(stored, name) ? stored[name] : undefined);
        if (value !== undefined && value !== '') out[name] = value;
      }
      return out;
    });
  }

  /** The declared credentials no source holds a value for (an unreadable store holds none). */
  async missing(plugin: CredentialHolder, needed: readonly string[]): Promise<string[]> {
    if (needed.length === 0) return [];
    const present = await this.values(plugin, needed);
    const values = present.isOk() ? present.value : {};
    return needed.filter((name) => values[name] === undefined);
  }

  /** Whether values are stored under the plugin's id for another package than the one installed (so they are withheld). */
  async storedForAnother(plugin: CredentialHolder): Promise<boolean> {
    const stored = await this.#secrets.get(plugin.plugin_id);
    return stored.isOk() && holdsValues(stored.value) && !this.#forPackage(stored.value, plugin);
  }

  /**
   * Records `origin` on values stored before origins were (none recorded):
   * the package installed when the host first meets them, or
   * {@link UNKNOWN_ORIGIN} when none is. Values with an origin are left alone.
   */
  bindUnbound(pluginId: string, origin: string): ResultAsync<void, HostError> {
    return this.#secrets
      .get(pluginId)
      .andThen((stored) => (holdsValues(stored) && storedOrigin(stored) === undefined ? this.#secrets.set(pluginId, { [CREDENTIALS_ORIGIN_KEY]: origin }) : okAsync(undefined)));
  }

  /**
   * Stores `values` for the package installed under the plugin's id: merged
   * over values stored for the same package, in place of values stored for
   * another (those were that package's, and must not mix with these).
   */
  store(plugin: CredentialHolder, values: Readonly<Record<string, string>>): ResultAsync<void, HostError> {
    const origin = packageOrigin(plugin.lock);
    return this.#secrets
      .get(plugin.plugin_id)
      .andThen((stored) => (this.#forPackage(stored, plugin) ? okAsync(undefined) : this.#secrets.delete(plugin.plugin_id)))
      .andThen(() => this.#secrets.set(plugin.plugin_id, { ...values, [CREDENTIALS_ORIGIN_KEY]: origin }));
  }

  #forPackage(stored: Readonly<Record<string, string>>, plugin: CredentialHolder): boolean {
    const origin = storedOrigin(stored);
    // Values without an origin predate origins. The host records one for them before any other package can be
    // installed under the id (bindUnbound, at install and remove), so the package installed now is the one they were
    // stored for.
    return origin === undefined || origin === packageOrigin(plugin.lock);
  }

  #fromEnv(name: string): string | undefined {
    // A name on the host's extension of the env denylist (PERPLEXITY_API_KEY…) reaches a plugin only as the value the
    // user stored for it: the host's own value under that name is the host's credential, never the plugin's.
    if (isStoredOnlyCredentialName(name)) return undefined;
    const value = this.#env === undefined || !Object.hasOwn(this.#env, name) ? undefined : this.#env[name];
    return value === '' ? undefined : value;
  }
}
