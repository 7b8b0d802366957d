/**
 * Interpreter pins. A `#!` script's interpreter is resolved once, at install
 * (PATH lookup for `env`), to an absolute real path and pinned by SHA-256 and
 * by its file identity. Before a spawn the identity is compared; only when it
 * changed is the interpreter re-hashed (see docs/install-safety.md for why).
 */
import { stat as statPath, realpath } from 'node:fs/promises';
import { basename, delimiter, isAbsolute, join } from 'node:path';
import type { BigIntStats } from 'node:fs';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { openRegularFile, readHead, type OpenedFile } from './safeOpen.js';
import { sha256OfHandle, digestsEqual } from './sha256.js';
import { formatOf, parseShebang, SHEBANG_MAX_BYTES, type Shebang } from './shebang.js';
import interpreterArguments from '../../etc/interpreter-arguments.json' with { type: 'json' };
import { probeNodeMainLoading, type NodeMainLoading } from './nodeMain.js';
import type { InterpreterVersionProbe } from './interpreterVersion.js';
import { isNodeName, isPythonName, isShellName } from './shells.js';
import { ioError } from '../errors/ioError.js';
import { untrusted } from './untrusted.js';
import { isWithin, SYSTEM_PATHS } from '../sandbox/SandboxLayout.js';

/** The identity of a file at pin time; all decimal strings (64-bit values). */
export interface FileIdentity {
  /** Device id. */
  readonly dev: string;
  /** Inode number. */
  readonly ino: string;
  /** Size in bytes. */
  readonly size: string;
  /** Modification time, nanoseconds since the epoch. */
  readonly mtime_ns: string;
  /** Status change time, nanoseconds since the epoch; no unprivileged user can set it back. */
  readonly ctime_ns: string;
}

/** How an interpreter is fed the verified script. */
export type InterpreterKind = 'node' | 'python' | 'generic';

/** A `#!` script's interpreter, resolved and pinned at install. */
export interface InterpreterPin {
  /** Absolute real path of the interpreter binary. */
  readonly path: string;
  /** SHA-256 (hex) of the interpreter binary. */
  readonly sha256: string;
  /** Arguments from the `#!` line, passed before the script. */
  readonly args: readonly string[];
  /**
   * `node` runs the script by its path under `node_main`'s check; `python`
   * runs the verified source under the script's path; `generic` reads the
   * script through a descriptor path.
   */
  readonly kind: InterpreterKind;
  /** File identity at pin time; a change forces a full re-hash before the next spawn. */
  readonly identity: FileIdentity;
  /**
   * For `node`: how it is made to evaluate only the verified main module,
   * chosen at install from its version. Absent (pins recorded before this
   * field existed) means `loader_hook`.
   */
  readonly node_main?: NodeMainLoading;
  /**
   * For `python`: directories of the install root (relative, `/`-separated)
   * put on `sys.path` after the script's directory and before the standard
   * library, as `PYTHONPATH` would put them (an MCP Bundle's vendored
   * `server/lib`). `PYTHONPATH` itself never reaches a plugin: it is on the
   * env denylist.
   */
  readonly python_path?: readonly string[];
}

/** The identity fields of a `BigIntStats`. */
export function identityOf(stat: BigIntStats): FileIdentity {
  return {
    dev: stat.dev.toString(),
    ino: stat.ino.toString(),
    size: stat.size.toString(),
    mtime_ns: stat.mtimeNs.toString(),
    ctime_ns: stat.ctimeNs.toString(),
  };
}

function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtime_ns === b.mtime_ns && a.ctime_ns === b.ctime_ns;
}

const wholeArgument = (patterns: readonly string[]): RegExp[] => patterns.map((pattern) => new RegExp(`^(?:${pattern})$`));
const ALLOWED_ARGUMENTS: Readonly<Record<InterpreterKind, readonly RegExp[]>> = {
  node: wholeArgument(interpreterArguments.node),
  python: wholeArgument(interpreterArguments.python),
  generic: wholeArgument(interpreterArguments.generic),
};

/** The first `#!` argument that could change what runs (see etc/interpreter-arguments.json), if any. */
function unsafeInterpreterArgument(kind: InterpreterKind, args: readonly string[]): string | undefined {
  return args.find((arg) => !ALLOWED_ARGUMENTS[kind].some((allowed) => allowed.test(arg)));
}

function interpreterKindOf(real: string, named: string): InterpreterKind {
  if (isNodeName(real) || isNodeName(named)) return 'node';
  if (isPythonName(real) || isPythonName(named)) return 'python';
  return 'generic';
}

/**
 * The first executable file named `program` in the absolute directories of
 * `searchPath`, as `#!/usr/bin/env <program>` finds it at install; undefined
 * for a name with a `/` (or one that is `.`/`..`), which `join` would resolve
 * to a file outside the search path.
 */
export async function findOnPath(program: string, searchPath: string): Promise<string | undefined> {
  if (program === '' || program === '.' || program === '..' || program.includes('/')) return undefined;
  for (const dir of searchPath.split(delimiter)) {
    // A relative PATH entry would make the answer depend on the working directory.
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, program);
    try {
      const s = await statPath(candidate);
      if (s.isFile() && (s.mode & 0o111) !== 0) return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

async function refuseScriptInterpreter(file: OpenedFile): Promise<HostError> {
  const head = await readHead(file.handle, SHEBANG_MAX_BYTES);
  const inner = parseShebang(head, file.path);
  if (inner.isOk() && isShellName(inner.value.program)) {
    return untrusted('shell_interpreter', `The interpreter ${file.path} is a shell wrapper run by ${inner.value.program}.`, {
      path: file.path,
      interpreter: inner.value.program,
    });
  }
  return untrusted('interpreter_not_native', `The interpreter ${file.path} is itself a script; point #! at a native interpreter.`, { path: file.path });
}

/**
 * A script found on the search path for `#!/usr/bin/env <program>` is most
 * often a version manager's shim (pyenv, asdf, nodenv), which the generic
 * hint would not lead to: the fix is the search path, not the plugin.
 */
function shimRefusal(refused: HostError, program: string, found: string): HostError {
  return hostError(refused.code, refused.message, {
    details: { ...refused.details, found_on_path: found },
    hint: `${found} is a script, as version-manager shims (pyenv, asdf, nodenv) are: give the host an interpreterSearchPath (for the CLI, PATH) whose first ${program} is the real interpreter, such as $(pyenv prefix)/bin or /usr/bin.`,
  });
}

const realOrUndefined = (path: string): Promise<string | undefined> => realpath(path).catch(() => undefined);

// The names the host itself looks interpreters up by (`#!/usr/bin/env`, the Python installer's `python3`).
const SEARCHED_INTERPRETER_NAMES = ['node', 'python3', 'python'];

/**
 * Whether an interpreter an absolute `#!` line names is one the host would
 * run anyway: a file of the system directories, the host's own Node, or the
 * file its interpreter search path gives for that name. Anything else is a
 * file the package chose, which the plugin would run as its interpreter:
 * `#!/proc/self/cwd/pkg/bin/node` named a native program shipped beside the
 * package, in the directory the user installed it from, and the install's
 * version probe ran it as the host's user (review R6 F2; the probe now runs
 * in the sandbox, see interpreterVersion.ts). A `#!/usr/bin/env`
 * interpreter comes from the search path.
 */
async function hostWouldRun(real: string, named: string, searchPath: string): Promise<boolean> {
  if (SYSTEM_PATHS.some((dir) => isWithin(real, dir))) return true;
  if (real === (await realOrUndefined(process.execPath))) return true;
  // The installer's own launchers name the real file `python3` resolved to (`…/bin/python3.12`), which the search
  // path may list only under the generic name.
  for (const name of new Set([basename(named), basename(real), ...SEARCHED_INTERPRETER_NAMES])) {
    const found = await findOnPath(name, searchPath);
    if (found !== undefined && (await realOrUndefined(found)) === real) return true;
  }
  return false;
}

// The package is not at fault when the runtime its entry point names is missing here: bunqueue@2.9.5's bunqueue-mcp is
// `#!/usr/bin/env bun`, and the code's own hint told the user to ship a real entry-point file inside the package.
const interpreterMissingHint = (program: string): string =>
  `The package's entry point is run by ${program} (its #! line), which this machine does not have where the host looks: install it, or put the folder that holds it first on the interpreter search path (the interpreterSearchPath option, else PATH; details.search_path), then install again.`;

/**
 * Resolves, checks and hashes the interpreter named by a `#!` line. A Node
 * interpreter's version, which picks `node_main`, is read through
 * `nodeVersion` (in the sandbox) unless it is the host's own; without it,
 * any other Node gets `loader_hook` and is not run.
 */
export async function pinInterpreter(shebang: Shebang, scriptPath: string, searchPath: string, nodeVersion?: InterpreterVersionProbe): Promise<Result<InterpreterPin, HostError>> {
  if (isShellName(shebang.program)) {
    return err(untrusted('shell_interpreter', `${scriptPath} is a shell script (#! ${shebang.program}); shell wrappers are refused.`, { path: scriptPath, interpreter: shebang.program }));
  }
  const named = shebang.viaEnv ? await findOnPath(shebang.program, searchPath) : shebang.program;
  if (named === undefined) {
    return err(
      untrusted(
        'interpreter_not_found',
        `The interpreter "${shebang.program}" of ${scriptPath} is not on the interpreter search path.`,
        { path: scriptPath, interpreter: shebang.program, search_path: searchPath },
        interpreterMissingHint(shebang.program),
      ),
    );
  }
  let real: string;
  try {
    real = await realpath(named);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      const hint = shebang.viaEnv
        ? interpreterMissingHint(shebang.program)
        : `The package's entry point names ${named} (its #! line), which this machine does not have: install it there, or use a version of the package whose entry point this machine can run.`;
      return err(untrusted('interpreter_not_found', `The interpreter ${named} of ${scriptPath} does not exist.`, { path: scriptPath, interpreter: named }, hint));
    }
    return err(ioError('Resolving', named, e));
  }
  if (isShellName(real)) {
    return err(untrusted('shell_interpreter', `The interpreter ${named} of ${scriptPath} is the shell ${real}.`, { path: scriptPath, interpreter: real }));
  }
  const opened = await openRegularFile(real);
  if (opened.isErr()) return err(opened.error);
  const file = opened.value;
  try {
    const format = formatOf(await readHead(file.handle, 4));
    if (format === 'script') {
      const refused = await refuseScriptInterpreter(file);
      return err(shebang.viaEnv ? shimRefusal(refused, shebang.program, named) : refused);
    }
    if (format !== 'native') return err(untrusted('unsupported_format', `The interpreter ${real} is not a native program.`, { path: real }));
    if (!shebang.viaEnv && !(await hostWouldRun(real, named, searchPath))) {
      return err(
        hostError('PLUGIN_EXECUTABLE_UNTRUSTED', `The interpreter ${named} of ${scriptPath} (${real}) is neither in a system directory nor the one the interpreter search path gives for its name.`, {
          details: { reason: 'interpreter_location', path: scriptPath, interpreter: named, resolved: real },
          hint: `Name the interpreter as #!/usr/bin/env ${basename(named)} and put its directory on the host's interpreter search path (the interpreterSearchPath option; for the CLI, PATH): an interpreter the package names by path could be any program the package placed, and the host runs it at install.`,
        }),
      );
    }
    const kind = interpreterKindOf(real, shebang.program);
    const unsafe = unsafeInterpreterArgument(kind, shebang.args);
    if (unsafe !== undefined) {
      return err(
        untrusted('interpreter_argument', `The #! line of ${scriptPath} passes ${JSON.stringify(unsafe)} to ${real}, which is not an option that leaves the pinned script in charge of what runs.`, {
          path: scriptPath,
          interpreter: real,
          argument: unsafe,
        }),
      );
    }
    const sha256 = await sha256OfHandle(file.handle);
    return ok({
      path: real,
      sha256,
      args: [...shebang.args],
      kind,
      identity: identityOf(file.stat),
      ...(kind === 'node' ? { node_main: await probeNodeMainLoading(real, nodeVersion) } : {}),
    });
  } catch (e) {
    return err(ioError('Hashing', real, e));
  } finally {
    await file.handle.close().catch(() => undefined);
  }
}

/**
 * Opens the pinned interpreter for a spawn. The returned handle is what the
 * child executes (through its descriptor), so a rename after this check
 * cannot change which binary runs.
 */
export async function openPinnedInterpreter(pin: InterpreterPin): Promise<Result<OpenedFile, HostError>> {
  const opened = await openRegularFile(pin.path);
  if (opened.isErr()) return err(opened.error);
  const file = opened.value;
  if (sameIdentity(identityOf(file.stat), pin.identity)) return ok(file);
  try {
    const actual = await sha256OfHandle(file.handle);
    if (digestsEqual(pin.sha256, actual)) return ok(file);
    await file.handle.close();
    return err(
      untrusted('interpreter_digest_mismatch', `The interpreter ${pin.path} changed since install (SHA-256 ${actual}, pinned ${pin.sha256}).`, {
        path: pin.path,
        expected_sha256: pin.sha256,
        actual_sha256: actual,
      }),
    );
  } catch (e) {
    await file.handle.close().catch(() => undefined);
    return err(ioError('Hashing', pin.path, e));
  }
}
