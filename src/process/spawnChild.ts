import { spawn, type StdioOptions } from 'node:child_process';
import type { Readable } from 'node:stream';
import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { ChildPluginProcess, type ChildPluginProcessOptions } from './ChildPluginProcess.js';
import { diagnoseExecutable } from './diagnoseExecutable.js';
import type { PluginProcess } from './PluginProcess.js';
import { descendantsOf, sendSignal } from './processTree.js';
import type { PluginCommand } from './VerifiedExecutable.js';

/** One launch: the OS command that runs the plugin, possibly through a launcher. */
export interface Launch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Extra descriptors after the executable's inherited ones, written once at spawn and closed. */
  readonly extraInput?: Buffer;
  /**
   * A check that must pass before any code of the plugin runs. It starts
   * once the launcher is running, and `extraInput` is held back until it
   * passed: for a launcher that reads `extraInput` to its end only after its
   * own setup, right before it runs the plugin, and refuses to run it on an
   * empty input (bubblewrap's seccomp program), the two overlap and the
   * plugin cannot run unchecked, even if the host dies meanwhile. When the
   * check fails, the launcher's whole tree is killed before the input
   * closes, and the spawn fails with the check's error. Without
   * `extraInput`, the check runs before the spawn.
   */
  readonly gate?: (launched: LaunchedLauncher) => ResultAsync<void, HostError>;
  /**
   * Gives the launcher one more pipe, the descriptor after `extraInput`'s, to
   * report on (bubblewrap's `--info-fd`); the gate reads it.
   */
  readonly launcherReport?: boolean;
  /**
   * Spawns the launcher in the host's session: it makes its own process
   * group and drops the controlling terminal itself (the Landlock launcher).
   * A session of its own would also give the plugin its own scheduler
   * autogroup on kernels built with one, and every round trip between the
   * host's autogroup and the plugin's then costs about 7 µs more
   * (docs/performance.md, "One warm call").
   */
  readonly inHostSession?: boolean;
}

/** What a gate sees of the launcher it holds back. */
export interface LaunchedLauncher {
  /** The launcher's process id, once it runs. */
  readonly pid?: number;
  /** The launcher's report pipe, when the launch asked for one. */
  readonly report?: Readable;
}

type Input = NodeJS.WritableStream & { on(e: 'error', f: () => void): void; destroy(): void };

/**
 * Hands a gated launcher its input when the check passed; otherwise kills
 * the launcher's tree, waits until it is gone and only then closes the
 * input, unwritten.
 */
async function released(plugin: PluginProcess, input: Input, bytes: Buffer, check: Result<void, HostError>): Promise<Result<PluginProcess, HostError>> {
  if (check.isOk()) {
    input.end(bytes);
    return ok(plugin);
  }
  // The group first: a process bubblewrap clones while the list below is read is in it, but not in the list.
  sendSignal(-plugin.pid, 'SIGKILL');
  for (const pid of [plugin.pid, ...descendantsOf(plugin.pid)]) sendSignal(pid, 'SIGKILL');
  await plugin.exited;
  input.destroy();
  return err(check.error);
}

/**
 * Spawns a launch and wraps it as a {@link PluginProcess}: the shared tail
 * of the plain spawner and of every sandbox backend. The executable's
 * descriptors become the child's fds 3, 4, … and are released once the
 * spawn settled, whatever its outcome.
 */
export function spawnChild(executable: PluginCommand, launch: Launch, options: ChildPluginProcessOptions): ResultAsync<PluginProcess, HostError> {
  if (launch.gate && !launch.extraInput) {
    const { gate, ...ungated } = launch;
    return gate({})
      .orElse((error) => {
        executable.release();
        return errAsync(error);
      })
      .andThen(() => spawnChild(executable, ungated, options));
  }
  const preflight = diagnoseExecutable(executable);
  if (preflight) {
    executable.release();
    return errAsync(preflight);
  }
  const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', ...executable.inheritFds];
  if (launch.extraInput) stdio.push('pipe');
  if (launch.launcherReport) stdio.push('pipe');
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(launch.command, [...launch.args], {
      stdio,
      env: { ...launch.env },
      cwd: launch.cwd,
      // Its own session and process group: terminal signals aimed at the host do not reach it, and stop() can signal the group.
      detached: launch.inHostSession !== true,
      windowsHide: true,
    });
  } catch (e) {
    executable.release();
    return errAsync(diagnoseExecutable(executable, e as NodeJS.ErrnoException)!);
  }
  const started = new Promise<HostError | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', (e: NodeJS.ErrnoException) => resolve(diagnoseExecutable(executable, e)));
  });
  return ResultAsync.fromSafePromise(started).andThen((failure) => {
    executable.release();
    if (failure) return errAsync(failure);
    const created = ChildPluginProcess.create(child, options);
    if (created.isErr()) return errAsync(created.error);
    const plugin = created.value;
    const { extraInput, gate } = launch;
    if (!extraInput) return okAsync<PluginProcess, HostError>(plugin);
    const input = child.stdio[3 + executable.inheritFds.length] as Input;
    input.on('error', () => undefined);
    if (!gate) {
      input.end(extraInput);
      return okAsync<PluginProcess, HostError>(plugin);
    }
    const report = launch.launcherReport ? (child.stdio[4 + executable.inheritFds.length] as Readable) : undefined;
    const launched = { pid: plugin.pid, ...(report === undefined ? {} : { report }) };
    return new ResultAsync((async () => released(plugin, input, extraInput, await gate(launched)))());
  });
}
