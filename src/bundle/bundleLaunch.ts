/**
 * What a launch of an installed MCP Bundle adds to the plugin's process: the
 * env its `mcp_config` sets (`${__dirname}` becoming the install root), or
 * PLUGIN_SETTING_MISSING while a required setting has no value.
 */
import { err, ok, type Result } from 'neverthrow';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { hostError, type HostError } from '../errors/HostError.js';

/**
 * The env a launch sets for the plugin (empty for plugins that are not
 * bundles); refused while `missing_settings` is not empty. The host's own
 * HOME, TMPDIR and PATH are applied after it and win.
 */
export function bundleLaunchEnv(plugin: InstalledPlugin): Result<Readonly<Record<string, string>>, HostError> {
  const launch = plugin.descriptor?.launch;
  if (launch === undefined) return ok({});
  const missing = launch.missing_settings;
  if (missing.length > 0) {
    return err(
      hostError('PLUGIN_SETTING_MISSING', `plugin '${plugin.plugin_id}' needs a value for its required setting${missing.length === 1 ? '' : 's'} ${missing.join(', ')} before it can start`, {
        details: { plugin_id: plugin.plugin_id, missing_settings: [...missing] },
        hint: `Install the package again with settings: { ${missing.map((key) => `${key}: <value>`).join(', ')} } (CLI: ${missing.map((key) => `--setting ${key}=<value>`).join(' ')}).`,
      }),
    );
  }
  const root = plugin.lock.binding.install_root;
  return ok(Object.fromEntries(Object.entries(launch.env).map(([name, value]) => [name, value.replaceAll('${__dirname}', root)])));
}
