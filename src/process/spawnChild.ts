import { spawn, type StdioOptions } from 'node:child_process';
import { errAsync, okAsync, ResultAsync, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { ChildPluginProcess, type ChildPluginProcessOptions } from './ChildPluginProcess.js';
import { diagnoseExecutable } from './diagnoseExecutable.js';
import type { PluginProcess } from './PluginProcess.js';
import { descendantsOf, sendSignal } from './processTree.js';
import type { VerifiedExecutable } from './VerifiedExecutable.js';

/** One launch: the OS command that runs the plugin, possibly through a launcher. */
export interface Launch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Extra descriptors after the executable's inherited ones, written once at spawn and closed. */
  readonly extraInput?: Buffer;
  /**
   * A check that must pass before any code of the plugin runs, for a launcher
   * that waits for a release byte on the descriptor after `extraInput`'s (see
   * `SandboxLayout.gated`). It starts once the launcher is running, so that
   * the two overlap; when it fails, the launcher's whole tree is killed
   * before the descriptor closes, and the spawn fails with its error.
   */
  readonly gate?: () => ResultAsync<void, HostError>;
}

/**
 * Releases a gated launcher when its check passed; otherwise kills the
 * launcher's tree, waits until it is gone (end of file would release it
 * too) and only then closes the descriptor.
 */
async function released(plugin: PluginProcess, release: NodeJS.WritableStream & { destroy(): void }, check: Result<void, HostError>): Promise<Result<PluginProcess, HostError>> {
  if (check.isOk()) {
    release.end(Buffer.of(1));
    return check.map(() => plugin);
  }
  for (const pid of [plugin.pid, ...descendantsOf(plugin.pid)]) sendSignal(pid, 'SIGKILL');
  await plugin.exited;
  release.destroy();
  return check.map(() => plugin);
}

/**
 * Spawns a launch and wraps it as a {@link PluginProcess}: the shared tail
 * of the plain spawner and of every sandbox backend. The executable's
 * descriptors become the child's fds 3, 4, … and are released once the
 * spawn settled, whatever its outcome.
 */
export function spawnChild(executable: VerifiedExecutable, launch: Launch, options: ChildPluginProcessOptions): ResultAsync<PluginProcess, HostError> {
  const preflight = diagnoseExecutable(executable);
  if (preflight) {
    executable.release();
    return errAsync(preflight);
  }
  const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', ...executable.inheritFds];
  if (launch.extraInput) stdio.push('pipe');
  if (launch.gate) stdio.push('pipe');
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(launch.command, [...launch.args], {
      stdio,
      env: { ...launch.env },
      cwd: launch.cwd,
      // Its own session and process group: terminal signals aimed at the host do not reach it, and stop() can signal the group.
      detached: true,
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
    type Input = NodeJS.WritableStream & { on(e: 'error', f: () => void): void; destroy(): void };
    if (launch.extraInput) {
      const input = child.stdio[3 + executable.inheritFds.length] as Input;
      input.on('error', () => undefined);
      input.end(launch.extraInput);
    }
    const plugin = new ChildPluginProcess(child, options);
    const gate = launch.gate;
    if (!gate) return okAsync<PluginProcess, HostError>(plugin);
    const release = child.stdio[3 + executable.inheritFds.length + (launch.extraInput ? 1 : 0)] as Input;
    release.on('error', () => undefined);
    return new ResultAsync((async () => released(plugin, release, await gate()))());
  });
}
