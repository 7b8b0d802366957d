import { dirname, isAbsolute } from 'node:path';
import pluginPath from '../../etc/plugin-path.json' with { type: 'json' };

/** The system directories of every plugin's `PATH`, from `etc/plugin-path.json`. */
export const PLUGIN_SYSTEM_PATH: readonly string[] = pluginPath.system;

/**
 * A plugin's `PATH`: the directory of the program that runs it (its pinned
 * interpreter, or the Node of the ESM runner) first, so `#!/usr/bin/env node`
 * children of the plugin find the same interpreter, then
 * {@link PLUGIN_SYSTEM_PATH}. Never anything of the host's own `PATH`.
 *
 * @param interpreter - Absolute path of the interpreter, when the plugin has one.
 */
export function pluginSearchPath(interpreter?: string): string {
  const dirs = interpreter !== undefined && isAbsolute(interpreter) ? [dirname(interpreter), ...PLUGIN_SYSTEM_PATH] : [...PLUGIN_SYSTEM_PATH];
  return [...new Set(dirs)].join(':');
}
