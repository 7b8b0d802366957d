import { existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import { unverifiedCommand } from '../../process/spawnPluginProcess.js';
import { runVerifiedEntry, type VerifiedModuleEntry } from '../../binding/ModuleEntryBinding.js';
import type { UnverifiedCommand, VerifiedExecutable } from '../../process/VerifiedExecutable.js';
import { nodeRuntimePaths } from '../../sandbox/backends.js';
import { runnerArguments } from './runnerArgs.js';
import { runnerReadPaths } from './runnerReadPaths.js';
import type { RunnerReportSeal } from './runnerReportSeal.js';

/** The runner's file name beside the built library (`dist/esm-runner.js`). */
export const ESM_RUNNER_FILE = 'esm-runner.js';

/** Options of {@link esmRunnerCommand}. */
export interface EsmRunnerCommandOptions {
  /** STRICT_CAPABILITIES inside the runner. Default false. */
  readonly strictCapabilities?: boolean;
  /** STRICT_TOOLS inside the runner. Default false. */
  readonly strictTools?: boolean;
  /** SCHEMA_PATH inside the runner (must be readable in the sandbox). */
  readonly schemaPath?: string;
  /** Time allowed for import plus `createPlugin`, in ms. Default 30 s. */
  readonly createTimeoutMs?: number;
  /** Hot reload inside the runner; the host sees `tools/list_changed`. Default false. */
  readonly watch?: boolean;
  /** DEBUG_REGISTRY: loader steps on the runner's stderr. Default false. */
  readonly debugRegistry?: boolean;
  /**
   * The command that starts the runner script, before its arguments.
   * Default `[process.execPath, <dir of this library>/esm-runner.js]`.
   */
  readonly runnerArgv?: readonly string[];
  /**
   * The entry as verified just before this start (see `verifyModuleEntry`):
   * the runner inherits its descriptor and evaluates those bytes instead of
   * reading the entry from the plugin root. The command takes ownership: its
   * `release()` (or a failure here) releases the entry.
   */
  readonly verifiedEntry?: VerifiedModuleEntry;
  /**
   * This start's report seal (see `issueRunnerReportSeal`): the runner
   * inherits its descriptor and seals the reports it makes before any plugin
   * code runs, which the host then believes whatever their code. Without
   * one, only reports of failures the plugin's own code may cause are
   * believed. The command takes ownership, as of `verifiedEntry`.
   */
  readonly reportSeal?: RunnerReportSeal;
}

function thisModuleFile(): string {
  // The CommonJS build has __filename; the ES module build has import.meta.url.
  return typeof __filename === 'string' ? __filename : fileURLToPath(import.meta.url);
}

/**
 * How to start the ESM runner for one plugin: an MCP-over-stdio command
 * (`node esm-runner.js … -- <root>`) for the host's sandboxed spawner, with
 * the paths the sandbox must let it read (the plugin root, the runner and
 * its dependencies, Node). The host then runs it as any `mcp-plugin`, e.g.
 * through an {@link EsmSession}. With a verified entry the command is a
 * {@link VerifiedExecutable} (the binding module's `runVerifiedEntry`);
 * without one the runner reads the entry from disk, unverified. Fails with
 * HOST_INVALID_OPTIONS when the runner script is not there (the package was
 * not built).
 */
export function esmRunnerCommand(root: string, options: EsmRunnerCommandOptions & { readonly verifiedEntry: VerifiedModuleEntry }): Result<VerifiedExecutable, HostError>;
export function esmRunnerCommand(root: string, options?: EsmRunnerCommandOptions): Result<VerifiedExecutable | UnverifiedCommand, HostError>;
export function esmRunnerCommand(root: string, options: EsmRunnerCommandOptions = {}): Result<VerifiedExecutable | UnverifiedCommand, HostError> {
  const command = runnerCommand(root, options);
  if (command.isErr()) {
    options.verifiedEntry?.release();
    options.reportSeal?.release();
  }
  return command;
}

function runnerCommand(root: string, options: EsmRunnerCommandOptions): Result<VerifiedExecutable | UnverifiedCommand, HostError> {
  let realRoot: string;
  try {
    realRoot = realpathSync(resolve(root));
  } catch (cause) {
    return err(hostError('PLUGIN_ENTRY_INVALID', `plugin root ${root} does not exist`, { details: { root }, cause }));
  }
  const runner = options.runnerArgv ?? [process.execPath, join(dirname(thisModuleFile()), ESM_RUNNER_FILE)];
  const script = runner.at(-1);
  if (script === undefined || runner.length < 2 || !existsSync(script)) {
    return err(hostError('HOST_INVALID_OPTIONS', `the ESM runner script ${script ?? '(none)'} does not exist; build the package or pass runnerArgv`, { details: { runnerArgv: [...runner] } }));
  }
  const entry = options.verifiedEntry;
  const seal = options.reportSeal;
  if (entry !== undefined && entry.installRoot !== realRoot) {
    return err(hostError('HOST_INVALID_OPTIONS', `the verified entry belongs to ${entry.installRoot}, not to ${realRoot}`, { details: { root: realRoot, install_root: entry.installRoot } }));
  }
  if (entry !== undefined && options.watch === true) {
    return err(hostError('HOST_INVALID_OPTIONS', 'watch reloads the entry from disk and cannot be combined with a verified entry', { details: { option: 'watch' } }));
  }
  const argv = [
    ...runner,
    ...runnerArguments({
      root: realRoot,
      strictCapabilities: options.strictCapabilities ?? false,
      strictTools: options.strictTools ?? false,
      ...(options.schemaPath === undefined ? {} : { schemaPath: options.schemaPath }),
      ...(options.createTimeoutMs === undefined ? {} : { createTimeoutMs: options.createTimeoutMs }),
      watch: options.watch ?? false,
      debugRegistry: options.debugRegistry ?? false,
      // The child sees its first inherited descriptor as fd 3: the entry's, then the seal's (runVerifiedEntry keeps that order).
      ...(entry === undefined ? {} : { verifiedEntry: { path: entry.entryPath, sha256: entry.sha256, fd: 3 } }),
      ...(seal === undefined ? {} : { reportFd: entry === undefined ? 3 : 4 }),
    }),
  ];
  // The runner's own Node (runner[0]) may live outside the host's installation.
  const program = runner[0]!;
  const runtime = isAbsolute(program) && existsSync(program) ? nodeRuntimePaths(program) : nodeRuntimePaths();
  const readable = [realRoot, ...runtime, ...runnerReadPaths(resolve(script))];
  if (options.schemaPath !== undefined) readable.push(resolve(options.schemaPath));
  const plain = unverifiedCommand(argv, realRoot, [...new Set(readable)]);
  const command = seal === undefined ? plain : { ...plain, inheritFds: [seal.fd], release: () => seal.release() };
  return ok(entry === undefined ? command : runVerifiedEntry(command, entry));
}
