/**
 * Credentials as people name them (descriptor aliases) and as plugins
 * receive them (declared env names). Raw env names stay out of messages.
 */
import { err, ok, type Result } from 'neverthrow';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
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


/** The declared credentials `secrets` holds no value for (an empty value counts as missing). */
export async function missingCredentials(secrets: SecretStore, pluginId: string, needed: readonly string[]): Promise<string[]> {
  if (needed.length === 0) return [];
  const stored = await secrets.get(pluginId);
  const values = stored.isOk() ? stored.value : {};
  return needed.filter((name) => values[name] === undefined || values[name] === '');
}
