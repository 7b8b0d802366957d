/**
 * Asking a server that ships no manifest which tools it has: start it once,
 * pinned and sandboxed like an installed plugin but with no writable
 * directory beyond a throwaway data directory, and no network unless the
 * install grants it (then exactly the granted network: the whole of it, or
 * the destination list), run `initialize` and `tools/list` (every page), and
 * stop it. Lines on stdout that are not JSON-RPC (banners, logging) are
 * dropped, not fatal.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { err, errAsync, ok, ResultAsync, type Result } from 'neverthrow';
import { bindExecutable, DATA_DIR_STARTUP_CODE_OFF, verifyExecutableBinding, type ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import type { EnvDenylist } from '../env/EnvDenylist.js';
import { pluginSearchPath } from '../env/pluginPath.js';
import { hostError, type HostError } from '../errors/HostError.js';
import { resolveLaunchArgs } from './launchArgs.js';
import { engineMismatch, withEngineMismatch } from './npmEngines.js';
import { newerNodeSign, withNewerNodeSign } from './newerNode.js';
import { confinedInterpreterVersion } from '../binding/interpreterVersion.js';
import { withInstallRootWrite } from './installRootWrites.js';
import { setExecutableMode } from './setExecutableMode.js';
import type { ExitInfo, PluginProcess } from '../process/PluginProcess.js';
import { SecretRedactor } from '../secrets/knownSecrets.js';
import { redactedStderrTail } from '../secrets/secretRedactingProcess.js';
import { openPluginDirectories } from '../sandbox/pluginDirectories.js';
import type { SandboxSpawner } from '../sandbox/SandboxSpawner.js';
import { sandboxPathHints, sandboxViewOf, type SandboxView } from './sandboxPathHints.js';
import { DEFAULT_MCP_CLIENT_INFO } from '../shapes/mcp/McpSession.js';
import { clientCapabilities } from '../shapes/mcp/clientRequests.js';
import type { ClientRequestKind, DeclaredCapabilities } from '../manifest/model.js';
import { PluginProcessTransport } from '../shapes/mcp/PluginProcessTransport.js';
import type { ListedTool } from './npmManifest.js';
import settings from '../../etc/npm-install.json' with { type: 'json' };
import { readsLikeNetworkFailure } from '../sandbox/networkFailureWords.js';
import { writeDirComponents } from '../sandbox/writeDir.js';

/** What an introspection starts, and where. */
export interface IntrospectionRequest {
  /** The package root: a complete tree (its dependencies inside it), in a host-private directory. */
  readonly root: string;
  /** The executable, relative to `root`. */
  readonly executable: string;
  /** Arguments after the executable; `${data_dir}` stands for the throwaway data directory. */
  readonly args?: readonly string[];
  /** The program that runs the executable when the package names one (an MCP Bundle's `mcp_config.command`), pinned as bindExecutable pins it. */
  readonly interpreter?: string;
  /** Directories of `root` (relative) a Python interpreter puts on `sys.path`, pinned as bindExecutable pins them (a Python bundle's PYTHONPATH). */
  readonly pythonPath?: readonly string[];
  /** Env the package sets for its server (an MCP Bundle's `mcp_config.env`); HOME, TMPDIR and PATH are the host's. */
  readonly env?: Readonly<Record<string, string>>;
  /** The host's sandbox. */
  readonly spawner: SandboxSpawner;
  /** A host-private, empty directory for the throwaway data directory and verified copies. */
  readonly workDir: string;
  /** Host paths the server must not read (the profile directory). */
  readonly hiddenPaths: readonly string[];
  /** PATH that resolves a `#!/usr/bin/env` interpreter. */
  readonly searchPath?: string;
  /** Time for the whole introspection: the start, `initialize` and every `tools/list` page together. */
  readonly timeoutMs: number;
  /**
   * Time for each request within it (`initialize`, each `tools/list` page),
   * as every start of the installed plugin gets the host's `startupTimeoutMs`
   * for each: a server that lists many tools over many pages is not held to
   * one request's time for all of them. Default `timeoutMs`.
   */
  readonly requestTimeoutMs?: number;
  /** The client requests the install grants, announced at `initialize` as the installed plugin's sessions will: a server may list tools only for a client that can answer them. */
  readonly clientRequests?: readonly ClientRequestKind[];
  /** Host env names the install grants, passed with the host's values as the installed plugin will get them; no other host env reaches the start. */
  readonly grantedEnv?: GrantedIntrospectionEnv;
  /**
   * The network the install grants explicitly, which the start gets as the
   * installed plugin will: the whole network, or only the destination list
   * (through the host's egress proxy). Absent, or neither: no network.
   */
  readonly grantedNetwork?: IntrospectionNetwork;
  /**
   * The writable directory the install grants (`fs_write_dir`, relative to
   * the data directory), made and granted as every start of the plugin makes
   * it: a server given it as its argument may need it to exist at start
   * (obsidian-mcp@2.0.1 refuses a vault directory that does not). Absent:
   * the whole data directory, as the host default.
   */
  readonly fsWriteDir?: string;
  /**
   * The package's `engines.node` range (an npm package's package.json): a
   * start that fails on a Node the range leaves out says so first.
   */
  readonly nodeEngine?: string;
  /** The host's env denylist: a failure naming a denylisted variable is told the credential way, not `--grant-env`, which refuses it. */
  readonly envDenylist?: EnvDenylist;
  /** The id the plugin will have, for the commands a hint names; absent: `<plugin>`. */
  readonly pluginId?: string;
  /**
   * The package's other bins (those naming another file than `executable`),
   * named in the hint of a start that printed text on stdout and exited: a
   * package whose bin named like it is a CLI serves MCP from another one
   * (github-mcp-server@1.8.7: `github-mcp-server-mcp`).
   */
  readonly otherBins?: readonly string[];
}

/** The network part of the capabilities an install grants: `network: true`, or a destination list with `network: false`. */
export type IntrospectionNetwork = Pick<DeclaredCapabilities, 'network' | 'egress'>;

/** Whether `granted` gives any network at all (the whole of it, or at least one destination). */
export function hasNetwork(granted: IntrospectionNetwork | undefined): boolean {
  return granted !== undefined && (granted.network || (granted.egress ?? []).length > 0);
}

// What the start could reach, in the words of the hints.
function networkWords(granted: IntrospectionNetwork | undefined): string {
  if (granted?.network === true) return 'the whole network the install grants';
  const egress = granted?.egress ?? [];
  return egress.length === 0 ? 'no network' : `only the destinations the install grants (${egress.join(', ')}), through the host's egress proxy`;
}

/**
 * The host env an install grants (its `env_allow` names, the user's consent),
 * for a server that needs a token to start: built by the run-time env builder,
 * so a denylisted name is dropped here as it is at every start.
 */
export interface GrantedIntrospectionEnv {
  /** The granted names. */
  readonly names: readonly string[];
  /** The host environment the values are read from. */
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  /** The host's env denylist. */
  readonly denylist: EnvDenylist;
}

/** The plugin id the introspection's sandbox and data directory (under the install's own work directory) are named by; its user is no plugin's (SandboxSpawner.introspectionIdentity). */
const INTROSPECTION_ID = 'npm-introspection';

// A server that connects at start (a proxy such as mcp-remote, a database client) says so only in its own words on stderr.
const OFFLINE_START_HINT =
  'Its stderr reads like a network failure: the introspection start has no network unless the install grants it, so a server that connects while it starts (a remote proxy, a database or cache client) or listens on a port (an HTTP server beside its stdio one, as @googlemaps/code-assist-mcp listens on 0.0.0.0:3000, which only --grant-network allows) cannot list its tools there; install it with a grant of the network it needs (CLI --grant-network, or --grant-egress host:port), which the start then gets too, or with a manifest that lists its tools (the manifest install option, CLI --manifest <file>). ';

// With the network granted, a failure that reads like a network one is the service's (down, unlisted, refused by the proxy), not a missing grant.
const NETWORKED_START_HINT =
  'Its stderr reads like a network failure, with the network the install grants: check that the address it was given (its args, its env) is right and the service answers there; with a destination list, the start reaches only those destinations, through the host\'s egress proxy (which refuses loopback and private addresses unless listed as IP literals, and which a client that ignores HTTPS_PROXY does not use). ';

/** What the start had, for the error it fails with: the granted values to redact, and the network it was given. */
interface StartContext {
  readonly secrets: SecretRedactor;
  readonly network?: IntrospectionNetwork;
  readonly denylist?: EnvDenylist;
  readonly pluginId?: string;
  /** What the start's sandbox showed of the host, for a failure on a path it did not show. */
  readonly view?: SandboxView;
  /** The package's other bins, for a start that printed text and exited. */
  readonly otherBins?: readonly string[];
}

// Words that look like an environment variable's name: upper case and digits joined by underscores.
const ENV_NAME_WORDS = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g;

/**
 * The denylisted names the failure's words mention (a server saying
 * `GITHUB_TOKEN is not set`): the host's environment never passes them, and
 * a grant of one is refused (PLUGIN_ENV_PROHIBITED), so the hint must not
 * send the user to `--grant-env` for them.
 */
function deniedNamesIn(text: string, denylist: EnvDenylist | undefined): string[] {
  if (denylist === undefined) return [];
  return [...new Set(text.match(ENV_NAME_WORDS) ?? [])].filter((name) => denylist.isProhibited(name)).sort();
}

// What to do about a variable the server wants that the host never passes: a stored credential for a name a user may store, nothing for the others.
function deniedNamesHint(names: readonly string[], denylist: EnvDenylist, pluginId: string | undefined): string {
  const id = pluginId ?? '<plugin>';
  const storable = names.filter((name) => denylist.isUserCredentialName(name));
  const never = names.filter((name) => !denylist.isUserCredentialName(name));
  const parts = [
    `Its output names ${names.join(', ')}, on the host's env denylist: the host's environment never passes ${names.length === 1 ? 'it' : 'them'} to a plugin, and --grant-env ${names[0] ?? 'NAME'} (env_allow) is refused.`,
  ];
  if (storable.length > 0) {
    parts.push(
      `To give the plugin ${storable.length === 1 ? 'a value' : 'values'} of its own, install it with a manifest (CLI --manifest <file>, the manifest install option) that lists its tools and declares ${storable.join(', ')} under requirements.needs_user_creds with a credential descriptor, then store the value for this plugin alone: \`setup ${id} --set ${storable[0] ?? 'NAME'}=-\` (read from stdin), which starts it with the value.`,
    );
  }
  if (never.length > 0) {
    parts.push(`No plugin ever receives ${never.join(', ')}, from the host or from a stored credential: give the server its credential another way it reads (an argument, a file in its data directory, a variable of another name).`);
  }
  return `${parts.join(' ')} `;
}

// A request that ran out of time: which budgets the start has, so the user raises the right one.
const TIMEOUT_HINT =
  "It did not answer in time: each request of this start (initialize, each tools/list page) gets the host's startupTimeoutMs, and the whole start the host's introspectionTimeoutMs; raise the one that ran out for a server that is slow to start or lists many tools over many pages. ";

const NO_CONTEXT: StartContext = { secrets: SecretRedactor.none };

// A server may print its token while it fails (a debug line, an echo of its config): the granted values never reach an error.
function introspectionFailed(
  message: string,
  cause: unknown,
  process: PluginProcess | undefined,
  exit?: ExitInfo,
  context: StartContext = NO_CONTEXT,
  printed?: PrintedLines,
): HostError {
  const { secrets } = context;
  const said = `${message}: ${cause instanceof Error ? cause.message : String(cause)}`;
  const stderrTail = process === undefined ? undefined : redactedStderrTail(process, secrets);
  const networkFailure = readsLikeNetworkFailure(said) || (stderrTail !== undefined && readsLikeNetworkFailure(stderrTail));
  const networked = hasNetwork(context.network);
  // A Unix socket connect reads like a network failure too, but neither grant the network hints offer carries it there.
  const pathHints = sandboxPathHints(`${secrets.redact(said)}\n${stderrTail ?? ''}`, context.view, context.network?.network === true);
  const socketFailure = pathHints?.socket === true;
  const networkHint = !networkFailure || socketFailure ? '' : networked ? NETWORKED_START_HINT : OFFLINE_START_HINT;
  const timeoutHint = said.includes('Request timed out') ? TIMEOUT_HINT : '';
  const denied = deniedNamesIn(`${said}\n${stderrTail ?? ''}`, context.denylist);
  const deniedHint = denied.length === 0 || context.denylist === undefined ? '' : deniedNamesHint(denied, context.denylist, context.pluginId);
  // A denylisted name never reaches the start, granted or not: the generic advice names only the names a grant can pass.
  const tokenWay = "A server that needs a token to start gets it when the install grants its env name (--grant-env NAME, the grant's env_allow; never a name on the env denylist) and the host environment sets it";
  // Only an offline start is told that a server which connects at start cannot list its tools there: a granted one had what the plugin will have.
  // An offline start whose stderr reads like a network failure was told so just above (OFFLINE_START_HINT), grants and all: said twice, it
  // buried the rest (@sveltejs/mcp@0.1.26 fetches svelte.dev's index before it serves).
  const needs = networked
    ? 'pass the args it needs (the address it connects to), or the manifest install option.'
    : socketFailure || networkHint !== ''
      ? 'pass the args it needs, or the manifest install option.'
      : 'pass the args it needs, or the manifest install option: a server that needs a database or the network to start cannot list its tools there unless the install grants it the network (--grant-network, or --grant-egress host:port), which the start then gets too.';
  // Stdout text is the server's own words, as its stderr: a granted value it printed is redacted the same way.
  const printedLines = (printed?.lines ?? []).map((line) => secrets.redact(line));
  const printedHint = printedLines.length === 0 ? '' : printedTextHint(context.otherBins);
  return hostError('PLUGIN_HANDSHAKE_FAILED', secrets.redact(said), {
    details: {
      reason: 'introspection',
      ...(stderrTail === undefined ? {} : { stderr_tail: stderrTail }),
      ...(exit === undefined ? {} : { exit: exit.description }),
      ...(printedLines.length === 0 ? {} : { stdout_lines: printedLines }),
    },
    hint: `${deniedHint}${pathHints?.hint ?? ''}${printedHint}${networkHint}${timeoutHint}The server did not answer initialize and tools/list in its sandbox (${networkWords(context.network)}, no host environment but the env names the install grants, no writable directory but its data directory); details.stderr_tail and details.exit say why. ${tokenWay}; ${needs}`,
  });
}

const ERROR_LINE = new RegExp(settings.stderrErrorLine);
const LEADING_ERROR_LINE = new RegExp(settings.stderrLeadingErrorLine);
const BARE_ERROR_LINE = new RegExp(settings.stderrBareErrorLine);
const STACK_FRAME_LINE = new RegExp(settings.stderrStackFrameLine);
const USAGE_LINE = new RegExp(settings.stderrUsageLine, 'i');

/**
 * The error a stderr tail ends on, as one line: the last line that begins
 * with an error's name, which is the one the process died of (Node prints an
 * uncaught exception last, Python its final exception), else the first line
 * naming an error anywhere. @larksuiteoapi/lark-mcp@0.5.1 logs "[WARN]
 * [StorageManager] Failed to initialize encryption: Error: Cannot find module
 * '../build/Release/keytar.node'" and goes on, then dies of "Error: [Lark MCP]
 * appId, and appSecret are required": the first error named was the warning.
 * An error whose message begins with a line feed (`new Error(help.join('\n'))`,
 * as sharp 0.32 throws "Something went wrong installing the "sharp" module"
 * and the addon it misses, under agentdb@1.6.1) prints a bare `Error: ` line:
 * its message is the lines below it, up to the first stack frame, joined.
 */
function fatalErrorLine(tail: string): string | undefined {
  const lines = tail.split('\n');
  let at = -1;
  for (let i = lines.length - 1; i >= 0 && at === -1; i--) if (LEADING_ERROR_LINE.test(lines[i] ?? '')) at = i;
  if (at === -1) at = lines.findIndex((l) => ERROR_LINE.test(l) || BARE_ERROR_LINE.test(l));
  const first = lines[at];
  if (first === undefined) return undefined;
  if (!BARE_ERROR_LINE.test(first)) return first.trim();
  const end = lines.findIndex((l, i) => i > at && STACK_FRAME_LINE.test(l));
  const message = lines.slice(at + 1, end === -1 ? undefined : end).map((l) => l.trim()).filter((l) => l !== '');
  // A bare line with nothing under it says nothing: a later error line may.
  return message.length === 0 ? lines.find((l) => ERROR_LINE.test(l))?.trim() : `${first.trim()} ${message.join(' ')}`;
}

/**
 * The one line a stderr tail holds, if it holds no other: a server that exits
 * after a line of its own words names no error, yet that line is why it
 * stopped (@shortcut/mcp@0.25.0: "A Shortcut api token is required.",
 * @instantdb/mcp@1.0.67: "Provide an access token using --token or set
 * INSTANT_ACCESS_TOKEN environment variable", commander's "error: missing
 * required argument 'config-file-path'" of @kimuson/modular-mcp@0.0.5).
 */
function onlyLine(tail: string): string | undefined {
  const lines = tail.split('\n').filter((l) => l.trim() !== '');
  return lines.length === 1 ? lines[0]?.trim() : undefined;
}

/**
 * The line a server printed just before its usage, the reason it printed it:
 * mcp-mongo-server@3.0.1 without a URL writes "Please provide a MongoDB
 * connection URL via command-line argument or MCP_MONGODB_URI environment
 * variable", then "Usage: command <mongodb-url> …" and an "or:" line, and
 * exits 1. A tail of plain lines without a usage line stays unquoted: its
 * first line may be a banner.
 */
function lineBeforeUsage(tail: string): string | undefined {
  const lines = tail.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const usage = lines.findIndex((l) => USAGE_LINE.test(l));
  return usage > 0 ? lines[usage - 1] : undefined;
}

/**
 * What a server that closed its stdout said on stderr, for the message: the
 * error it died of ({@link fatalErrorLine}: `Error: Cannot find module
 * '../build/Release/keytar.node'`, Python's `ModuleNotFoundError: …`), which
 * a Node stack trace puts above a dozen frames, so the last lines a person
 * is shown (the CLI's) often miss it.
 */
/**
 * What a server that closed its stdout printed there instead of JSON-RPC,
 * for the message: how many lines, and the first. A package's bin that is a
 * CLI prints its usage or runs a command when started without arguments and
 * exits 0, often with nothing on stderr (github-mcp-server@1.8.7's
 * `github-mcp-server` lists its Git commands): the message said only "it
 * wrote nothing on stderr", and the lines that said why were dropped.
 */
function stdoutSays(printed: PrintedLines, secrets: SecretRedactor): string {
  const first = printed.lines[0];
  if (first === undefined) return '';
  const max = settings.quotedStderrLineMaxChars;
  const line = secrets.redact(first);
  const lines = printed.count === 1 ? 'a line' : `${printed.count} lines`;
  return `; it printed ${lines} on stdout that ${printed.count === 1 ? 'is' : 'are'} not JSON-RPC, the first: ${line.length > max ? `${line.slice(0, max)}…` : line} (details.stdout_lines has the first ${printed.lines.length})`;
}

/** The stdout lines of an introspection start that were not JSON-RPC: how many, and the first few (`etc/npm-install.json` printedStdoutLinesKept), non-blank. */
interface PrintedLines {
  count: number;
  readonly lines: string[];
}

// What to try for a start that printed text and exited: its server is started another way than the bin with no arguments.
function printedTextHint(otherBins: readonly string[] | undefined): string {
  const bins = otherBins ?? [];
  const shown = bins.slice(0, 12).map((n) => `'${n}'`).join(', ');
  const binWay =
    bins.length === 0
      ? ''
      : ` The package's other bins: ${shown}${bins.length > 12 ? `, … (${bins.length} in all)` : ''}; name the one that serves MCP with --bin <name> (the bin install option).`;
  return `It printed text on stdout (details.stdout_lines) and closed it without answering: the executable started is a command-line program that printed its usage or ran a command, not a stdio MCP server as started. Its README's MCP configuration (\`args\`) shows how its server starts: a subcommand or flag (--arg mcp, --arg --stdio) or another bin.${binWay} `;
}

function stderrSays(tail: string): string {
  if (tail.trim() === '') return '; it wrote nothing on stderr';
  const line = fatalErrorLine(tail) ?? onlyLine(tail) ?? lineBeforeUsage(tail);
  if (line === undefined) return '; see details.stderr_tail';
  const max = settings.quotedStderrLineMaxChars;
  return `; its stderr says: ${line.length > max ? `${line.slice(0, max)}…` : line} (details.stderr_tail has the rest)`;
}

/**
 * A server that answered and listed nothing: a manifest needs one tool, and
 * the manifest made from none was refused as the user's own
 * (`PLUGIN_MANIFEST_INVALID` at `/advertised_tools`, naming a file of the
 * staging directory and "Fix every violation"). @morphllm/morphmcp@0.8.213
 * lists no tool without its API key.
 */
function listedNoTools(process: PluginProcess, context: StartContext): HostError {
  const stderrTail = redactedStderrTail(process, context.secrets);
  return hostError('PLUGIN_HANDSHAKE_FAILED', 'introspecting the server failed: it answered initialize and tools/list but listed no tools, and a plugin needs at least one', {
    details: { reason: 'introspection', listed_tools: 0, ...(stderrTail === '' ? {} : { stderr_tail: stderrTail }) },
    hint: `A server that lists its tools only once it is configured (an API key or token in its environment, a directory or project argument, a login) lists none without it; its start here had ${networkWords(context.network)}, no host environment but the env names the install grants, and a throwaway data directory. Grant the env names it reads (--grant-env NAME), pass the args it needs (--arg), or install it with a manifest that lists its tools (the manifest install option, CLI --manifest <file>).`,
  });
}

// A server may answer every page with another cursor: the pages are counted, and every request gets its own time (the host's startupTimeoutMs), at most what is left of the whole.
async function listTools(
  process: PluginProcess,
  time: { readonly deadline: number; readonly perRequestMs: number },
  clientRequests: readonly ClientRequestKind[],
  context: StartContext,
): Promise<Result<ListedTool[], HostError>> {
  const client = new Client(DEFAULT_MCP_CLIENT_INFO, { capabilities: clientCapabilities({ kinds: clientRequests }) });
  // A line that claims to be JSON-RPC and breaks it may have been the answer the client waits for: the introspection
  // ends at once with what the line was, instead of waiting out its timeout for an answer that was dropped.
  let brokenLine: HostError | undefined;
  // Lines of plugin output are dropped and the start goes on, but a server that exits after them said why in them.
  const printed: PrintedLines = { count: 0, lines: [] };
  const transport: PluginProcessTransport = new PluginProcessTransport(process, {
    onViolation: (violation, output) => {
      if (output) {
        const line = violation.details['line_excerpt'];
        printed.count++;
        if (typeof line === 'string' && line.trim() !== '' && printed.lines.length < settings.printedStdoutLinesKept) printed.lines.push(line.trim());
        return;
      }
      if (brokenLine !== undefined) return;
      brokenLine = violation;
      void transport.close();
    },
  });
  const timeLeft = (): { timeout: number } => ({ timeout: Math.max(1, Math.min(time.perRequestMs, time.deadline - Date.now())) });
  try {
    await client.connect(transport, timeLeft());
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < settings.introspectionMaxToolPages; pages++) {
      const page = await client.listTools(cursor === undefined ? undefined : { cursor }, timeLeft());
      for (const tool of page.tools) {
        tools.push({
          name: tool.name,
          ...(tool.description === undefined ? {} : { description: tool.description }),
          ...(tool.annotations === undefined
            ? {}
            : {
                annotations: {
                  ...(tool.annotations.readOnlyHint === undefined ? {} : { readOnlyHint: tool.annotations.readOnlyHint }),
                  ...(tool.annotations.destructiveHint === undefined ? {} : { destructiveHint: tool.annotations.destructiveHint }),
                },
              }),
        });
      }
      cursor = page.nextCursor;
      if (cursor === undefined) return tools.length === 0 ? err(listedNoTools(process, context)) : ok(tools);
    }
    return err(introspectionFailed('introspecting the server failed', `its tools/list did not end after ${settings.introspectionMaxToolPages} pages`, process, undefined, context));
  } catch (cause) {
    if (brokenLine !== undefined) {
      const line = brokenLine.details['line_excerpt'];
      return err(introspectionFailed('introspecting the server failed', `${brokenLine.message}${typeof line === 'string' ? `: ${line}` : ''}`, process, undefined, context));
    }
    if (!transport.closedByPeer) return err(introspectionFailed('introspecting the server failed', cause, process, undefined, context));
    // The SDK only says "Connection closed"; how the server ended is what tells a person why (a server may exit 1 and print nothing).
    const exit = await process.stop();
    const stderr = stderrSays(redactedStderrTail(process, context.secrets));
    const stdout = stdoutSays(printed, context.secrets);
    return err(introspectionFailed('introspecting the server failed', `the server closed its stdout before answering (${exit.description})${stderr}${stdout}`, process, exit, context, printed));
  } finally {
    await client.close().catch(() => undefined);
    await process.stop();
  }
}

// Every value the host env holds for a granted name, denylisted or not, in every form SecretRedactor knows: none may show in an error.
function grantedSecrets(granted: GrantedIntrospectionEnv | undefined): SecretRedactor {
  return granted === undefined ? SecretRedactor.none : new SecretRedactor(granted.names.flatMap((name) => granted.hostEnv[name] ?? []));
}

// The package's own env and the host's fixed values, plus the granted host names read through the run-time builder (which drops a denylisted one).
function introspectionEnv(request: IntrospectionRequest, fixed: Readonly<Record<string, string>>): Result<Record<string, string>, HostError> {
  const own = { ...request.env, ...fixed };
  const granted = request.grantedEnv;
  if (granted === undefined) return ok(own);
  return granted.denylist.buildEnv({ parentEnv: granted.hostEnv, allowPassThrough: [], envAllow: granted.names, fixed: own, pluginId: INTROSPECTION_ID });
}

/**
 * Starts the server once in its sandbox and returns the tools it lists.
 * Fails with the binding's own error when the executable cannot be pinned,
 * the sandbox's when it cannot start, and PLUGIN_HANDSHAKE_FAILED
 * (`details.reason: introspection`, `details.stderr_tail`) when it starts
 * but does not answer.
 */
export function introspectServer(request: IntrospectionRequest): ResultAsync<ListedTool[], HostError> {
  const { root, executable, spawner, workDir } = request;
  const granted = hasNetwork(request.grantedNetwork) ? request.grantedNetwork : undefined;
  const deadline = Date.now() + request.timeoutMs;
  const dataRoot = join(workDir, 'data');
  const copyDir = join(workDir, 'exec');
  // A Node interpreter other than the host's is asked its version in the sandbox only (review R6 N2).
  const nodeVersion = confinedInterpreterVersion({ spawner, hiddenPaths: request.hiddenPaths });
  // The pinned executable, for a failed start's engines check.
  let bound: ExecutableBindingRecord | undefined;
  // What the start's sandbox shows, for a failure on a host path it does not.
  let view: SandboxView | undefined;
  // The install root as the sandbox mounts it (its real path), for a write the server tried there.
  let mountedRoot: string | undefined;
  const prepared = ResultAsync.fromPromise(
    Promise.all([mkdir(dataRoot, { recursive: true, mode: 0o700 }), mkdir(copyDir, { recursive: true, mode: 0o700 })]),
    (cause) => introspectionFailed('preparing the introspection directories failed', cause, undefined),
  );
  return prepared
    .andThen(() => setExecutableMode(root, executable))
    .andThen(() =>
      bindExecutable(
        {
          installRoot: root,
          executable,
          ...(request.args === undefined ? {} : { args: resolveLaunchArgs(request.args, join(dataRoot, INTROSPECTION_ID)) }),
          ...(request.interpreter === undefined ? {} : { interpreter: request.interpreter }),
          ...(request.pythonPath === undefined ? {} : { pythonPath: request.pythonPath }),
          ...(request.searchPath === undefined ? {} : { searchPath: request.searchPath }),
        },
        nodeVersion,
      ),
    )
    .map((binding) => {
      bound = binding;
      return binding;
    })
    .andThen((binding) =>
      spawner.introspectionIdentity().asyncAndThen((identity) =>
        writeDirComponents(request.fsWriteDir ?? '').andThen((writeComponents) =>
          openPluginDirectories({ dataRoot, pluginId: INTROSPECTION_ID, writeComponents, fsWriteDir: request.fsWriteDir ?? '', ...(identity === undefined ? {} : { owner: identity }) }),
        ).asyncAndThen(
          (directories) => {
            const env = introspectionEnv(request, {
              ...DATA_DIR_STARTUP_CODE_OFF,
              HOME: directories.data.path,
              TMPDIR: directories.write.path,
              PATH: pluginSearchPath(binding.interpreter?.path ?? dirname(process.execPath)),
            });
            if (env.isErr()) {
              directories.close();
              return errAsync(env.error);
            }
            return verifyExecutableBinding(binding, { copyDir })
              .orElse((error) => {
                directories.close();
                return err(error);
              })
              .andThen((verified) => {
                const policy = {
                  network: granted?.network === true,
                  ...(granted === undefined || granted.network ? {} : { egress: granted.egress ?? [] }),
                  writeDir: directories.write.path,
                  hiddenPaths: request.hiddenPaths,
                  readOnlyPaths: [directories.data.path],
                  pluginId: INTROSPECTION_ID,
                };
                // Read before the spawn, which releases what it is given: the paths its executable mounts besides.
                mountedRoot = verified.installRoot;
                const shown = { ...policy, installRoot: verified.installRoot, readOnlyPaths: [...verified.readOnlyPaths, ...policy.readOnlyPaths] };
                return spawner
                  .spawn({ ...policy, executable: verified, env: env.value, directories, ...(identity === undefined ? {} : { identity }) })
                  .map((started) => {
                    view = sandboxViewOf(spawner.describe(shown));
                    return started;
                  });
              });
          },
        ),
      ),
    )
    .andThen((started) =>
      new ResultAsync(
        listTools(started, { deadline, perRequestMs: request.requestTimeoutMs ?? request.timeoutMs }, request.clientRequests ?? [], {
          secrets: grantedSecrets(request.grantedEnv),
          ...(granted === undefined ? {} : { network: granted }),
          ...(request.envDenylist === undefined ? {} : { denylist: request.envDenylist }),
          ...(request.pluginId === undefined ? {} : { pluginId: request.pluginId }),
          ...(view === undefined ? {} : { view }),
          ...(request.otherBins === undefined ? {} : { otherBins: request.otherBins }),
        }),
      ),
    )
    // Only a server that started and failed: a refused binding or spawn is the host's own refusal, whatever the Node.
    // A write refused inside its own package directory is the cause it says itself, and no Node fixes it: no engines guess then.
    .orElse((error) => {
      if (error.code !== 'PLUGIN_HANDSHAKE_FAILED' || error.details['reason'] !== 'introspection') return errAsync(error);
      const ownTree = withInstallRootWrite(error, mountedRoot === undefined ? [root] : [root, mountedRoot]);
      if (ownTree !== undefined) return errAsync(ownTree);
      // A range that leaves this Node out says so; a package with no range, the errors a Node prints for newer code (undici's markAsUncloneable).
      if (request.nodeEngine === undefined) {
        return new ResultAsync(newerNodeSign(error, bound?.interpreter, nodeVersion).then((found) => err(withNewerNodeSign(error, found, undefined))));
      }
      return new ResultAsync(engineMismatch(request.nodeEngine, bound?.interpreter, nodeVersion).then((mismatch) => err(withEngineMismatch(error, mismatch))));
    });
}
