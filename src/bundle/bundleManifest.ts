/**
 * MCP Bundles (`.mcpb`): a zip whose `manifest.json` has `manifest_version`
 * (or the older `dxt_version`) and `server`. The manifest is validated
 * against the official schema of its version, then mapped to the plugin
 * model:
 *
 * - `server.type` node/python: `mcp_config.command` names the interpreter
 *   (pinned at install), `args[0]` is the entry point, the other args follow
 *   it; binary: the command is the entry point;
 * - `${__dirname}` stays for the install root, `${HOME}` is the plugin's
 *   data dir, `${user_config.KEY}` is the setting's value (given at install,
 *   else its default), `${/}` and `${pathSeparator}` are `/`;
 * - a `sensitive` `user_config` value is a credential: it must be the whole
 *   value of one `mcp_config.env` entry, which becomes a `needs_user_creds`
 *   name with a descriptor (alias = the key), filled from the secret store
 *   by `setup`; it never enters the catalog;
 * - `tools` are the advertised tools, each `destructive`: MCPB tools carry no
 *   annotations, and MCP reads a tool without hints as destructive (as for a
 *   tool an npm server lists bare); a bundle that lists none, or says `tools_generated`,
 *   gets the tools its server lists in one sandboxed start (the
 *   installer's introspection), marked needs_review; `compatibility` platforms and runtimes are checked;
 * - no sandbox powers are declared: the capabilities are the host default
 *   and the install grant widens them.
 */
import { join, posix } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { findOnPath } from '../binding/interpreter.js';
import { interpreterVersionOf, type InterpreterVersionProbe } from '../binding/interpreterVersion.js';
import { isValidEnvName, isValidEnvValue, printableEnvName } from '../env/envName.js';
import type { HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { isSafeRelativePath, pluginIdFromOpenDiscoveryName } from '../manifest/checks.js';
import type { ManifestReport } from '../manifest/ManifestValidator.js';
import type { CredentialDescriptor, DeclaredCapabilities, ManifestTool, NormalizedManifest, SettingValue } from '../manifest/model.js';
import { DEFAULT_PARSE_LIMITS, decodeManifestBytes, parseJsonText } from '../manifest/parse.js';
import { hasViolations, pointerOf, sortViolations, violation, type Violation } from '../manifest/violations.js';
import { readAtMost } from '../manifest/readAtMost.js';
import { isBundleDocument } from '../manifest/manifestChoice.js';
import { BUNDLE_MANIFEST_VERSIONS, bundleSchemaViolations } from './bundleSchemas.js';
import { BUNDLE_SERVER_TYPES, type BundleServerType } from './serverTypes.js';
import { pythonBundleLaunch } from './pythonBundle.js';
import { satisfiesRange } from './versionRange.js';

/** The file an MCP Bundle's manifest is in (the same name as a GUM JSON manifest; the content tells them apart). */
export const BUNDLE_MANIFEST_FILE = 'manifest.json';

/** What mapping a bundle needs from the host. */
export interface BundleReadContext {
  /** Values of non-sensitive `user_config` keys, overriding their defaults. */
  readonly settings?: Readonly<Record<string, SettingValue>>;
  /** The capabilities a source that declares none gets (the host default). */
  readonly defaultCapabilities: DeclaredCapabilities;
  /** The plugin's data dir (its HOME), by plugin id. */
  readonly dataDirOf: (pluginId: string) => string;
  /** Where the interpreter a bundle names is looked up (as the binding will, at install). */
  readonly searchPath: string;
  /**
   * Asks the interpreter a bundle names (found on `searchPath`) its version,
   * for `compatibility.runtimes`: inside the plugins' sandbox (the
   * installer's confinedInterpreterVersion), never on the host. The host's
   * own Node is read from this process without it; without it any other
   * interpreter's version is unknown, and a runtimes range on it refused.
   */
  readonly interpreterVersion?: InterpreterVersionProbe;
  /** The platform `compatibility.platforms` is checked against. Default `process.platform`. */
  readonly platform?: NodeJS.Platform;
  /**
   * Lists the tools of a bundle whose manifest names none, by starting its
   * server once in the sandbox (the installer's introspection); without it
   * such a bundle is refused.
   */
  readonly listTools?: (server: BundleServerStart) => Promise<Result<readonly ManifestTool[], HostError>>;
}

/** How to start a staged bundle's server once: what its mapping resolved, `${__dirname}` already its staged root. */
export interface BundleServerStart {
  /** The staged bundle root. */
  readonly root: string;
  /** The entry point, relative to `root`. */
  readonly executable: string;
  /** The interpreter `mcp_config.command` names (node, python). */
  readonly interpreter?: string;
  /** For a Python bundle: the folders its PYTHONPATH named, relative to `root` (see pythonBundle.ts). */
  readonly pythonPath?: readonly string[];
  /** Arguments after the entry point. */
  readonly args: readonly string[];
  /** The env `mcp_config.env` sets (credentials and PYTHONPATH left out). */
  readonly env: Readonly<Record<string, string>>;
  /** What the bundle says of itself, and the credential names its sensitive settings make, for the install's trust gate before the start. */
  readonly plugin?: { readonly plugin_id: string; readonly name: string; readonly version: string; readonly license?: string; readonly credentials: readonly string[] };
}

/** The `risk` statement of a bundle whose tools its server listed: nobody has reviewed their risk classes yet. */
export const BUNDLE_NEEDS_REVIEW =
  'needs_review: the bundle lists no tools or says its server generates them, so these are the ones its server listed in a sandboxed start, with risk classes from their annotations (destructiveHint false or readOnlyHint is write, anything else is destructive, as MCP reads a tool without hints; a readOnlyHint is only the server claiming it, so read comes after review); review them.';

interface UserConfigEntry {
  readonly type: 'string' | 'number' | 'boolean' | 'directory' | 'file';
  readonly title: string;
  readonly description: string;
  readonly required?: boolean;
  readonly default?: SettingValue;
  readonly multiple?: boolean;
  readonly sensitive?: boolean;
  readonly min?: number;
  readonly max?: number;
}

interface McpConfig {
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly platform_overrides?: Readonly<Record<string, Partial<McpConfig>>>;
}

/** The fields of a schema-valid bundle manifest the mapping reads. */
interface BundleDocument {
  readonly name: string;
  readonly display_name?: string;
  readonly version: string;
  readonly description: string;
  readonly license?: string;
  readonly server: { readonly type: string; readonly entry_point: string; readonly mcp_config: McpConfig };
  readonly tools?: readonly { readonly name: string; readonly description?: string }[];
  readonly tools_generated?: boolean;
  readonly compatibility?: { readonly platforms?: readonly string[]; readonly runtimes?: { readonly node?: string; readonly python?: string } };
  readonly user_config?: Readonly<Record<string, UserConfigEntry>>;
}

/** Whether a parsed `manifest.json` is an MCP Bundle manifest rather than a GUM one (kept beside the judgement of which file is a directory's manifest). */
export { isBundleDocument };

const TOOL_NAME = /^(?!plug\.)[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const CREDENTIAL_ALIAS = /^[a-z][a-z0-9_.-]{0,63}$/;
const PLACEHOLDER = /\$\{([^}]*)\}/g;
const DIRNAME = '${__dirname}';

/** A path as written in the manifest, relative to the bundle root (`${__dirname}/x`, `./x` and `x` all name `x`). */
function bundlePath(written: string): string | undefined {
  const relative = written.startsWith(`${DIRNAME}/`) ? written.slice(DIRNAME.length + 1) : written;
  if (relative.includes('${') || !isSafeRelativePath(relative)) return undefined;
  const normalized = posix.normalize(relative.replace(/\\/g, '/'));
  return normalized === '.' || normalized.startsWith('../') ? undefined : normalized;
}

/** `mcp_config` with this platform's override applied, as MCPB applies it. */
function configFor(config: McpConfig, platform: string): McpConfig {
  const override = config.platform_overrides?.[platform];
  if (override === undefined) return config;
  return {
    command: override.command ?? config.command,
    ...(override.args ?? config.args ? { args: override.args ?? config.args } : {}),
    env: { ...config.env, ...override.env },
  };
}

/** The `user_config` entry named `key`: an own key only, so an inherited name (`constructor`, `toString`) names none. */
function userConfigEntry(doc: BundleDocument, key: string): UserConfigEntry | undefined {
  const entries = doc.user_config;
  return entries !== undefined && Object.hasOwn(entries, key) ? entries[key] : undefined;
}

/** Collects what substitution finds: violations, missing required settings, and the settings it used. */
class Substitution {
  readonly violations: Violation[] = [];
  readonly missing = new Set<string>();
  readonly used = new Map<string, SettingValue>();

  constructor(
    private readonly doc: BundleDocument,
    private readonly settings: Readonly<Record<string, SettingValue>>,
    private readonly home: string,
  ) {}

  /** The value of `${name}` at `pointer`, or undefined when it stays (`${__dirname}`) or is refused. */
  #value(name: string, pointer: string): SettingValue | undefined {
    if (name === '__dirname') return undefined;
    if (name === 'HOME') return this.home;
    if (name === '/' || name === 'pathSeparator') return '/';
    if (!name.startsWith('user_config.')) {
      this.violations.push(violation('structure', 'PLUGIN_BUNDLE_UNSUPPORTED', pointer, `\${${name}} is not available to a sandboxed plugin (only __dirname, HOME, user_config.*, / and pathSeparator are)`));
      return '';
    }
    const key = name.slice('user_config.'.length);
    const entry = userConfigEntry(this.doc, key);
    if (entry === undefined) {
      this.violations.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', pointer, `\${${name}} names a user_config key the manifest does not define`));
      return '';
    }
    if (entry.sensitive === true) {
      this.violations.push(
        violation('credentials', 'PLUGIN_BUNDLE_UNSUPPORTED', pointer, `sensitive user_config "${key}" may only be the whole value of an mcp_config.env entry (the host passes it from the secret store, never in arguments or the catalog)`),
      );
      return '';
    }
    const value = (Object.hasOwn(this.settings, key) ? this.settings[key] : undefined) ?? entry.default;
    if (value === undefined) {
      if (entry.required === true) this.missing.add(key);
      return '';
    }
    this.used.set(key, value);
    return value;
  }

  /** One template with its placeholders replaced; a lone placeholder of a list setting becomes several arguments. */
  expand(template: string, pointer: string): string[] {
    const lone = /^\$\{([^}]*)\}$/.exec(template);
    if (lone !== null) {
      const value = this.#value(lone[1] ?? '', pointer);
      if (value === undefined) return [template];
      return Array.isArray(value) ? [...(value as readonly string[])] : [String(value)];
    }
    return [this.text(template, pointer)];
  }

  /** One template with its placeholders replaced, lists joined by commas. */
  text(template: string, pointer: string): string {
    return template.replace(PLACEHOLDER, (whole, name: string) => {
      const value = this.#value(name, pointer);
      if (value === undefined) return whole;
      return Array.isArray(value) ? value.join(',') : String(value);
    });
  }
}

/** A given setting checked against its `user_config` entry; CLI text is read as the entry's type. */
function settingValue(key: string, given: SettingValue, entry: UserConfigEntry | undefined): Result<SettingValue, Violation> {
  const at = pointerOf('settings', key);
  const refuse = (why: string): Result<SettingValue, Violation> => err(violation('structure', 'HOST_INVALID_OPTIONS', at, `setting "${key}" ${why}`));
  if (entry === undefined) return refuse('is not a user_config key of this bundle');
  if (entry.sensitive === true) return refuse('is sensitive: store it with setup (the secret store), not as a setting');
  const one = (value: unknown): Result<string | number | boolean, Violation> => {
    if (entry.type === 'number') {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isFinite(n)) return err(violation('structure', 'HOST_INVALID_OPTIONS', at, `setting "${key}" must be a number`));
      if ((entry.min !== undefined && n < entry.min) || (entry.max !== undefined && n > entry.max)) {
        return err(violation('structure', 'HOST_INVALID_OPTIONS', at, `setting "${key}" must lie in [${entry.min ?? '-∞'}, ${entry.max ?? '∞'}]`));
      }
      return ok(n);
    }
    if (entry.type === 'boolean') {
      const b = value === 'true' ? true : value === 'false' ? false : value;
      return typeof b === 'boolean' ? ok(b) : err(violation('structure', 'HOST_INVALID_OPTIONS', at, `setting "${key}" must be true or false`));
    }
    return typeof value === 'string' ? ok(value) : err(violation('structure', 'HOST_INVALID_OPTIONS', at, `setting "${key}" must be a string`));
  };
  if (Array.isArray(given)) {
    if (entry.multiple !== true) return refuse('takes one value');
    const items: string[] = [];
    for (const item of given as readonly unknown[]) {
      const checked = one(item);
      if (checked.isErr()) return err(checked.error);
      items.push(String(checked.value));
    }
    return ok(items);
  }
  const checked = one(given);
  if (checked.isErr()) return err(checked.error);
  return ok(entry.multiple === true ? [String(checked.value)] : checked.value);
}

async function compatibilityViolations(doc: BundleDocument, type: BundleServerType, command: string, context: BundleReadContext): Promise<Violation[]> {
  const out: Violation[] = [];
  const platform = context.platform ?? process.platform;
  const platforms = doc.compatibility?.platforms;
  if (platforms !== undefined && !platforms.includes(platform)) {
    out.push(violation('structure', 'PLUGIN_BUNDLE_INCOMPATIBLE', '/compatibility/platforms', `the bundle runs on ${platforms.join(', ')}, not ${platform}`));
  }
  const range = type.runtime === undefined ? undefined : doc.compatibility?.runtimes?.[type.runtime];
  if (range === undefined || type.runtime === undefined) return out;
  const at = pointerOf('compatibility', 'runtimes', type.runtime);
  const path = type.isInterpreter?.(command) === true ? await findOnPath(command, context.searchPath) : undefined;
  // Never run on the host: a program named python3 first on the search path is anyone's (review R6 N2).
  const version = path === undefined ? undefined : await interpreterVersionOf(path, type.runtime, context.interpreterVersion);
  if (version === undefined) {
    const unknown = path === undefined ? 'is not on the interpreter search path' : `at ${path} did not report its version in the plugins' sandbox (the only place an interpreter other than the host's Node is asked)`;
    out.push(violation('structure', 'PLUGIN_BUNDLE_INCOMPATIBLE', at, `${command} ${unknown}, so ${type.runtime} ${range} cannot be checked`));
    return out;
  }
  const fits = satisfiesRange(version, range);
  if (fits === undefined) out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', at, `"${range}" is not a version range this host reads`));
  else if (!fits) out.push(violation('structure', 'PLUGIN_BUNDLE_INCOMPATIBLE', at, `the bundle needs ${type.runtime} ${range}; ${path ?? command} is ${version}`));
  return out;
}

function toolsOf(doc: BundleDocument, out: Violation[], listable: boolean): ManifestTool[] {
  const tools = doc.tools ?? [];
  if (tools.length === 0 && !listable) {
    out.push(violation('structure', 'PLUGIN_BUNDLE_UNSUPPORTED', '/tools', 'the bundle lists no tools; the host offers and checks exactly the tools a manifest names, so list the server\'s tools in manifest.json'));
  }
  const seen = new Set<string>();
  tools.forEach((tool, index) => {
    if (!TOOL_NAME.test(tool.name)) out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', pointerOf('tools', index, 'name'), `tool name ${JSON.stringify(tool.name)} must be letters, digits, '_', '.', '-' (at most 128, not starting with plug.)`));
    else if (seen.has(tool.name)) out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', pointerOf('tools', index, 'name'), `tool name ${JSON.stringify(tool.name)} is listed twice`));
    seen.add(tool.name);
  });
  return tools.map((tool) => ({
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    // No hints to read (the MCPB format has none): MCP's default, as riskClassOf gives a tool its server lists bare.
    // `write` here let a bundle make any tool callable under maxRisk write just by listing it.
    risk_class: 'destructive',
    confirmation_policy: 'none',
    null_elision_safe_fields: [],
    capabilities: [],
    scopes: [],
  }));
}

/** Sensitive values: each the whole value of one env entry, which becomes a declared credential. */
function credentialsOf(doc: BundleDocument, env: Readonly<Record<string, string>>, out: Violation[]): { names: string[]; descriptors: CredentialDescriptor[]; rest: Record<string, string> } {
  const names: string[] = [];
  const descriptors: CredentialDescriptor[] = [];
  const rest: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const lone = /^\$\{user_config\.([^}]*)\}$/.exec(value);
    const key = lone?.[1];
    const entry = key === undefined ? undefined : userConfigEntry(doc, key);
    if (key === undefined || entry?.sensitive !== true) {
      rest[name] = value;
      continue;
    }
    const alias = key.toLowerCase();
    const at = pointerOf('server', 'mcp_config', 'env', name);
    if (!CREDENTIAL_ALIAS.test(alias) || descriptors.some((d) => d.alias === alias)) {
      out.push(violation('credentials', 'PLUGIN_BUNDLE_UNSUPPORTED', at, `sensitive user_config "${key}" must be a lowercase-able key (letters, digits, '_', '.', '-') passed in one env var only`));
      continue;
    }
    names.push(name);
    descriptors.push({ alias, env: name, kind: 'secret', display_name: entry.title, setup_hint: entry.description.trim() === '' ? entry.title : entry.description });
  }
  return { names, descriptors, rest };
}

/** The tools a listing returned, checked like listed ones: a name the catalog cannot hold is a violation. */
function listedTools(listed: readonly ManifestTool[], out: Violation[]): readonly ManifestTool[] {
  for (const tool of listed) {
    if (!TOOL_NAME.test(tool.name)) out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', '/tools', `the server lists tool ${JSON.stringify(tool.name)}, a name the host cannot offer (letters, digits, '_', '.', '-', at most 128)`));
  }
  if (listed.length === 0) out.push(violation('structure', 'PLUGIN_BUNDLE_UNSUPPORTED', '/tools', 'the bundle lists no tools, and neither does its server'));
  return listed;
}

// An npm package's scoped name, which a bundle shipped in that package may carry as its own.
const NPM_SCOPED_NAME = /^@([^/@]+)\/([^/@]+)$/;

/**
 * The plugin id a bundle's `name` becomes. A bundle shipped inside an npm
 * package may be named like the package, scope and all
 * (@microsoft/clarity-mcp-server@2.0.1's manifest.json says
 * "@microsoft/clarity-mcp-server"), which was refused as no plugin id: the
 * scope is kept, joined by '-' (`microsoft-clarity-mcp-server`), so two
 * vendors' `@a/mcp` and `@b/mcp` stay two plugins.
 */
function bundlePluginId(name: string): string | undefined {
  const scoped = NPM_SCOPED_NAME.exec(name);
  return pluginIdFromOpenDiscoveryName(scoped === null ? name : `${scoped[1] ?? ''}-${scoped[2] ?? ''}`);
}

async function mapBundle(doc: BundleDocument, context: BundleReadContext, root: string): Promise<{ violations: Violation[]; manifest?: NormalizedManifest; error?: HostError }> {
  const out: Violation[] = [];
  const pluginId = bundlePluginId(doc.name);
  if (pluginId === undefined) out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', '/name', `name ${JSON.stringify(doc.name)} must become a plugin id: a letter, then up to 63 letters, digits, '-' or '_' (lowercased; an npm scope '@scope/name' becomes 'scope-name')`));
  const type = BUNDLE_SERVER_TYPES[doc.server.type];
  if (type === undefined) {
    out.push(violation('structure', 'PLUGIN_BUNDLE_UNSUPPORTED', '/server/type', `server.type "${doc.server.type}" is not one this host runs (${Object.keys(BUNDLE_SERVER_TYPES).join(', ')})`));
    return { violations: out };
  }
  const entry = bundlePath(doc.server.entry_point);
  if (entry === undefined) out.push(violation('structure', 'PLUGIN_MANIFEST_INVALID', '/server/entry_point', 'must be a path inside the bundle'));
  const config = configFor(doc.server.mcp_config, context.platform ?? process.platform);
  const args = config.args ?? [];
  let tail: readonly string[];
  let interpreter: string | undefined;
  let commandRefused = false;
  if (type.isInterpreter !== undefined) {
    if (config.command.includes('/') || !type.isInterpreter(config.command)) {
      commandRefused = true;
      out.push(violation('structure', 'PLUGIN_BUNDLE_UNSUPPORTED', '/server/mcp_config/command', `a ${doc.server.type} server is run by its interpreter, named alone (e.g. ${doc.server.type === 'node' ? 'node' : 'python3'}), not "${config.command}"`));
    }
    if (args[0] === undefined || bundlePath(args[0]) !== entry) {
      out.push(violation('structure', 'PLUGIN_BUNDLE_UNSUPPORTED', '/server/mcp_config/args/0', `the first argument must be the entry point, \${__dirname}/${doc.server.entry_point}`));
    }
    interpreter = config.command;
    tail = args.slice(1);
  } else {
    if (bundlePath(config.command) !== entry) {
      out.push(violation('structure', 'PLUGIN_BUNDLE_UNSUPPORTED', '/server/mcp_config/command', `a binary server's command must be its entry point, \${__dirname}/${doc.server.entry_point}`));
    }
    tail = args;
  }
  // No prototype: a key such as __proto__ is a name like any other here.
  const settings: Record<string, SettingValue> = Object.create(null) as Record<string, SettingValue>;
  for (const [key, given] of Object.entries(context.settings ?? {})) {
    const checked = settingValue(key, given, userConfigEntry(doc, key));
    if (checked.isErr()) out.push(checked.error);
    else settings[key] = checked.value;
  }
  for (const [name, value] of Object.entries(config.env ?? {})) {
    // Judged here, before any start: a name with '=' would pass a name denylist and still set another variable (NODE_OPTIONS=…).
    if (!isValidEnvName(name) || !isValidEnvValue(value)) {
      out.push(violation('structure', 'PLUGIN_ENV_PROHIBITED', '/server/mcp_config/env', `env entry "${printableEnvName(name)}" is not an environment variable a process can be given (a name has no '=' or NUL, a value no NUL)`));
    }
  }
  const credentials = credentialsOf(doc, config.env ?? {}, out);
  const substitution = new Substitution(doc, settings, pluginId === undefined ? '' : context.dataDirOf(pluginId));
  const launchArgs = tail.flatMap((arg, i) => substitution.expand(arg, pointerOf('server', 'mcp_config', 'args', i + (interpreter === undefined ? 0 : 1))));
  const env = Object.fromEntries(Object.entries(credentials.rest).map(([name, value]) => [name, substitution.text(value, pointerOf('server', 'mcp_config', 'env', name))]));
  out.push(...substitution.violations);
  const python = type.runtime === 'python' ? pythonBundleLaunch(env) : undefined;
  out.push(...(python?.violations ?? []));
  let tools: readonly ManifestTool[] = toolsOf(doc, out, context.listTools !== undefined);
  // A refused command is never looked up: the runtime check asks what it finds its version (`--version`, in the sandbox).
  if (!commandRefused && (interpreter !== undefined || doc.compatibility !== undefined)) out.push(...(await compatibilityViolations(doc, type, interpreter ?? '', context)));
  if (hasViolations(out) || pluginId === undefined || entry === undefined) return { violations: out };
  let listed = false;
  // `tools_generated`: the server makes more tools at run time than the manifest lists, so only its own list is exact.
  if ((tools.length === 0 || doc.tools_generated === true) && context.listTools !== undefined) {
    const staged = (text: string): string => text.replaceAll(DIRNAME, root);
    const server = await context.listTools({
      root,
      executable: entry,
      ...(interpreter === undefined ? {} : { interpreter }),
      ...(python?.pythonPath === undefined ? {} : { pythonPath: python.pythonPath }),
      args: launchArgs.map(staged),
      env: Object.fromEntries(Object.entries(python?.env ?? env).map(([name, value]) => [name, staged(value)])),
      plugin: { plugin_id: pluginId, name: doc.display_name ?? doc.name, version: doc.version, ...(doc.license === undefined ? {} : { license: doc.license }), credentials: credentials.names },
    });
    if (server.isErr()) return { violations: [], error: server.error };
    tools = listedTools(server.value, out);
    listed = true;
    if (hasViolations(out)) return { violations: out };
  }
  for (const key of Object.keys(doc.user_config ?? {})) {
    const entryConfig = userConfigEntry(doc, key);
    if (entryConfig?.sensitive !== true && !substitution.used.has(key) && !Object.hasOwn(settings, key) && entryConfig?.default !== undefined) settings[key] = entryConfig.default;
  }
  return {
    violations: [],
    manifest: {
      form: 'mcpb',
      plugin_id: pluginId,
      name: doc.display_name ?? doc.name,
      version: doc.version,
      description: doc.description,
      shape: 'mcp-plugin',
      executable: entry,
      launch: {
        ...(interpreter === undefined ? {} : { interpreter }),
        ...(python?.pythonPath === undefined ? {} : { python_path: python.pythonPath }),
        args: launchArgs,
        env: python?.env ?? env,
        settings: { ...settings, ...Object.fromEntries(substitution.used) },
        missing_settings: [...substitution.missing].sort(),
      },
      tools,
      ...(listed ? { risk: BUNDLE_NEEDS_REVIEW } : {}),
      capabilities: context.defaultCapabilities,
      capabilities_source: 'host_default',
      requirements: { needs_user_creds: credentials.names, credential_descriptors: credentials.descriptors },
      output_profiles: {},
      ...(doc.license === undefined ? {} : { license: doc.license }),
      dependencies: [],
      schemas: [],
      raw: doc as unknown as Readonly<Record<string, unknown>>,
    },
  };
}

/**
 * Reads `manifest.json` at a package root as an MCP Bundle manifest: the
 * report of its checks (schema of its `manifest_version`, mapping,
 * compatibility) and the mapped manifest when it passes; `undefined` when
 * the file is not a bundle manifest (a GUM one, or unreadable or over the
 * manifest size limit: the manifest validator reports those). No more of
 * the file than that limit is read.
 */
export async function readBundleManifest(root: string, context: BundleReadContext): Promise<Result<ManifestReport | undefined, HostError>> {
  const path = join(root, BUNDLE_MANIFEST_FILE);
  let bytes: Buffer;
  try {
    bytes = await readAtMost(path, DEFAULT_PARSE_LIMITS.maxBytes);
  } catch (cause) {
    return err(ioError('Reading', path, cause));
  }
  const text = decodeManifestBytes(bytes, DEFAULT_PARSE_LIMITS);
  const doc = text.isOk() ? parseJsonText(text.value, DEFAULT_PARSE_LIMITS) : undefined;
  if (doc === undefined || doc.isErr() || !isBundleDocument(doc.value)) return ok(undefined);
  const report = (violations: Violation[], manifest?: NormalizedManifest): ManifestReport => ({ source: BUNDLE_MANIFEST_FILE, form: 'mcpb', violations: sortViolations(violations), manifest });
  const version = String((doc.value as Record<string, unknown>)['manifest_version'] ?? (doc.value as Record<string, unknown>)['dxt_version']);
  const schema = bundleSchemaViolations(doc.value, version);
  if (schema === undefined) {
    const field = (doc.value as Record<string, unknown>)['manifest_version'] === undefined ? '/dxt_version' : '/manifest_version';
    return ok(report([violation('schema_version', 'PLUGIN_BUNDLE_UNSUPPORTED', field, `manifest_version "${version}" is not one this host reads (${BUNDLE_MANIFEST_VERSIONS.join(', ')})`)]));
  }
  if (schema.length > 0) return ok(report(schema));
  const mapped = await mapBundle(doc.value as BundleDocument, context, root);
  return mapped.error === undefined ? ok(report(mapped.violations, mapped.manifest)) : err(mapped.error);
}
