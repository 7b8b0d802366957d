/**
 * The version of an interpreter a plugin is run with. A pinned Node's picks
 * how its main module is checked (nodeMain.ts) and explains a failed start
 * (the engines range, npmEngines.ts); an MCP Bundle's node or python
 * interpreter is checked against its `compatibility.runtimes` range
 * (bundle/bundleManifest.ts). The host's own Node is never run: its version
 * is this process's. Any other is a file a package chose (its `#!` line, a
 * bundle's `mcp_config.command` looked up on the search path: a system,
 * search-path or version-manager interpreter, or a program that merely has
 * its name), so it is asked `--version` only inside the plugins' sandbox:
 * offline, nothing writable but an empty scratch directory, an empty env,
 * as the user an install's introspection runs as, its time and output
 * bounded and its answer read in the form its kind prints
 * (etc/interpreter-probe.json). Without a sandbox it is not run at all, and
 * the callers fall back to what works on every Node or refuse what cannot
 * be checked (review R6 N2).
 */
import { realpathSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PluginProcess } from '../process/PluginProcess.js';
import { unverifiedCommand } from '../process/spawnPluginProcess.js';
import { openPluginDirectories } from '../sandbox/pluginDirectories.js';
import type { SandboxSpawner } from '../sandbox/SandboxSpawner.js';
import { isNodeName, isPythonName } from './shells.js';
import settings from '../../etc/interpreter-probe.json' with { type: 'json' };

/**
 * Reads the version (`20.20.2`, `3.11.2`) of the interpreter at a real path,
 * a Node or a Python by its name, or undefined when it cannot be told.
 */
export type InterpreterVersionProbe = (interpreter: string) => Promise<string | undefined>;

/** The interpreters a probe can ask, by the key of their answer's form in etc/interpreter-probe.json. */
export type ProbedRuntime = keyof typeof settings.answers;

/** The sandbox a {@link confinedInterpreterVersion} probe runs in. */
export interface InterpreterProbeSandbox {
  /** The host's spawner; in the dev-only unsandboxed mode nothing is run. */
  readonly spawner: SandboxSpawner;
  /** Host paths masked inside (the profile directory), as for the plugins. */
  readonly hiddenPaths?: readonly string[];
  /** Where the scratch directory is made. Default `os.tmpdir()`. */
  readonly scratchParent?: string;
  /** Stop the probe after this long. Default etc/interpreter-probe.json `timeoutMs`. */
  readonly timeoutMs?: number;
  /** Read no answer longer than this (bytes of stdout). Default etc/interpreter-probe.json `maxOutputBytes`. */
  readonly maxOutputBytes?: number;
}

// An answer counts only as the whole of stdout in its kind's form (`v20.20.2`, `Python 3.11.2`).
const ANSWERS: Readonly<Record<ProbedRuntime, RegExp>> = { node: new RegExp(settings.answers.node), python: new RegExp(settings.answers.python) };

/** The runtime a file is, by its name (a real path's: what a link points at is what runs); undefined for any other program. */
function runtimeOf(path: string): ProbedRuntime | undefined {
  if (isNodeName(path)) return 'node';
  return isPythonName(path) ? 'python' : undefined;
}

/** Whether `path` is the real path of the Node running this host. */
function isHostNode(path: string): boolean {
  try {
    return realpathSync(process.execPath) === path;
  } catch {
    return false;
  }
}

/**
 * The version of the Node interpreter at the real path `path`: the host's
 * own without running anything; another one named like Node through `probe`
 * (a file not named like Node is never asked: a package's `node` link to
 * another program, review R7 N4); undefined otherwise.
 */
export async function nodeVersionOf(path: string, probe: InterpreterVersionProbe | undefined): Promise<string | undefined> {
  if (isHostNode(path)) return process.versions.node;
  if (probe === undefined || !isNodeName(path)) return undefined;
  return probe(path);
}

/**
 * The version of the `runtime` interpreter at `path` (a bundle's command as
 * found on the search path): the host's own Node without running anything;
 * otherwise its real path, when named like a `runtime` interpreter, through
 * `probe` (a link named `python3` to another program is never asked);
 * undefined otherwise.
 */
export async function interpreterVersionOf(path: string, runtime: ProbedRuntime, probe: InterpreterVersionProbe | undefined): Promise<string | undefined> {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return undefined;
  }
  if (runtime === 'node' && isHostNode(real)) return process.versions.node;
  if (probe === undefined || runtimeOf(real) !== runtime) return undefined;
  return probe(real);
}

// Answers already read, by the interpreter's path and file identity: a file that changed is asked again.
const answered = new Map<string, string>();

function identityKey(path: string): string | undefined {
  try {
    const s = statSync(path, { bigint: true });
    return [path, s.dev, s.ino, s.size, s.mtimeNs, s.ctimeNs].join('\0');
  } catch {
    return undefined;
  }
}

/**
 * A probe that runs `<interpreter> --version` in the plugins' sandbox of
 * `sandbox.spawner`, reusing its launch path (either Linux backend, Seatbelt):
 * no network, only an empty scratch directory writable, an empty env, the
 * interpreter file the only host path shown besides the system directories,
 * stopped after `timeoutMs`, its answer read only when it is one short line
 * of stdout in the form its kind prints (Node `v20.20.2`; Python 3
 * `Python 3.11.2`, which Python 2 printed on stderr). A file named like
 * neither Node nor Python, and every file under a spawner of the unsandboxed
 * dev mode, is not run (undefined).
 */
export function confinedInterpreterVersion(sandbox: InterpreterProbeSandbox): InterpreterVersionProbe {
  return async (interpreter) => {
    const runtime = runtimeOf(interpreter);
    if (sandbox.spawner.backendName === 'none' || runtime === undefined) return undefined;
    const key = identityKey(interpreter);
    const known = key === undefined ? undefined : answered.get(key);
    if (known !== undefined) return known;
    const version = await runConfined(sandbox, interpreter, ANSWERS[runtime]);
    if (version !== undefined && key !== undefined) answered.set(key, version);
    return version;
  };
}

async function runConfined(sandbox: InterpreterProbeSandbox, interpreter: string, answer: RegExp): Promise<string | undefined> {
  const { spawner } = sandbox;
  const identity = spawner.introspectionIdentity();
  if (identity.isErr()) return undefined;
  let scratch: string;
  try {
    scratch = await mkdtemp(join(sandbox.scratchParent ?? tmpdir(), settings.scratchPrefix));
  } catch {
    return undefined;
  }
  try {
    // An empty, world-traversable working directory, mounted read-only; the only writable one is the probe's own.
    const root = join(scratch, 'root');
    await mkdir(root, { mode: 0o755 });
    const owner = identity.value;
    const directories = openPluginDirectories({ dataRoot: join(scratch, 'data'), pluginId: settings.scratchId, writeComponents: [], fsWriteDir: '', ...(owner === undefined ? {} : { owner }) });
    if (directories.isErr()) return undefined;
    const started = await spawner.spawn({
      network: false,
      writeDir: directories.value.write.path,
      hiddenPaths: sandbox.hiddenPaths ?? [],
      executable: unverifiedCommand([interpreter, '--version'], root, [interpreter]),
      env: {},
      directories: directories.value,
      ...(owner === undefined ? {} : { identity: owner }),
    });
    if (started.isErr()) return undefined;
    return await answerOf(started.value, answer, sandbox.timeoutMs ?? settings.timeoutMs, sandbox.maxOutputBytes ?? settings.maxOutputBytes);
  } catch {
    return undefined;
  } finally {
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The version in what the process printed, once it exited with status 0 within `timeoutMs` and at most `maxBytes` of stdout in the form `answer`. */
async function answerOf(child: PluginProcess, answer: RegExp, timeoutMs: number, maxBytes: number): Promise<string | undefined> {
  child.stdin.end();
  const chunks: Buffer[] = [];
  let length = 0;
  let refused = false;
  const refuse = (): void => {
    refused = true;
    child.stdout.destroy();
    void child.stop({ stdinGraceMs: 0, termGraceMs: 0 });
  };
  // The exit can come before the last of stdout was read: the answer is whole once the pipe ended too.
  const drained = new Promise<void>((resolve) => {
    child.stdout.once('end', resolve);
    child.stdout.once('close', resolve);
  });
  child.stdout.on('data', (chunk: Buffer) => {
    length += chunk.length;
    if (length > maxBytes) refuse();
    else chunks.push(chunk);
  });
  const timer = setTimeout(refuse, timeoutMs);
  try {
    const [exit] = await Promise.all([child.exited, drained]);
    if (refused || exit.code !== 0) return undefined;
    return answer.exec(Buffer.concat(chunks).toString('utf8'))?.[1];
  } finally {
    clearTimeout(timer);
  }
}
