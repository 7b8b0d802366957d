/**
 * Executable binding: what a plugin runs, pinned at install and re-verified
 * before every spawn.
 *
 * - {@link ExecutableBinding.bind} (install) checks the manifest's executable path,
 *   refuses links, escapes, shells and unknown formats, resolves a `#!`
 *   interpreter once, and returns the record that `plugins.lock` stores.
 * - {@link ExecutableBinding.verify} (every spawn, never cached) re-hashes the
 *   installed file and returns a {@link VerifiedExecutable} whose argv can only
 *   run the bytes that were hashed: a private unnamed copy run through an
 *   inherited descriptor, or, for Node with an integrity policy, the script
 *   by its path with Node itself refusing any other bytes (see nodeMain.ts),
 *   or under bubblewrap the same path with the private copy mounted on it.
 */
import { existsSync } from 'node:fs';
import { realpath, type FileHandle } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { systemRandom, type Random } from '../ports/ports.js';
import type { PluginCommand, VerifiedExecutable } from '../process/VerifiedExecutable.js';
import { openPinnedInterpreter, pinInterpreter, type InterpreterPin } from './interpreter.js';
import type { InterpreterVersionProbe } from './interpreterVersion.js';
import { nodeVerifiedMainImport, nodeVerifiedMainImportInThread } from './nodeLoader.js';
import { integrityPolicy, integrityPolicyOptions, mountedMainOptions, NODE_MAIN_GUARD, nodeMainLoadingForScript } from './nodeMain.js';
import type { PackageTreePin } from './packageTree.js';
import { pythonVerifiedMainProgram } from './pythonLoader.js';
import { isPinnedPythonPath, withPythonPath } from './pythonPath.js';
import { normalizeExecutablePath } from './relativePath.js';
import { openInsideRoot, readHead, type OpenedFile } from './safeOpen.js';
import { digestsEqual, isSha256Hex, sha256OfHandle } from './sha256.js';
import { formatOf, parseShebang, SHEBANG_MAX_BYTES } from './shebang.js';
import { isPythonName, isShellName } from './shells.js';
import { ioError } from '../errors/ioError.js';
import { untrusted } from './untrusted.js';
import { markVerified } from './verified.js';
import { copyWhileHashing, preparePrivateDir, writeUnnamedFile, type VerifiedCopy } from './verifiedCopy.js';

/** The executable binding recorded in `plugins.lock` for one plugin. */
export interface ExecutableBindingRecord {
  /** The executable, relative to `install_root`, `/`-separated and normalized. */
  readonly executable_path: string;
  /** SHA-256 (lower-case hex) of the executable's bytes at install. */
  readonly executable_sha256: string;
  /**
   * The command line the host runs, with absolute paths: the executable and
   * its arguments, or for a `#!` script the pinned interpreter, its `#!`
   * arguments, the script, and the arguments.
   */
  readonly argv_normalized: readonly string[];
  /** The install root, as an absolute real path. */
  readonly install_root: string;
  /** For a `#!` script: its interpreter, resolved and pinned at install. */
  readonly interpreter?: InterpreterPin;
  /**
   * `esm-entry` when the pinned file is the entry module of an `esm-module`
   * plugin, run by the ESM runner (see `bindModuleEntry`); absent for an
   * executable.
   */
  readonly kind?: 'esm-entry';
  /**
   * Every file of the install root, pinned by a file list whose digest this
   * records (see `pinPackageTree`). Absent in bindings recorded before whole
   * trees were pinned: those pin only the file above (reinstall to pin all).
   */
  readonly tree?: PackageTreePin;
}

/** Input of {@link ExecutableBinding.bind}. */
export interface BindExecutableOptions {
  /** The plugin's install root (absolute; links in its own path are resolved once, here). */
  readonly installRoot: string;
  /** The manifest's executable, relative to the install root. */
  readonly executable: string;
  /** Arguments passed after the executable (default none). */
  readonly args?: readonly string[];
  /**
   * The program that runs the executable, named by the package rather than
   * by a `#!` line (an MCP Bundle's `mcp_config.command`, e.g. `node`):
   * resolved on `searchPath` and pinned like a `#!/usr/bin/env` interpreter.
   * The executable then needs no `#!` line; one it has is not used.
   */
  readonly interpreter?: string;
  /**
   * Directories of the install root (relative) a Python interpreter puts on
   * `sys.path` where `PYTHONPATH` would, recorded in its pin (an MCP
   * Bundle's `mcp_config.env.PYTHONPATH`). Refused for any other executable.
   */
  readonly pythonPath?: readonly string[];
  /** The PATH used to resolve `#!/usr/bin/env <program>` (default `process.env.PATH`). Used at install only. */
  readonly searchPath?: string;
}

/** Input of {@link ExecutableBinding.verify}. */
export interface VerifyExecutableOptions {
  /**
   * A host-private directory (created with mode 0700) on a file system that
   * allows exec, e.g. `<profile>/exec`. Copies live there only for an instant
   * before their names are removed.
   */
  readonly copyDir: string;
  /** Names the temporary copies (default: Node's CSPRNG). */
  readonly random?: Random;
  /**
   * Where the Node main-module guard (`nodeMainGuard.cjs`) is; by default
   * next to this library's own modules. A bundler that moves this library
   * elsewhere can copy the file and name it here. Without the file, Node
   * plugins pinned for the integrity policy run through the loader hook.
   */
  readonly nodeMainGuardPath?: string;
  /**
   * Whether the command will be run by a launcher that mounts a Node main
   * module's verified copy at the module's own path (a `SandboxSpawner` on
   * bubblewrap). A Node 20/21 main module then needs no
   * integrity policy, so none is written, and the command runs only under
   * such a launcher: every other launcher refuses it (`PLUGIN_SPAWN_FAILED`).
   * Default `false`: the policy is written, and any launcher can run the command.
   */
  readonly launcherMountsMain?: boolean;
}


/** The descriptor number a child sees for the n-th inherited descriptor. */
const childFd = (index: number): number => 3 + index;

/** How a child names one of its own descriptors as a path. */
function descriptorPath(fd: number): string {
  return process.platform === 'linux' ? `/proc/self/fd/${fd}` : `/dev/fd/${fd}`;
}

const scriptPathOf = (root: string, relative: string): string => `${root}/${relative}`;

function expectedArgvPrefix(record: Pick<ExecutableBindingRecord, 'install_root' | 'executable_path' | 'interpreter'>): string[] {
  const script = scriptPathOf(record.install_root, record.executable_path);
  return record.interpreter ? [record.interpreter.path, ...record.interpreter.args, script] : [script];
}

/** The real path of an absolute install root; a relative or missing root is PLUGIN_EXECUTABLE_UNTRUSTED. */
export async function realInstallRoot(installRoot: string): Promise<Result<string, HostError>> {
  if (!isAbsolute(installRoot)) {
    return err(untrusted('invalid_path', `The install root "${installRoot}" is not absolute.`, { install_root: installRoot }));
  }
  try {
    return ok(await realpath(installRoot));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      return err(untrusted('missing', `The install root ${installRoot} does not exist.`, { install_root: installRoot }));
    }
    return err(ioError('Resolving', installRoot, e));
  }
}

async function bindOpened(
  file: OpenedFile,
  root: string,
  relative: string,
  options: BindExecutableOptions,
  nodeVersion: InterpreterVersionProbe | undefined,
): Promise<Result<ExecutableBindingRecord, HostError>> {
  const head = await readHead(file.handle, SHEBANG_MAX_BYTES);
  const format = formatOf(head);
  if (format === 'unknown' && options.interpreter === undefined) {
    return err(untrusted('unsupported_format', `${file.path} is neither a native program nor a #! script.`, { path: file.path }));
  }
  let interpreter: InterpreterPin | undefined;
  if (format === 'script' || options.interpreter !== undefined) {
    const shebang = options.interpreter === undefined ? parseShebang(head, file.path) : ok({ program: options.interpreter, viaEnv: true, args: [] });
    if (shebang.isErr()) return err(shebang.error);
    const pinned = await pinInterpreter(shebang.value, file.path, options.searchPath ?? process.env.PATH ?? '', nodeVersion);
    if (pinned.isErr()) return err(pinned.error);
    interpreter = pinned.value;
  }
  if (options.pythonPath !== undefined) {
    const searched = withPythonPath(interpreter, options.pythonPath, file.path);
    if (searched.isErr()) return err(searched.error);
    interpreter = searched.value;
  }
  const checksUtf8 = interpreter?.node_main === 'integrity_policy';
  const chunks: Buffer[] = [];
  const sha256 = await sha256OfHandle(file.handle, checksUtf8 ? async (chunk) => void chunks.push(Buffer.from(chunk)) : undefined);
  if (checksUtf8 && interpreter !== undefined) {
    interpreter = { ...interpreter, node_main: nodeMainLoadingForScript('integrity_policy', Buffer.concat(chunks)) };
  }
  const base = { install_root: root, executable_path: relative, ...(interpreter ? { interpreter } : {}) };
  return ok({
    executable_path: relative,
    executable_sha256: sha256,
    argv_normalized: [...expectedArgvPrefix(base), ...(options.args ?? [])],
    install_root: root,
    ...(interpreter ? { interpreter } : {}),
  });
}

/**
 * Pins a plugin's executable at install. Refuses, with
 * `PLUGIN_EXECUTABLE_UNTRUSTED` and `details.reason`: absolute paths, `..`,
 * links anywhere below the root, files outside it, non-regular files, files
 * others may write, shells (by name or as `#!` interpreter), a Python
 * interpreter as the executable itself, files that are
 * neither native programs nor `#!` scripts, and interpreters that cannot be
 * resolved to a native program. A Node interpreter other than the host's
 * own is asked its version through `nodeVersion` only (the install passes a
 * probe that runs it in the sandbox, see interpreterVersion.ts); without
 * one it is pinned with `node_main: 'loader_hook'` and never run here.
 */
export function bindExecutable(options: BindExecutableOptions, nodeVersion?: InterpreterVersionProbe): ResultAsync<ExecutableBindingRecord, HostError> {
  return new ResultAsync(
    (async (): Promise<Result<ExecutableBindingRecord, HostError>> => {
      const relative = normalizeExecutablePath(options.executable);
      if (relative.isErr()) return err(relative.error);
      if (isShellName(relative.value)) {
        return err(untrusted('shell_interpreter', `The executable "${relative.value}" is a shell; shell wrappers are refused.`, { path: relative.value }));
      }
      // Seed 000 lists python with the shells: started with no script, as a plugin is, it runs whatever it reads.
      if (isPythonName(relative.value)) {
        return err(untrusted('shell_interpreter', `The executable "${relative.value}" is a Python interpreter; ship the plugin's own program (a script or console script) as the executable.`, { path: relative.value }));
      }
      const root = await realInstallRoot(options.installRoot);
      if (root.isErr()) return err(root.error);
      const opened = await openInsideRoot(root.value, relative.value);
      if (opened.isErr()) return err(opened.error);
      try {
        return await bindOpened(opened.value, root.value, relative.value, options, nodeVersion);
      } catch (e) {
        return err(ioError('Reading', opened.value.path, e));
      } finally {
        await opened.value.handle.close().catch(() => undefined);
      }
    })(),
  );
}

/** Checks an executable binding record's own consistency; returns its relative path. */

/**
 * Environment every plugin start gets (and the introspection start at install), so programs the plugin runs itself
 * load no code from its HOME, the data directory: a Python skips the user site-packages there, as the host's own `-s`
 * makes the plugin's main do; and a `bash -c` skips `~/.bashrc`, which bash otherwise reads when its stdin is a socket
 * (a plugin's is) and SHLVL says it is not nested ("run by a remote shell daemon").
 */
export const DATA_DIR_STARTUP_CODE_OFF: Readonly<Record<string, string>> = { PYTHONNOUSERSITE: '1', SHLVL: '1' };
export function checkRecordShape(record: ExecutableBindingRecord): Result<string, HostError> {
  const relative = normalizeExecutablePath(record.executable_path);
  if (relative.isErr()) return relative;
  const consistent =
    record.kind === undefined &&
    relative.value === record.executable_path &&
    isSha256Hex(record.executable_sha256) &&
    isAbsolute(record.install_root) &&
    (record.interpreter === undefined || (isAbsolute(record.interpreter.path) && isSha256Hex(record.interpreter.sha256))) &&
    (record.interpreter?.python_path === undefined || isPinnedPythonPath(record.interpreter.python_path)) &&
    expectedArgvPrefix(record).every((part, i) => record.argv_normalized[i] === part);
  if (!consistent) {
    return err(untrusted('binding_inconsistent', 'The recorded executable binding is malformed or its argv does not match its paths.', {
      executable_path: record.executable_path,
    }));
  }
  return ok(relative.value);
}

/** The inherited descriptors of a spawn, in order, the argv that names them, and extra files the child must read. */
interface Launch {
  readonly argv: string[];
  readonly handles: readonly FileHandle[];
  readonly readOnlyPaths?: readonly string[];
  readonly mountedMain?: PluginCommand['mountedMain'];
}

/** The arguments a binding starts its executable with, after the executable (and its interpreter): what an install's `args` became. */
export const launchArgumentsOf = (record: ExecutableBindingRecord): string[] => record.argv_normalized.slice(expectedArgvPrefix(record).length);

/** A native program: the verified copy itself is executed. */
function launchNative(record: ExecutableBindingRecord, copy: VerifiedCopy): Launch {
  return { argv: [descriptorPath(childFd(0)), ...launchArgumentsOf(record)], handles: [copy.handle] };
}

// The verified copy is always the child's first inherited descriptor, so the bootstraps never change.
const NODE_WORKER_BOOTSTRAP = nodeVerifiedMainImport(childFd(0));
const NODE_IN_THREAD_BOOTSTRAP = nodeVerifiedMainImportInThread(childFd(0));
const PYTHON_BOOTSTRAP = pythonVerifiedMainProgram(childFd(0));

/** A `#!` script: the pinned interpreter (through its descriptor) runs the verified copy's bytes. */
function launchScript(record: ExecutableBindingRecord, copy: VerifiedCopy, pin: InterpreterPin, interpreter: OpenedFile): Launch {
  const handles = [copy.handle, interpreter.handle];
  const program = descriptorPath(childFd(1));
  const script = scriptPathOf(record.install_root, record.executable_path);
  const userArgs = launchArgumentsOf(record);
  if (pin.kind === 'node') {
    const bootstrap = pin.node_main === 'in_thread_hook' ? NODE_IN_THREAD_BOOTSTRAP : NODE_WORKER_BOOTSTRAP;
    return { argv: [program, ...pin.args, '--import', bootstrap, script, ...userArgs], handles };
  }
  if (pin.kind === 'python') {
    const bootstrap = pin.python_path === undefined ? PYTHON_BOOTSTRAP : pythonVerifiedMainProgram(childFd(0), pin.python_path.map((dir) => scriptPathOf(record.install_root, dir)));
    // -s: the user site-packages (~/.local/lib/pythonX.Y/site-packages) lies in the plugin's HOME, its data directory,
    // which it writes and which outlives upgrades: a .pth file or usercustomize planted there would run at every start,
    // before the verified main and outside every pin (as PYTHONUSERBASE, denylisted, would point it elsewhere).
    return { argv: [program, ...pin.args, '-s', '-c', bootstrap, script, ...userArgs], handles };
  }
  return { argv: [program, ...pin.args, descriptorPath(childFd(0)), ...userArgs], handles };
}

/**
 * A Node main module two ways: by its path under the integrity policy, or,
 * for a launcher that mounts descriptors, by the same path with the private
 * copy mounted on it and no policy (`mountedMain`).
 */
function launchUnderPolicy(record: ExecutableBindingRecord, pin: InterpreterPin, policy: FileHandle, copy: VerifiedCopy, interpreter: OpenedFile, guard: string): Launch {
  const script = scriptPathOf(record.install_root, record.executable_path);
  const program = descriptorPath(childFd(1));
  return {
    argv: [program, ...pin.args, ...integrityPolicyOptions(descriptorPath(childFd(0)), guard), script, ...launchArgumentsOf(record)],
    handles: [policy, interpreter.handle, copy.handle],
    readOnlyPaths: [guard],
    mountedMain: { index: 2, path: script, argv: [program, ...pin.args, ...mountedMainOptions(guard), script, ...launchArgumentsOf(record)] },
  };
}

/**
 * A Node main module only by its path with the private copy mounted on it
 * (`mountedMain`, required): no policy is written, and a launcher that cannot
 * mount refuses the command instead of running the installed file unchecked.
 */
function launchMountedOnly(record: ExecutableBindingRecord, pin: InterpreterPin, copy: VerifiedCopy, interpreter: OpenedFile, guard: string): Launch {
  const script = scriptPathOf(record.install_root, record.executable_path);
  const argv = [descriptorPath(childFd(1)), ...pin.args, ...mountedMainOptions(guard), script, ...launchArgumentsOf(record)];
  return { argv, handles: [copy.handle, interpreter.handle], readOnlyPaths: [guard], mountedMain: { index: 0, path: script, argv, required: true } };
}

function verifiedExecutable(record: ExecutableBindingRecord, sha256: string, launch: Launch, interpreter: OpenedFile | undefined): VerifiedExecutable {
  let released = false;
  const command: PluginCommand = {
    argv: launch.argv,
    inheritFds: launch.handles.map((h) => h.fd),
    // Both launches of a `#!` script hand the interpreter over second (childFd(1)), and argv[0] names it.
    ...(interpreter ? { programFile: { index: 1, path: interpreter.path } } : {}),
    readOnlyPaths: [record.install_root, ...(interpreter ? [interpreter.path] : []), ...(launch.readOnlyPaths ?? [])],
    ...(launch.mountedMain === undefined ? {} : { mountedMain: launch.mountedMain }),
    installRoot: record.install_root,
    release(): void {
      if (released) return;
      released = true;
      for (const handle of launch.handles) void handle.close().catch(() => undefined);
    },
  };
  return markVerified(command, sha256);
}

/** Opens the pinned file, after checking that the install root still resolves to itself. */
async function openPinnedFile(record: ExecutableBindingRecord, relative: string): Promise<Result<OpenedFile, HostError>> {
  const root = await realInstallRoot(record.install_root);
  if (root.isErr()) return err(root.error);
  if (root.value !== record.install_root) {
    return err(untrusted('link', `The install root ${record.install_root} now resolves to ${root.value}.`, { install_root: record.install_root, resolved: root.value }));
  }
  return openInsideRoot(record.install_root, relative);
}

function digestMismatch(path: string, record: ExecutableBindingRecord, actual: string): HostError {
  return untrusted('digest_mismatch', `${path} changed since install (SHA-256 ${actual}, pinned ${record.executable_sha256}).`, {
    path,
    expected_sha256: record.executable_sha256,
    actual_sha256: actual,
  });
}

/**
 * The step both bindings share before a spawn: the install root must still
 * be itself, and the pinned file is copied into the host-private directory
 * while it is hashed; the copy is returned only if the digest is the pinned one.
 */
export async function copyPinnedFile(
  record: ExecutableBindingRecord,
  relative: string,
  options: VerifyExecutableOptions,
): Promise<Result<VerifiedCopy, HostError>> {
  // Independent steps run side by side: on a busy event loop every step waited for costs a turn of it.
  const [dir, opened] = await Promise.all([preparePrivateDir(options.copyDir), openPinnedFile(record, relative)]);
  if (dir.isErr()) {
    if (opened.isOk()) void opened.value.handle.close().catch(() => undefined);
    return err(dir.error);
  }
  if (opened.isErr()) return err(opened.error);
  const copied = await copyWhileHashing(opened.value.handle, options.copyDir, options.random ?? systemRandom, (sha) =>
    digestsEqual(record.executable_sha256, sha),
  ).finally(() => void opened.value.handle.close().catch(() => undefined));
  if (copied.isErr()) return err(copied.error);
  if ('refused' in copied.value) return err(digestMismatch(opened.value.path, record, copied.value.refused));
  return ok(copied.value);
}

/** Hashes the pinned file where it is, without copying it; returns the digest when it is the pinned one. */
export async function hashPinnedFile(record: ExecutableBindingRecord, relative: string): Promise<Result<string, HostError>> {
  const opened = await openPinnedFile(record, relative);
  if (opened.isErr()) return err(opened.error);
  const { handle, path } = opened.value;
  try {
    const actual = await sha256OfHandle(handle);
    return digestsEqual(record.executable_sha256, actual) ? ok(actual) : err(digestMismatch(path, record, actual));
  } catch (e) {
    return err(ioError('Hashing', path, e));
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * A Node script whose interpreter checks the main module against a policy:
 * the host hashes the installed file (to refuse and quarantine early), and
 * Node hashes the buffer it compiles, so bytes swapped in between never run.
 * The host copies what it hashes, for a launcher that mounts the copy at the
 * script's path instead (bubblewrap), where the policy is not needed.
 */
async function verifyUnderPolicy(
  record: ExecutableBindingRecord,
  relative: string,
  pin: InterpreterPin,
  options: VerifyExecutableOptions,
  guard: string,
): Promise<Result<VerifiedExecutable, HostError>> {
  const copied = await copyPinnedFile(record, relative, options);
  if (copied.isErr()) return err(copied.error);
  const copy = copied.value;
  const policyText = integrityPolicy(scriptPathOf(record.install_root, record.executable_path), record.executable_sha256);
  const policy = await writeUnnamedFile(options.copyDir, options.random ?? systemRandom, policyText);
  if (policy.isErr()) {
    await copy.handle.close().catch(() => undefined);
    return err(policy.error);
  }
  const interpreter = await openPinnedInterpreter(pin);
  if (interpreter.isErr()) {
    await Promise.all([policy.value.close(), copy.handle.close()]).catch(() => undefined);
    return err(interpreter.error);
  }
  return ok(verifiedExecutable(record, copy.sha256, launchUnderPolicy(record, pin, policy.value, copy, interpreter.value, guard), interpreter.value));
}

async function verify(record: ExecutableBindingRecord, options: VerifyExecutableOptions): Promise<Result<VerifiedExecutable, HostError>> {
  const relative = checkRecordShape(record);
  if (relative.isErr()) return err(relative.error);
  const pin = record.interpreter;
  const guard = options.nodeMainGuardPath ?? NODE_MAIN_GUARD;
  const underPolicy = pin?.kind === 'node' && pin.node_main === 'integrity_policy';
  // Both launches by path preload the guard; without it (a bundler that did not copy it) the loader hook runs the script.
  const guarded = underPolicy && existsSync(guard);
  if (guarded && options.launcherMountsMain !== true) return verifyUnderPolicy(record, relative.value, pin, options, guard);
  // The interpreter is opened while the main file is copied; a refused copy is reported first.
  const [copied, interpreter] = await Promise.all([copyPinnedFile(record, relative.value, options), pin === undefined ? undefined : openPinnedInterpreter(pin)]);
  if (copied.isErr()) {
    if (interpreter?.isOk() === true) void interpreter.value.handle.close().catch(() => undefined);
    return err(copied.error);
  }
  const copy = copied.value;
  if (pin === undefined || interpreter === undefined) return ok(verifiedExecutable(record, copy.sha256, launchNative(record, copy), undefined));
  if (interpreter.isErr()) {
    await copy.handle.close().catch(() => undefined);
    return err(interpreter.error);
  }
  const launch = guarded && options.launcherMountsMain === true ? launchMountedOnly(record, pin, copy, interpreter.value, guard) : launchScript(record, copy, pin, interpreter.value);
  return ok(verifiedExecutable(record, copy.sha256, launch, interpreter.value));
}

/** Marks a verification failure so that the host knows to quarantine the plugin. */
export function forQuarantine(error: HostError): HostError {
  if (error.code !== 'PLUGIN_EXECUTABLE_UNTRUSTED') return error;
  return hostError(error.code, error.message, { details: { ...error.details, quarantine: true } });
}

/**
 * Verifies a recorded binding just before a spawn and returns what to run.
 * Never cached: every call re-hashes the installed executable. A mismatch is
 * `PLUGIN_EXECUTABLE_UNTRUSTED` with `details.reason` (`digest_mismatch`,
 * `link`, `missing`, `interpreter_digest_mismatch`, …) and
 * `details.quarantine: true`, which tells the host to quarantine the plugin.
 * The caller must call `release()` once the child has been spawned.
 */
export function verifyExecutableBinding(
  record: ExecutableBindingRecord,
  options: VerifyExecutableOptions,
): ResultAsync<VerifiedExecutable, HostError> {
  return new ResultAsync(verify(record, options).then((r) => r.mapErr(forQuarantine)));
}
