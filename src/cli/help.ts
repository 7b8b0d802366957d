import { COMMANDS, GLOBAL_OPTIONS, shownArgs, type CommandName, type CommandSpec, type OptionName } from './args.js';
import { EXIT_CODE_LINES } from './exitCodes.js';
import { columns, type Style } from './style.js';
import commandExamples from '../../etc/cli-examples.json' with { type: 'json' };
import npmSettings from '../../etc/npm-install.json' with { type: 'json' };
import packageLimits from '../../etc/package-limits.json' with { type: 'json' };

/** Examples shown under each command's help, from etc/cli-examples.json. */
const EXAMPLES: Readonly<Partial<Record<string, readonly string[]>>> = commandExamples;

/** The program name, as help and messages spell it. */
export const PROGRAM = 'mcp-plugin-host';

// A default limit as the flags take it: whole MiB with an M suffix.
const sizeText = (bytes: number): string => (bytes % 1024 ** 2 === 0 ? `${bytes / 1024 ** 2}M` : String(bytes));

const OPTION_HELP: Readonly<Record<OptionName, readonly [string, string]>> = {
  profile: ['--profile <name>', 'profile name (default "default")'],
  'profile-dir': ['--profile-dir <dir>', 'profile directory, overriding $XDG_DATA_HOME/<app-name>/<profile>'],
  'app-name': ['--app-name <name>', 'application name for the default profile location (default mcp-plugin-host)'],
  dev: ['--dev', 'dev profile: local directories, no checksum needed, dev-only overrides'],
  'dev-allow-namespace-conflict': ['--dev-allow-namespace-conflict', 'with --dev: install despite another recorded namespace owner'],
  preset: ['--preset gum|neutral', 'gum: the GUM contract exactly (mcp-plugin only); neutral: every shape (default)'],
  sandbox: ['--sandbox auto|landlock|bubblewrap', 'Linux sandbox backend: auto (default) uses the Landlock launcher once proved, else bubblewrap'],
  json: ['--json', 'print one JSON document on stdout: {"ok":true,...} or {"ok":false,"error":{...}}'],
  'no-color': ['--no-color', 'no colour (also NO_COLOR=1); colour is used only on a terminal'],
  help: ['-h, --help', 'show help'],
  version: ['-v, -V, --version', 'show the version'],
  checksum: ['--checksum sha256:<hex>', 'expected SHA-256 of the archive'],
  signature: ['--signature <file>', 'Ed25519 signature of the archive digest (default <archive>.sig)'],
  'trusted-key': ['--trusted-key <pem|base64|file>', 'a public key whose signatures are trusted (repeatable)'],
  'require-signatures': ['--require-signatures', 'refuse packages not signed by a trusted key'],
  'skip-canary': ['--skip-canary', 'do not run the declared canary after installing'],
  force: ['--force', 'replace the installed package when the same version comes from other bytes'],
  'allow-downgrade': ['--allow-downgrade', 'install a lower version than the one installed'],
  'allow-signer-change': ['--allow-signer-change', 'install a package not signed by the key that signed the installed version'],
  'forget-secrets': ['--forget-secrets', "remove: delete the plugin's stored credentials too (kept otherwise)"],
  canary: ['--canary', 'validate: kept for scripts (the tool list is always compared when the sandbox works)'],
  live: ['--live', 'call the declared canary tool instead of only starting the plugin'],
  strict: ['--strict', 'fail (exit 4) instead of skipping the checks that need the OS sandbox'],
  template: ['--template node|python|mcpb', 'init: the kind of plugin (default node: a server on the MCP SDK)'],
  id: ['--id <plugin-id>', 'init: the plugin id (default: the directory name)'],
  format: ['--format text|json|github|sarif', 'github: workflow annotations on each violation; sarif: a SARIF 2.1.0 log on stdout'],
  'canary-args': ["--canary-args='k=v ...'", 'override canary arguments (values read as JSON when they parse)'],
  plugin: ['--plugin=<name>', 'the plugin, as the GUM contract spells it (same as <name>)'],
  'max-risk': ['--max-risk read|write|destructive', 'highest risk class this call accepts (default read)'],
  yes: ['-y, --yes', 'confirm without asking (run: a high_stakes_write tool; remove; install and wrap: what they ask on a terminal)'],
  timeout: ['--timeout <ms>', 'time a plugin may stay silent during a call'],
  set: ['--set NAME=- | NAME | NAME=value', 'a credential to store (repeatable): =- reads stdin, NAME alone $NAME'],
  'grant-network': ['--grant-network', 'grant the plugin the network'],
  'grant-write-dir': ['--grant-write-dir <dir>', 'grant a writable directory inside its data dir'],
  'grant-env': ['--grant-env NAME', 'grant a host environment variable (repeatable)'],
  'grant-egress': ['--grant-egress host[:port]', 'grant a network destination (repeatable)'],
  'grant-client-request': ['--grant-client-request KIND', 'let it send sampling, elicitation or roots requests to the host (repeatable)'],
  setting: ['--setting key=value', "an MCP Bundle's user_config value (repeatable; a repeated key is a list)"],
  arg: ['--arg <value>', 'an argument for the executable (repeatable; ${data_dir} is its data dir; --arg=--flag for one that begins with -)'],
  manifest: ['--manifest <file>', 'the manifest to install a package that ships none with (JSON)'],
  bin: ['--bin <name>', "which of an npm package's bins is its MCP server (kept by later installs)"],
  registry: ['--registry <url>', `the npm registry an npm:<name>@<version> source is fetched from (default ${npmSettings.registry})`],
  'python-index': ['--python-index <url>', 'a package index pip may fetch missing Python wheels from'],
  config: ['--config <file>', 'a JSON gateway configuration (etc/schemas/gateway-config.schema.json)'],
  http: ['--http', 'serve Streamable HTTP at /mcp instead of stdio'],
  port: ['--port <n>', 'the HTTP port (default 8765; 0 picks a free one)'],
  bind: ['--bind <address>', 'the HTTP address to listen on (default 127.0.0.1)'],
  allow: ['--allow <plugin|op id>', 'offer only these plugins and operations (repeatable)'],
  deny: ['--deny <plugin|op id>', 'never offer these plugins and operations (repeatable; wins over --allow)'],
  'token-env': ['--token-env NAME', 'read the HTTP bearer token from $NAME'],
  'token-file': ['--token-file <file>', 'read the HTTP bearer token from the first line of a file'],
  'allow-origin': ['--allow-origin <origin>', 'accept HTTP requests from this Origin besides loopback (repeatable)'],
  'hot-reload': ['--hot-reload', 'serve plugins other processes install, upgrade or remove without restarting'],
  name: ['--name <profile>', 'the output profile to test, or to apply to --input'],
  input: ['--input <sample.json>', 'shape this sample result and print it'],
  'safe-field': ['--safe-field <dot.path>', "one of the tool's null_elision_safe_fields for --input (repeatable)"],
  'max-archive-bytes': ['--max-archive-bytes <n>[K|M|G]', `largest package archive accepted (default ${sizeText(packageLimits.maxArchiveBytes)})`],
  'max-extracted-bytes': ['--max-extracted-bytes <n>[K|M|G]', `largest total of unpacked file bytes (default ${sizeText(packageLimits.maxExtractedBytes)})`],
  'max-entries': ['--max-entries <n>', `most files and directories a package may hold (default ${packageLimits.maxEntries})`],
};

function optionRows(names: readonly OptionName[]): string[] {
  return columns(names.map((n) => ['  ' + OPTION_HELP[n][0], OPTION_HELP[n][1]]));
}

function usageLine(name: CommandName): string {
  const spec: CommandSpec = COMMANDS[name];
  return [PROGRAM, name, ...shownArgs(spec.args), '[options]'].join(' ');
}

function exitCodeRows(): string[] {
  return columns(EXIT_CODE_LINES.map(([code, meaning]) => [`  ${code}`, meaning]));
}

/** The general help text. */
export function generalHelp(style: Style): string {
  const names = Object.keys(COMMANDS) as CommandName[];
  return [
    `${style.bold(PROGRAM)} — install, verify, sandbox and run subprocess plugins`,
    '',
    style.bold('Usage'),
    `  ${PROGRAM} <command> [arguments] [options]`,
    `  ${PROGRAM} help <command>`,
    '',
    style.bold('Commands'),
    ...columns(names.map((n) => [`  ${n}`, COMMANDS[n].summary])),
    '',
    ...sharedSections(style),
    'Errors print "error CODE: message" and "hint: ..." on stderr (with --json, {"ok":false,"error":{...}} on stdout).',
    '',
  ].join('\n');
}

/** What a command-line error that names no command prints under the error: how to call, and the commands. */
export function shortUsage(): string {
  return [
    '',
    `Usage: ${PROGRAM} <command> [arguments] [options]`,
    `Commands: ${Object.keys(COMMANDS).join(', ')}`,
    `Run '${PROGRAM} help <command>' for one command, '${PROGRAM} --help' for everything.`,
  ].join('\n');
}

/** The sections every help text ends with: the global options and the exit codes. */
function sharedSections(style: Style): string[] {
  return [style.bold('Options for every command'), ...optionRows(GLOBAL_OPTIONS), '', style.bold('Exit codes'), ...exitCodeRows(), ''];
}

function examplesSection(name: CommandName, style: Style): string[] {
  const examples = EXAMPLES[name] ?? [];
  return examples.length === 0 ? [] : [style.bold('Examples'), ...examples.map((e) => `  ${e}`), ''];
}

/** The help text of one command. */
export function commandHelp(name: CommandName, style: Style): string {
  const spec: CommandSpec = COMMANDS[name];
  return [
    `${style.bold('Usage')}: ${usageLine(name)}`,
    '',
    `  ${spec.summary}`,
    ...(spec.details === undefined ? [] : ['', ...spec.details.map((d) => `  ${d}`)]),
    '',
    ...(spec.options.length === 0 ? [] : [style.bold('Options'), ...optionRows(spec.options), '']),
    ...examplesSection(name, style),
    ...sharedSections(style),
  ].join('\n');
}
