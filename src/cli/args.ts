import { parseArgs } from 'node:util';
import { SANDBOX_BACKEND_CHOICES, isSandboxBackendChoice } from '../sandbox/backendChoice.js';
import type { ClientRequestKind, ManifestPreset, PackageLimits, PluginGrant, RiskClass, SandboxBackendChoice } from '../index.js';

/** Every option the CLI knows, as node:util parseArgs declares them. */
const OPTIONS = {
  profile: { type: 'string' },
  'profile-dir': { type: 'string' },
  'app-name': { type: 'string' },
  dev: { type: 'boolean' },
  'dev-allow-namespace-conflict': { type: 'boolean' },
  preset: { type: 'string' },
  sandbox: { type: 'string' },
  json: { type: 'boolean' },
  'no-color': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  checksum: { type: 'string' },
  signature: { type: 'string' },
  'trusted-key': { type: 'string', multiple: true },
  'require-signatures': { type: 'boolean' },
  'skip-canary': { type: 'boolean' },
  force: { type: 'boolean' },
  'allow-downgrade': { type: 'boolean' },
  'allow-signer-change': { type: 'boolean' },
  'forget-secrets': { type: 'boolean' },
  canary: { type: 'boolean' },
  live: { type: 'boolean' },
  strict: { type: 'boolean' },
  format: { type: 'string' },
  template: { type: 'string' },
  id: { type: 'string' },
  'canary-args': { type: 'string', multiple: true },
  plugin: { type: 'string' },
  'max-risk': { type: 'string' },
  yes: { type: 'boolean', short: 'y' },
  timeout: { type: 'string' },
  set: { type: 'string', multiple: true },
  'grant-network': { type: 'boolean' },
  'grant-write-dir': { type: 'string' },
  'grant-env': { type: 'string', multiple: true },
  'grant-egress': { type: 'string', multiple: true },
  'grant-client-request': { type: 'string', multiple: true },
  setting: { type: 'string', multiple: true },
  arg: { type: 'string', multiple: true },
  manifest: { type: 'string' },
  bin: { type: 'string' },
  registry: { type: 'string' },
  'python-index': { type: 'string' },
  config: { type: 'string' },
  http: { type: 'boolean' },
  port: { type: 'string' },
  bind: { type: 'string' },
  allow: { type: 'string', multiple: true },
  deny: { type: 'string', multiple: true },
  'token-env': { type: 'string' },
  'token-file': { type: 'string' },
  'allow-origin': { type: 'string', multiple: true },
  'hot-reload': { type: 'boolean' },
  name: { type: 'string' },
  input: { type: 'string' },
  'safe-field': { type: 'string', multiple: true },
  'max-archive-bytes': { type: 'string' },
  'max-extracted-bytes': { type: 'string' },
  'max-entries': { type: 'string' },
} as const;

/** The name of a CLI option. */
export type OptionName = keyof typeof OPTIONS;

/** Options every command accepts. */
export const GLOBAL_OPTIONS: readonly OptionName[] = [
  'profile',
  'profile-dir',
  'app-name',
  'dev',
  'dev-allow-namespace-conflict',
  'preset',
  'sandbox',
  'json',
  'no-color',
  'help',
];

/** The package limit flags, each mapped to its PluginHostOptions.packageLimits key (etc/package-limits.json holds the defaults). */
const LIMIT_FLAGS = {
  'max-archive-bytes': 'maxArchiveBytes',
  'max-extracted-bytes': 'maxExtractedBytes',
  'max-entries': 'maxEntries',
} as const satisfies Partial<Record<OptionName, keyof PackageLimits>>;

const LIMIT_OPTIONS = Object.keys(LIMIT_FLAGS) as (keyof typeof LIMIT_FLAGS)[];

const PACKAGE_OPTIONS: readonly OptionName[] = ['checksum', 'signature', 'trusted-key', 'require-signatures', ...LIMIT_OPTIONS];

const GRANT_OPTIONS: readonly OptionName[] = ['grant-network', 'grant-write-dir', 'grant-env', 'grant-egress', 'grant-client-request'];

/** How one command is called. */
export interface CommandSpec {
  /** Positional arguments as help shows them; a trailing `?` marks an optional one. */
  readonly args: readonly string[];
  /** One line for the command list. */
  readonly summary: string;
  /** Options beyond {@link GLOBAL_OPTIONS}. */
  readonly options: readonly OptionName[];
  /** Extra help paragraphs. */
  readonly details?: readonly string[];
}

/** The commands, in the order help lists them. */
export const COMMANDS = {
  init: {
    args: ['<dir>'],
    summary: 'scaffold a plugin repository: the plugin in plugin/, a test on mcp-plugin-host/testing, a CI workflow',
    options: ['template', 'id'],
    details: [
      '--template node (default): a server on the MCP SDK in src/, bundled into plugin/ by npm run build;',
      'python: a server on the Python standard library; mcpb: an MCP Bundle with no dependencies.',
      'The plugin id defaults to the directory name. The directory must be new or empty.',
    ],
  },
  validate: {
    args: ['<dir|archive|manifest>'],
    summary: 'run every install check on a package in a scratch profile; print every violation',
    options: [...PACKAGE_OPTIONS, 'canary', 'live', 'strict', 'format', 'timeout'],
    details: [
      'Nothing is installed: the checks run against a temporary profile that is deleted afterwards.',
      'A directory or a lone manifest file is checked as a dev install; an archive as a standard one',
      '(pass --checksum, or --dev). A package is also started and its tool list compared with the',
      'manifest (--live calls the declared canary tool instead); its stderr is shown if it dies.',
      '--format github prints workflow annotations, --format sarif a SARIF 2.1.0 log.',
      'Without a working OS sandbox every static check still runs; the checks that need the sandbox',
      '(pinning the executable, the canary) are reported as skipped and the exit code is 5, or, with',
      '--strict, the run fails with PLUGIN_SANDBOX_UNSUPPORTED (exit 4).',
    ],
  },
  install: {
    args: ['<dir|archive|npm:spec>'],
    summary: 'install or upgrade a plugin, then run its declared canary',
    options: [...PACKAGE_OPTIONS, ...GRANT_OPTIONS, 'setting', 'arg', 'manifest', 'bin', 'registry', 'python-index', 'skip-canary', 'force', 'allow-downgrade', 'allow-signer-change', 'yes', 'timeout'],
    details: [
      'Directories install only into dev profiles (--dev). Archives (.tgz, .zip) need --checksum',
      'outside dev profiles; <archive>.sig is read when --signature is not given.',
      'Installing the installed version again from the same package changes nothing; from other',
      'bytes it needs --force. A lower version than the installed one needs --allow-downgrade; a',
      'package not signed by the key that signed the installed one needs --allow-signer-change.',
      'The plugin becomes callable from the next mcp-plugin-host process (restart semantics).',
      'On a terminal the install first shows the namespace owner, terms of service, risk, license and',
      'powers and asks to accept them (--yes accepts; the same owner reinstalling is not asked again unless it asks for more powers).',
      'Outside dev profiles an archive or npm package must ship a LICENSE file under --preset gum.',
      'Sandbox grants: --grant-network, --grant-write-dir <dir inside the data dir>, --grant-env NAME',
      'and --grant-egress host[:port] (each repeatable); --grant-client-request sampling|elicitation|roots',
      'lets it ask the host (repeatable). They narrow what a manifest declares, or, for',
      'a source that declares nothing (an MCP Bundle), are all it gets beyond the default: no network,',
      'no writable dir beyond its data dir, no host env. Any grant flag replaces the whole grant.',
      "--setting key=value sets an MCP Bundle's user_config value (repeat a key for a list); sensitive",
      'values are credentials: store them with setup.',
      'npm:<name>@<version> (or npm:<file>.tgz from npm pack) installs a published npm server with its',
      'production dependencies (fetched by npm, install scripts never run). Without a manifest in the',
      'package or --manifest <file>, one is generated from the server\'s own tool list (see wrap).',
      '--bin <name> runs that bin of the npm package as its server (e.g. <name>-mcp beside a CLI);',
      'later installs of the plugin without --bin keep it.',
      '--registry <url> fetches npm:<name>@<version> from that npm registry instead of the default. The same',
      'name from another registry than the installed version came from is asked about as an owner change',
      '(refused without --yes off a terminal), before any of its code runs.',
      '--arg <value> (repeatable) is passed to the executable; ${data_dir} stands for its data dir.',
      'A Python package whose executable is a console script is installed into a private environment',
      'from the wheels it ships, offline; --python-index <url> lets pip fetch missing wheels from that',
      'PEP 503 index.',
      'Package limits: --max-archive-bytes <n>, --max-extracted-bytes <n> (a number of bytes, or with a',
      'K, M or G suffix: KiB, MiB, GiB) and --max-entries <n> replace the defaults (see the options).',
    ],
  },
  wrap: {
    args: ['<npm:spec>'],
    summary: 'print the manifest an npm server would be installed with (generated from its tool list)',
    options: ['arg', 'bin', 'registry', 'grant-client-request', 'grant-env', 'grant-network', 'grant-egress', 'yes', ...LIMIT_OPTIONS],
    details: [
      'Fetches the package as install does, starts the server once in the sandbox (no network, a',
      'throwaway data dir) and prints a manifest built from its tools/list: risk classes from the tool',
      'annotations (destructiveHint destructive, otherwise write: never read, as readOnlyHint is the',
      "server's own claim). It is marked needs_review: read it, adjust it (a read-only tool to read),",
      'then install with --manifest <file>. Nothing is installed. --grant-client-request KIND announces',
      'that request kind at initialize, as an install granting it does (some servers list more tools then).',
      '--grant-env NAME passes that host environment variable to the start, as an install granting it',
      'does: a server that needs a token to start (SLACK_BOT_TOKEN=... wrap ... --grant-env SLACK_BOT_TOKEN).',
      '--grant-network, or --grant-egress host[:port] (repeatable), gives the start that network, as an',
      'install granting it does (a server that connects while it starts, such as a remote proxy); on a',
      'terminal it first asks to start the package with that network (--yes accepts).',
      '--max-archive-bytes, --max-extracted-bytes and --max-entries bound the fetched package, as for install.',
      '--bin <name> starts that bin of the package, as install --bin does (the manifest then names its file).',
      '--registry <url> fetches the package from that npm registry, as install --registry does.',
    ],
  },
  list: { args: [], summary: 'list installed plugins', options: [] },
  info: { args: ['<name>'], summary: 'show everything known about one plugin (no env names, no secrets)', options: [] },
  tools: {
    args: ['<name>'],
    summary: 'list the tools a plugin offers, with their op ids, risk classes, schemas and annotations',
    options: ['timeout'],
    details: ['The plugin is started in its sandbox to answer, as for a call; --json prints the schemas whole.'],
  },
  run: {
    args: ['<plugin>', '<tool>', '<json-args|->?'],
    summary: 'call plug.<plugin>.<tool> with a JSON object of arguments ("-" reads stdin)',
    options: ['max-risk', 'yes', 'timeout'],
    details: [
      'Only read tools run unless --max-risk write|destructive allows more. A high_stakes_write',
      'tool asks for confirmation on a terminal, or needs --yes.',
    ],
  },
  remove: {
    args: ['<name>'],
    summary: 'remove a plugin (its namespace owner stays recorded)',
    options: ['yes', 'forget-secrets'],
    details: [
      'On a terminal it asks first; --yes skips the question. Without a terminal (scripts, CI) it does not ask.',
      'Its data directory and stored credentials are kept for a reinstall; --forget-secrets deletes the credentials too.',
    ],
  },
  reload: { args: ['<name>'], summary: 'clear quarantine, restart the plugin and run a passive canary', options: ['timeout'] },
  canary: {
    args: ['<name>'],
    summary: "run a plugin's canary (passive: start + tool list; --live: call the canary tool)",
    options: ['live', 'canary-args', 'plugin', 'timeout'],
    details: [
      "--plugin=<name> names the plugin as the GUM contract spells it (same as the positional name).",
      "--canary-args='k=v k2=v2' (one argument, as the contract writes it, or several) overrides those",
      'declared canary arguments; quote a value with spaces (city="New York"); each value is read as',
      'JSON when it parses (5, true, "x", {...}) and as a string otherwise (+7d, +2w: relative dates).',
      'The arguments are checked against the tool\'s input schema first: a mismatch fails the canary.',
    ],
  },
  setup: {
    args: ['<name>'],
    summary: "store a plugin's credentials and run its live canary",
    options: ['set', 'timeout'],
    details: [
      '--set NAME=- reads one credential (NAME is the env name or the alias) from stdin: piped, or',
      'typed hidden on a terminal; --set NAME alone takes it from this process\'s environment',
      'variable NAME. Both keep it out of the process list. --set NAME=value still works, with a',
      'warning: the command line is visible to other users and kept in shell history.',
      'Without --set, each credential is prompted for on a terminal.',
      'Secret values are never printed.',
    ],
  },
  unquarantine: { args: ['<name>'], summary: 'clear quarantine without starting anything', options: [] },
  quarantine: {
    args: ['<name>'],
    summary: 'quarantine a plugin now, in every host open on the profile, until unquarantine or reload',
    options: [],
    details: [
      'Every host on the profile refuses its calls from the next one on (VARIANT_QUARANTINED) and stops',
      'its running process within about a second, after the calls in flight finish (up to the drain deadline).',
    ],
  },
  serve: {
    args: [],
    summary: 'serve every active plugin as one MCP server (stdio, or Streamable HTTP with --http)',
    options: ['config', 'http', 'port', 'bind', 'max-risk', 'allow', 'deny', 'token-env', 'token-file', 'allow-origin', 'timeout', 'hot-reload'],
    details: [
      'Tools are listed under their op ids (plug.<plugin>.<tool>) with the schemas and annotations the',
      'plugins state; calls run in the sandbox under --max-risk (default read). Failures come back as',
      'tool results with isError and the host error code. Over stdio nothing but MCP is written to stdout.',
      '--http listens on 127.0.0.1 (--bind, --port; default port 8765) at /mcp and wants a bearer token:',
      'from --token-env NAME or --token-file <file>, else one is generated and printed once on stderr.',
      'Requests from an Origin that is not loopback are refused unless given with --allow-origin.',
      '--allow and --deny (plugin ids or op ids, repeatable) choose what is offered; deny wins.',
      '--config <file> reads a JSON configuration (schema: etc/schemas/gateway-config.schema.json) with',
      'a key for every flag, plus HTTP clients with their own tokens, ceilings and filters; flags win.',
    ],
  },
  profile: {
    args: ['<validate|test>', '<file>'],
    summary: 'check an output profile file (TOML or JSON), or run its fixture tests',
    options: ['name', 'input', 'safe-field'],
    details: [
      'The file holds an output_profiles table, as a GUM manifest writes it, and optional [[tests]]',
      '(name, profile, fixture, null_elision_safe_fields, expect_output, expect_lossy,',
      'expect_result_count, expect_omitted_count, expect_max_tokens, expect_fields; paths relative to the file).',
      'validate reports every problem: unknown fields, a missing or circular base, on_empty too long,',
      'a lossy profile with recovery "none". test runs each test (--name <profile>: only that',
      "profile's); with --input <sample.json> it prints what --name (or the file's only profile) makes",
      'of that sample instead, --safe-field <dot.path> (repeatable) standing for the tool\'s',
      'null_elision_safe_fields. Exit code 3 when the file or a test fails.',
    ],
  },
} as const satisfies Record<string, CommandSpec>;

/** A command name. */
export type CommandName = keyof typeof COMMANDS;

/** Every flag, typed and checked. */
export interface Flags {
  /** Profile name. */
  readonly profile: string | undefined;
  /** Profile directory overriding the XDG location. */
  readonly profileDir: string | undefined;
  /** Application name (selects `$XDG_DATA_HOME/<app-name>`). */
  readonly appName: string | undefined;
  /** Dev profile kind. */
  readonly dev: boolean;
  /** Dev-only namespace override. */
  readonly devAllowNamespaceConflict: boolean;
  /** Manifest preset. */
  readonly preset: ManifestPreset | undefined;
  /** The Linux sandbox backend (`--sandbox`); unset: the host's default. */
  readonly sandbox: SandboxBackendChoice | undefined;
  /** One JSON document on stdout and nothing for people (`--json`, `--format json` or `--format sarif`). */
  readonly json: boolean;
  /** Expected package checksum. */
  readonly checksum: string | undefined;
  /** Signature file. */
  readonly signature: string | undefined;
  /** Trusted public keys (text or files). */
  readonly trustedKeys: readonly string[];
  /** Refuse unsigned packages. */
  readonly requireSignatures: boolean;
  /** install: do not run the canary. */
  readonly skipCanary: boolean;
  /** install: replace the installed package at the same version. */
  readonly force: boolean;
  /** install: accept a lower version than the installed one. */
  readonly allowDowngrade: boolean;
  /** install: accept a package not signed by the key that signed the installed version. */
  readonly allowSignerChange: boolean;
  /** remove: delete the plugin's stored credentials too (PluginHost.remove's forgetSecrets). */
  readonly forgetSecrets: boolean;
  /** validate: also start the plugin. */
  readonly canary: boolean;
  /** Live canary. */
  readonly live: boolean;
  /** validate: a check skipped for want of a sandbox fails the run. */
  readonly strict: boolean;
  /** How results are printed: `text` for people, `json` (as --json), `github` (workflow annotations) or `sarif`. */
  readonly format: OutputFormat;
  /** init: the kind of plugin to scaffold. */
  readonly template: InitTemplate | undefined;
  /** init: the plugin id. */
  readonly id: string | undefined;
  /** canary: argument overrides. */
  readonly canaryArgs: Readonly<Record<string, unknown>> | undefined;
  /** run: highest accepted risk class. */
  readonly maxRisk: RiskClass | undefined;
  /** run: confirm high_stakes_write. */
  readonly yes: boolean;
  /** Call timeout in ms. */
  readonly timeoutMs: number | undefined;
  /** setup: credential assignments as typed (NAME=value or NAME). */
  readonly set: readonly string[];
  /** install: the sandbox grant, when any grant flag was given. */
  readonly grant: PluginGrant | undefined;
  /** install: bundle settings by key (a repeated key is a list), when any --setting was given. */
  readonly settings: Readonly<Record<string, string | readonly string[]>> | undefined;
  /** install, wrap: arguments for the executable. */
  readonly args: readonly string[];
  /** install: a manifest file for a package that ships none. */
  readonly manifestFile: string | undefined;
  /** install, wrap: the bin of an npm package to run as its server (InstallOptions.bin). */
  readonly bin: string | undefined;
  /** install, wrap: the npm registry an `npm:<name>@<version>` source is fetched from (PluginHostOptions.npm.registry). */
  readonly registry: string | undefined;
  /** install: the package index pip may fetch a Python package's missing wheels from. */
  readonly pythonIndexUrl: string | undefined;
  /** serve: the gateway configuration file. */
  readonly config: string | undefined;
  /** serve: Streamable HTTP instead of stdio. */
  readonly http: boolean;
  /** serve: the HTTP port. */
  readonly port: number | undefined;
  /** serve: the HTTP address to bind. */
  readonly bind: string | undefined;
  /** serve: plugin ids and op ids offered. */
  readonly allow: readonly string[];
  /** serve: plugin ids and op ids never offered. */
  readonly deny: readonly string[];
  /** serve: the environment variable holding the bearer token. */
  readonly tokenEnv: string | undefined;
  /** serve: the file holding the bearer token. */
  readonly tokenFile: string | undefined;
  /** serve: Origins accepted besides loopback ones. */
  readonly allowOrigins: readonly string[];
  /** serve: follow plugins other processes install, upgrade or remove (PluginHostOptions.hotReload). */
  readonly hotReload: boolean;
  /** profile: the output profile to apply or test. */
  readonly outputProfile: string | undefined;
  /** profile test: a sample result to shape. */
  readonly input: string | undefined;
  /** profile test: the null_elision_safe_fields the sample is shaped with. */
  readonly safeFields: readonly string[];
  /** install, validate, wrap: package limits given by flag (PluginHostOptions.packageLimits), when any was given. */
  readonly packageLimits: Partial<PackageLimits> | undefined;
}

/** The output formats of `--format`. */
export const OUTPUT_FORMATS = ['text', 'json', 'github', 'sarif'] as const;

/** One of {@link OUTPUT_FORMATS}. */
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** What the command line asks for. */
export type Invocation =
  | { readonly kind: 'help'; readonly command: CommandName | undefined }
  | { readonly kind: 'version' }
  | { readonly kind: 'command'; readonly command: CommandName; readonly positionals: readonly string[]; readonly flags: Flags };

/** A command line the CLI cannot run; `command` selects the help to point at. */
export interface UsageProblem {
  /** What is wrong. */
  readonly message: string;
  /** The command it concerns, when known. */
  readonly command?: CommandName;
}

/** Whether the user asked for JSON (`--json`, `--format json` or `--format sarif`), judged even on a command line that does not parse. */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  const options = end === -1 ? argv : argv.slice(0, end);
  const format = options.flatMap((token, i) => (token === '--format' ? [options[i + 1]] : token.startsWith('--format=') ? [token.slice(9)] : []));
  return options.includes('--json') || format.some((f) => f === 'json' || f === 'sarif');
}

/**
 * A command's positional arguments as the usage line and messages show them: an optional one (spelled with a
 * trailing `?` in {@link COMMANDS}) in brackets, so no message shows the table's own notation.
 */
export function shownArgs(args: readonly string[]): string[] {
  return args.map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : a));
}

/** Whether a word names a command. */
export function isCommandName(value: string): value is CommandName {
  return Object.prototype.hasOwnProperty.call(COMMANDS, value);
}

const KEY_VALUE = /^[A-Za-z_][A-Za-z0-9_.-]*=/;

/** `--canary-args a=1 b=2` is one flag followed by several pairs; parseArgs wants one flag per value. */
function spreadCanaryArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  let spreading = false;
  for (const token of argv) {
    if (token === '--canary-args') {
      spreading = true;
      out.push(token);
      continue;
    }
    if (spreading && KEY_VALUE.test(token) && out[out.length - 1] !== '--canary-args') out.push('--canary-args');
    else if (!(spreading && out[out.length - 1] === '--canary-args')) spreading = false;
    out.push(token);
  }
  return out;
}

/** Other spellings of an option, read as the option itself. */
const ALIASES: Readonly<Record<string, string>> = { '-V': '--version' };

function withAliases(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.map((token, i) => (end !== -1 && i > end ? token : (ALIASES[token] ?? token)));
}

/** A util.parseArgs failure in the CLI's own words, with the closest option for an unknown one. */
function parseFailure(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  if (unknown !== null) {
    const typed = unknown[1] ?? '';
    const near = typed.startsWith('--') ? nearest(typed.slice(2).split('=')[0] ?? '', Object.keys(OPTIONS)) : undefined;
    return `unknown option '${typed}'${near === undefined ? '' : ` (did you mean '--${near}'?)`}`;
  }
  const missing = /^Option '(?:-\w, )?(--[\w-]+) <value>' argument missing/.exec(message);
  if (missing !== null) return `${missing[1] ?? 'this option'} needs a value`;
  const extra = /^Option '(?:-\w, )?(--[\w-]+)' does not take an argument/.exec(message);
  if (extra !== null) return `${extra[1] ?? 'this option'} takes no value`;
  // A server's own flags, as its README passes them (`npx -y pkg --stdio`), are values that begin with a dash.
  const dashed = /^Option '(?:-\w, )?(--[\w-]+)' argument is ambiguous/.exec(message);
  if (dashed !== null) return `${dashed[1] ?? 'this option'}'s value begins with '-': write it joined, ${dashed[1] ?? '--option'}=-value (e.g. --arg=--stdio)`;
  return message.split('\n')[0] ?? 'invalid command line';
}

type Values = { readonly [K in OptionName]?: string | boolean | readonly string[] | undefined };

/** Parses a command line into an {@link Invocation}, or says what is wrong with it. */
export function parseInvocation(argv: readonly string[]): { ok: true; value: Invocation } | { ok: false; problem: UsageProblem } {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: spreadCanaryArgs(withAliases(argv)), options: OPTIONS, allowPositionals: true, strict: true });
  } catch (cause) {
    return usage(parseFailure(cause), argv.find((a) => isCommandName(a)));
  }
  const { values } = parsed;
  let positionals = parsed.positionals;
  if (positionals[0] === 'help') {
    const topic = positionals[1];
    if (topic === undefined) return { ok: true, value: { kind: 'help', command: undefined } };
    return isCommandName(topic) ? { ok: true, value: { kind: 'help', command: topic } } : unknownCommand(topic);
  }
  const name = positionals[0];
  if (values.version === true && name === undefined) return { ok: true, value: { kind: 'version' } };
  if (name === undefined) {
    if (values.help === true) return { ok: true, value: { kind: 'help', command: undefined } };
    return usage('no command given');
  }
  if (!isCommandName(name)) return unknownCommand(name);
  if (values.help === true) return { ok: true, value: { kind: 'help', command: name } };
  const spec: CommandSpec = COMMANDS[name];
  positionals = positionals.slice(1);
  const named = typeof values.plugin === 'string' ? values.plugin : undefined;
  if (named !== undefined && name === 'canary') {
    if (named === '') return usage('--plugin needs a value', name);
    if (positionals.length > 0 && positionals[0] !== named) return usage(`--plugin=${named} and '${positionals[0] ?? ''}' name different plugins`, name);
    positionals = [named, ...positionals.slice(1)];
  }

  const allowed = new Set<OptionName>([...GLOBAL_OPTIONS, ...spec.options]);
  for (const option of Object.keys(values) as OptionName[]) {
    if (!allowed.has(option)) return usage(`option --${option} does not apply to '${name}'`, name);
  }
  const required = spec.args.filter((a) => !a.endsWith('?')).length;
  if (positionals.length < required) return usage(`'${name}' needs ${shownArgs(spec.args).join(' ')}`, name);
  if (positionals.length > spec.args.length) return usage(`'${name}' takes ${spec.args.length === 0 ? 'no arguments' : shownArgs(spec.args).join(' ')}; unexpected '${positionals[spec.args.length] ?? ''}'`, name);

  const flags = readFlags(values, name);
  if (!flags.ok) return flags;
  return { ok: true, value: { kind: 'command', command: name, positionals, flags: flags.value } };
}

function readFlags(values: Values, command: CommandName): { ok: true; value: Flags } | { ok: false; problem: UsageProblem } {
  const text = (k: OptionName): string | undefined => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  const bool = (k: OptionName): boolean => values[k] === true;
  const list = (k: OptionName): readonly string[] => (Array.isArray(values[k]) ? (values[k] as readonly string[]) : []);

  const preset = text('preset');
  if (preset !== undefined && preset !== 'gum' && preset !== 'neutral') return usage(`--preset must be gum or neutral, not '${preset}'`, command);
  const sandbox = text('sandbox');
  if (sandbox !== undefined && !isSandboxBackendChoice(sandbox)) return usage(`--sandbox must be ${SANDBOX_BACKEND_CHOICES.join(', ')}, not '${sandbox}'`, command);
  const maxRisk = text('max-risk');
  if (maxRisk !== undefined && maxRisk !== 'read' && maxRisk !== 'write' && maxRisk !== 'destructive') {
    return usage(`--max-risk must be read, write or destructive, not '${maxRisk}'`, command);
  }
  const format = text('format') ?? (bool('json') ? 'json' : 'text');
  if (!isOutputFormat(format)) {
    const near = nearest(format, OUTPUT_FORMATS);
    return usage(`--format must be ${OUTPUT_FORMATS.join(', ')}, not '${format}'${near === undefined ? '' : ` (did you mean '${near}'?)`}`, command);
  }
  if (bool('json') && format !== 'json') return usage(`--json and --format ${format} ask for two outputs: give one`, command);
  const template = text('template');
  if (template !== undefined && !isInitTemplate(template)) {
    const near = nearest(template, INIT_TEMPLATES);
    return usage(`--template must be ${INIT_TEMPLATES.join(', ')}, not '${template}'${near === undefined ? '' : ` (did you mean '${near}'?)`}`, command);
  }
  const timeout = text('timeout');
  let timeoutMs: number | undefined;
  if (timeout !== undefined) {
    timeoutMs = /^[1-9][0-9]{0,9}$/.test(timeout) ? Number(timeout) : Number.NaN;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs > 2_147_483_647) return usage(`--timeout must be a positive number of milliseconds, not '${timeout}'`, command);
  }
  if (bool('dev-allow-namespace-conflict') && !bool('dev')) return usage('--dev-allow-namespace-conflict works only in dev profiles: add --dev', command);
  for (const k of ['profile', 'profile-dir', 'app-name', 'checksum', 'signature', 'grant-write-dir', 'config', 'bind', 'token-env', 'token-file'] as const) {
    if (text(k) === '') return usage(`--${k} needs a value`, command);
  }
  const port = text('port');
  if (port !== undefined && !/^(0|[1-9][0-9]{0,4})$/.test(port)) return usage(`--port must be a port number, not '${port}'`, command);
  if (port !== undefined && Number(port) > 65_535) return usage(`--port must be at most 65535, not '${port}'`, command);
  const canaryArgs = readCanaryArgs(list('canary-args'));
  if (!canaryArgs.ok) return usage(canaryArgs.message, command);
  const settings = readSettings(list('setting'));
  if (!settings.ok) return usage(settings.message, command);
  const packageLimits = readPackageLimits(text);
  if (!packageLimits.ok) return usage(packageLimits.message, command);

  return {
    ok: true,
    value: {
      profile: text('profile'),
      profileDir: text('profile-dir'),
      appName: text('app-name'),
      dev: bool('dev'),
      devAllowNamespaceConflict: bool('dev-allow-namespace-conflict'),
      preset,
      sandbox,
      json: format === 'json' || format === 'sarif',
      format,
      template,
      id: text('id'),
      checksum: text('checksum'),
      signature: text('signature'),
      trustedKeys: list('trusted-key'),
      requireSignatures: bool('require-signatures'),
      skipCanary: bool('skip-canary'),
      force: bool('force'),
      allowDowngrade: bool('allow-downgrade'),
      allowSignerChange: bool('allow-signer-change'),
      forgetSecrets: bool('forget-secrets'),
      canary: bool('canary'),
      live: bool('live'),
      strict: bool('strict'),
      canaryArgs: canaryArgs.value,
      maxRisk,
      yes: bool('yes'),
      timeoutMs,
      set: list('set'),
      grant: grantOf(bool('grant-network'), text('grant-write-dir'), list('grant-env'), list('grant-egress'), list('grant-client-request')),
      settings: settings.value,
      args: list('arg'),
      manifestFile: text('manifest'),
      bin: text('bin'),
      registry: text('registry'),
      pythonIndexUrl: text('python-index'),
      config: text('config'),
      http: bool('http'),
      port: port === undefined ? undefined : Number(port),
      bind: text('bind'),
      allow: list('allow'),
      deny: list('deny'),
      tokenEnv: text('token-env'),
      tokenFile: text('token-file'),
      allowOrigins: list('allow-origin'),
      hotReload: bool('hot-reload'),
      outputProfile: text('name'),
      input: text('input'),
      safeFields: list('safe-field'),
      packageLimits: packageLimits.value,
    },
  };
}

const BINARY_UNITS: Readonly<Record<string, number>> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 };

/**
 * The package limit flags as PluginHostOptions.packageLimits; sizes take a K,
 * M or G suffix (binary units), as the defaults are whole MiB. The host
 * checks each limit again (a positive safe integer).
 */
function readPackageLimits(text: (k: OptionName) => string | undefined): { ok: true; value: Partial<PackageLimits> | undefined } | { ok: false; message: string } {
  const limits: Partial<Record<keyof PackageLimits, number>> = {};
  for (const flag of LIMIT_OPTIONS) {
    const given = text(flag);
    if (given === undefined) continue;
    const sized = flag !== 'max-entries';
    const match = (sized ? /^([1-9][0-9]*)([KMG]?)$/i : /^([1-9][0-9]*)()$/).exec(given);
    const value = match === null ? Number.NaN : Number(match[1]) * (BINARY_UNITS[(match[2] ?? '').toUpperCase()] ?? Number.NaN);
    if (!Number.isSafeInteger(value)) {
      return { ok: false, message: `--${flag} must be a positive ${sized ? 'number of bytes (or with a K, M or G suffix)' : 'whole number'}, not '${given}'` };
    }
    limits[LIMIT_FLAGS[flag]] = value;
  }
  return { ok: true, value: Object.keys(limits).length === 0 ? undefined : limits };
}

/** `--setting key=value` pairs by key; a key given more than once collects a list. */
function readSettings(pairs: readonly string[]): { ok: true; value: Record<string, string | string[]> | undefined } | { ok: false; message: string } {
  if (pairs.length === 0) return { ok: true, value: undefined };
  const out: Record<string, string | string[]> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) return { ok: false, message: `--setting needs key=value, not '${pair}'` };
    const [key, value] = [pair.slice(0, at), pair.slice(at + 1)];
    const before = out[key];
    out[key] = before === undefined ? value : [...(Array.isArray(before) ? before : [before]), value];
  }
  return { ok: true, value: out };
}

/** The grant the grant flags spell; undefined when none was given (the install keeps the declaration or the default). */
function grantOf(network: boolean, writeDir: string | undefined, env: readonly string[], egress: readonly string[], requests: readonly string[]): PluginGrant | undefined {
  if (!network && writeDir === undefined && env.length === 0 && egress.length === 0 && requests.length === 0) return undefined;
  return {
    network,
    fs_write_dir: writeDir ?? '',
    env_allow: [...env],
    ...(egress.length === 0 ? {} : { egress: [...egress] }),
    // The install checks each kind (PLUGIN_CLIENT_REQUESTS_INVALID), as it checks a library grant.
    ...(requests.length === 0 ? {} : { client_requests: [...requests] as ClientRequestKind[] }),
  };
}

/** Reads one `k=v` value: JSON when it parses, the raw string otherwise. */
function looseValue(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/**
 * Splits one `--canary-args` value into its `k=v` words at unquoted
 * whitespace; single or double quotes group a value with spaces and are
 * dropped. Undefined when a quote is left open.
 */
function canaryWords(text: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (const char of text) {
    if (quote !== undefined) {
      if (char === quote) quote = undefined;
      else word = (word ?? '') + char;
    } else if (char === '"' || char === "'") {
      quote = char;
      word ??= '';
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + char;
    }
  }
  if (quote !== undefined) return undefined;
  if (word !== undefined) words.push(word);
  return words;
}

function readCanaryArgs(values: readonly string[]): { ok: true; value: Record<string, unknown> | undefined } | { ok: false; message: string } {
  if (values.length === 0) return { ok: true, value: undefined };
  const out: Record<string, unknown> = {};
  for (const value of values) {
    if (value.trimStart().startsWith('{')) {
      const object = looseValue(value);
      if (typeof object !== 'object' || object === null || Array.isArray(object)) return { ok: false, message: '--canary-args {...} must be a JSON object' };
      Object.assign(out, object);
      continue;
    }
    const words = canaryWords(value);
    if (words === undefined) return { ok: false, message: `--canary-args: unclosed quote in '${value}'` };
    for (const pair of words) {
      const eq = pair.indexOf('=');
      if (eq <= 0) return { ok: false, message: `--canary-args takes key=value pairs or a JSON object, not '${pair}'` };
      out[pair.slice(0, eq)] = looseValue(pair.slice(eq + 1));
    }
  }
  return { ok: true, value: out };
}

/** The kinds of plugin `init` scaffolds (a folder of etc/templates each). */
export const INIT_TEMPLATES = ['node', 'python', 'mcpb'] as const;

/** One of {@link INIT_TEMPLATES}. */
export type InitTemplate = (typeof INIT_TEMPLATES)[number];

function isInitTemplate(value: string): value is InitTemplate {
  return (INIT_TEMPLATES as readonly string[]).includes(value);
}

function isOutputFormat(value: string): value is OutputFormat {
  return (OUTPUT_FORMATS as readonly string[]).includes(value);
}

function usage(message: string, command?: CommandName): { ok: false; problem: UsageProblem } {
  return { ok: false, problem: command === undefined ? { message } : { message, command } };
}

/** The name nearest a misspelt one, when it is close enough (two edits) to be what was meant. */
export function nearest(name: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(candidate, name);
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

function unknownCommand(name: string): { ok: false; problem: UsageProblem } {
  const near = nearest(name, Object.keys(COMMANDS));
  return usage(`unknown command '${name}'${near === undefined ? '' : ` (did you mean '${near}'?)`}`);
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
