import { accessSync, constants as fsConstants } from 'node:fs';
import { errAsync, type ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import type { LifecycleOptions } from './ChildPluginProcess.js';
import type { PluginProcess } from './PluginProcess.js';
import { spawnChild } from './spawnChild.js';
import type { UnverifiedCommand, VerifiedExecutable } from './VerifiedExecutable.js';

/** A request to run a plugin without a sandbox. */
export interface PlainSpawnRequest extends LifecycleOptions {
  /** What to run: verified by the binding module, or a dev command nothing checked. */
  readonly executable: VerifiedExecutable | UnverifiedCommand;
  /** The complete environment of the plugin; nothing of the host's is added. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory. Default the install root. */
  readonly cwd?: string;
  /**
   * Where `setpriv` (util-linux) is, used to make the kernel SIGKILL the
   * plugin if the host dies. Default: `/usr/bin/setpriv` or `/bin/setpriv`
   * when present on Linux; `false` disables it.
   */
  readonly setprivPath?: string | false;
}

const SETPRIV_CANDIDATES = ['/usr/bin/setpriv', '/bin/setpriv'];

function findSetpriv(): string | undefined {
  if (process.platform !== 'linux') return undefined;
  return SETPRIV_CANDIDATES.find((path) => {
    try {
      accessSync(path, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Runs a plugin as a plain child process with the shared lifecycle (stderr
 * ring, stop sequence, process-group kill) but no confinement. Used by the
 * dev-only unsandboxed mode and by tests of protocol modules.
 *
 * On Linux the plugin is started through `setpriv --pdeathsig KILL`, so it
 * dies with the host even when the host is SIGKILLed; its own children are
 * killed with its process group by `stop()` and when it exits, but a
 * grandchild can outlive a SIGKILLed host here. Only the sandbox (its own PID
 * namespace) guarantees that.
 */
export function spawnPluginProcess(request: PlainSpawnRequest): ResultAsync<PluginProcess, HostError> {
  const { executable } = request;
  if (executable.mountedMain?.required === true) {
    executable.release();
    return errAsync(mountRequired('a plain spawn'));
  }
  const setpriv = request.setprivPath === false ? undefined : (request.setprivPath ?? findSetpriv());
  const [program = '', ...rest] = executable.argv;
  const launch =
    setpriv === undefined
      ? { command: program, args: rest }
      : { command: setpriv, args: ['--pdeathsig', 'KILL', '--', ...executable.argv] };
  return spawnChild(
    executable,
    { ...launch, env: request.env, cwd: request.cwd ?? executable.installRoot },
    { ...request, tree: 'process-group', launcherFailure: /^setpriv: / },
  );
}

/** A command verified for a launcher that mounts its main module, given to one that cannot: it would run the installed file unchecked. */
export function mountRequired(launcher: string): HostError {
  return hostError('PLUGIN_SPAWN_FAILED', `The command was verified for a launcher that mounts its main module, and ${launcher} cannot: it would run the installed file unchecked.`, {
    details: { launcher },
    hint: 'Verify with launcherMountsMain only for a SandboxSpawner on bubblewrap.',
  });
}

/**
 * A command the host runs as it is (dev profiles, the sandbox probe, tests
 * of protocol modules): nothing is verified and no descriptor is inherited.
 * The spawners accept it beside a {@link VerifiedExecutable}, whose type
 * only the binding module produces.
 */
export function unverifiedCommand(argv: readonly string[], installRoot: string, readOnlyPaths: readonly string[] = []): UnverifiedCommand {
  return {
    argv: [...argv],
    inheritFds: [],
    readOnlyPaths: [...readOnlyPaths],
    installRoot,
    verified: false,
    release: () => undefined,
  };
}
