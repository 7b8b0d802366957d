import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import type { EsmToolValidator } from './validateTools.js';

/**
 * The Open Discovery loader's feature flags, as typed options. Each has the
 * seed's default; {@link esmLoaderOptionsFromEnv} reads them from the
 * environment variables of the same names for hosts that want that.
 */
export interface EsmLoaderFlags {
  /** `MANIFEST_LOADER_ENABLED`: when false every plugin is skipped. Default true. */
  readonly manifestLoaderEnabled: boolean;
  /** `PLUGIN_INSTALL_DIR` (else `PLUGINS_BASE_DIR`, the first present, as the seed's server reads them): where installed plugins live (`<name>@<version>/`). Default `./plugins`. */
  readonly pluginInstallDir: string;
  /** `REQUIRE_SIGNATURES`: refuse plugins whose package signature was not verified at install. Default false. */
  readonly requireSignatures: boolean;
  /** `STRICT_CAPABILITIES`: a difference between declared and registered capabilities fails the load. Default false. */
  readonly strictCapabilities: boolean;
  /** `STRICT_TOOLS`: an invalid tool fails the load instead of being skipped. Default false. */
  readonly strictTools: boolean;
  /** `SCHEMA_PATH`: a draft-07 schema file replacing the bundled `mcp-plugin.json` schema. Default: the bundled schema. */
  readonly schemaPath: string | undefined;
  /** `DEBUG_REGISTRY`: log every loader step. Default false. */
  readonly debugRegistry: boolean;
}

/**
 * The loader's strict modes for plugins installed through PluginHost
 * (`PluginHostOptions.esmLoader`): the host passes them to the ESM runner of
 * each `esm-module` plugin it starts. A load these modes refuse fails the
 * plugin's start with the loader's code (PLUGIN_CAPABILITY_MISMATCH,
 * PLUGIN_TOOL_INVALID) instead of running it with warnings.
 */
export interface EsmHostLoaderOptions extends Partial<Pick<EsmLoaderFlags, 'strictCapabilities' | 'strictTools'>> {
  /**
   * The host's tool validator (the seed's ToolValidationManager), run on the
   * tools each installed plugin's runner lists, at start and after every
   * `tools/list_changed`; a tool it refuses fails the plugin's start (or its
   * calls) with PLUGIN_TOOL_INVALID.
   */
  readonly validateTool?: EsmToolValidator;
}

/** The seed's defaults. */
export const DEFAULT_ESM_LOADER_FLAGS: Readonly<EsmLoaderFlags> = Object.freeze({
  manifestLoaderEnabled: true,
  pluginInstallDir: './plugins',
  requireSignatures: false,
  strictCapabilities: false,
  strictTools: false,
  schemaPath: undefined,
  debugRegistry: false,
});

/** The environment variable each flag is read from. */
export const ESM_LOADER_ENV_NAMES: Readonly<Record<keyof EsmLoaderFlags, string>> = Object.freeze({
  manifestLoaderEnabled: 'MANIFEST_LOADER_ENABLED',
  pluginInstallDir: 'PLUGIN_INSTALL_DIR',
  requireSignatures: 'REQUIRE_SIGNATURES',
  strictCapabilities: 'STRICT_CAPABILITIES',
  strictTools: 'STRICT_TOOLS',
  schemaPath: 'SCHEMA_PATH',
  debugRegistry: 'DEBUG_REGISTRY',
});

/** The variable read for the install directory when `PLUGIN_INSTALL_DIR` is not set (seed 003: "the server uses the first present"). */
export const PLUGINS_BASE_DIR_ENV_NAME = 'PLUGINS_BASE_DIR';

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

type BooleanFlag = 'manifestLoaderEnabled' | 'requireSignatures' | 'strictCapabilities' | 'strictTools' | 'debugRegistry';
const BOOLEAN_FLAGS: readonly BooleanFlag[] = ['manifestLoaderEnabled', 'requireSignatures', 'strictCapabilities', 'strictTools', 'debugRegistry'];

/**
 * The loader flags from environment variables (`true`/`1`/`yes`/`on` and
 * `false`/`0`/`no`/`off`, any case; unset or empty keeps the default). Any
 * other value is HOST_INVALID_OPTIONS naming the variable, so a typo never
 * silently turns a strict mode off.
 */
export function esmLoaderOptionsFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): Result<EsmLoaderFlags, HostError> {
  const flags: { -readonly [K in keyof EsmLoaderFlags]: EsmLoaderFlags[K] } = { ...DEFAULT_ESM_LOADER_FLAGS };
  for (const flag of BOOLEAN_FLAGS) {
    const name = ESM_LOADER_ENV_NAMES[flag];
    const raw = env[name]?.trim().toLowerCase();
    if (raw === undefined || raw === '') continue;
    if (TRUE_WORDS.has(raw)) flags[flag] = true;
    else if (FALSE_WORDS.has(raw)) flags[flag] = false;
    else return err(hostError('HOST_INVALID_OPTIONS', `${name}=${JSON.stringify(env[name])} is not a boolean (use true/1 or false/0)`, { details: { variable: name } }));
  }
  const installDir = env[ESM_LOADER_ENV_NAMES.pluginInstallDir]?.trim() || env[PLUGINS_BASE_DIR_ENV_NAME]?.trim();
  if (installDir) flags.pluginInstallDir = installDir;
  const schemaPath = env[ESM_LOADER_ENV_NAMES.schemaPath]?.trim();
  if (schemaPath) flags.schemaPath = schemaPath;
  return ok(flags);
}
