/**
 * A minimal, unsandboxed `ProcessLauncher` for protocol tests: it spawns a
 * fixture with node:child_process and adapts it to `PluginProcess`. It stands
 * in for the real spawner from src/process so that the protocol sessions can
 * be tested without bubblewrap; swapping it for `spawnPluginProcess` must not
 * change any protocol test.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants } from 'node:os';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../../src/errors/HostError.js';
import type { ExitInfo, PluginProcess, StopOptions } from '../../src/process/PluginProcess.js';
import type { ProcessLauncher } from '../../src/shapes/PluginSession.js';

const STDERR_TAIL_BYTES = 8 * 1024;

/** Where and how to start a plain child. */
export interface PlainSpawnOptions {
  /** Extra environment on top of PATH (the parent environment is not inherited). */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory. */
  readonly cwd?: string;
}

/** A launcher that spawns `argv` afresh on every call. */
export function plainLauncher(argv: readonly string[], options: PlainSpawnOptions = {}): ProcessLauncher {
  return () => spawnPlain(argv, options);
}

/** The command line that runs a Node fixture with this Node binary. */
export function nodeArgv(script: string): string[] {
  return [process.execPath, script];
}

function exitInfoOf(code: number | null, signal: NodeJS.Signals | null): ExitInfo {
  if (signal !== null) {
    const status = 128 + (constants.signals[signal] ?? 0);
    return { code, signal, status, description: `killed by ${signal} (${status})` };
  }
  const status = code ?? 0;
  return { code, signal, status, description: `exited with status ${status}` };
}

/** Spawns `argv` with piped stdio; fails with PLUGIN_SPAWN_FAILED when the OS refuses. */
export function spawnPlain(argv: readonly string[], options: PlainSpawnOptions = {}): ResultAsync<PluginProcess, HostError> {
  const [program, ...args] = argv;
  if (program === undefined) return errAsync(hostError('PLUGIN_SPAWN_FAILED', 'empty command line'));
  const promise = new Promise<PluginProcess | HostError>((resolve) => {
    const child = spawn(program, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...options.env },
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
    child.once('error', (error) => {
      resolve(hostError('PLUGIN_SPAWN_FAILED', `could not start ${program}: ${error.message}`, { cause: error, details: { argv } }));
    });
    child.once('spawn', () => resolve(adapt(child)));
  });
  return ResultAsync.fromSafePromise(promise).andThen((value) => (value instanceof Error ? errAsync(value) : okAsync(value)));
}

function adapt(child: ChildProcessWithoutNullStreams): PluginProcess {
  let tail = '';
  let partial = '';
  const stderrListeners = new Set<(line: string) => void>();
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => {
    tail = (tail + text).slice(-STDERR_TAIL_BYTES);
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) for (const listener of stderrListeners) listener(line);
  });
  // A plugin that dies while the host writes must not crash the host with EPIPE.
  child.stdin.on('error', () => undefined);

  let exitInfo: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = exitInfoOf(code, signal);
      resolve(exitInfo);
    });
  });

  let stopping: Promise<ExitInfo> | undefined;
  const waitExit = (ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      if (exitInfo !== undefined) return resolve(true);
      const timer = setTimeout(() => resolve(false), ms);
      void exited.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  const stop = async (stopOptions: StopOptions = {}): Promise<ExitInfo> => {
    if (exitInfo !== undefined) return exitInfo;
    child.stdin.end();
    if (!(await waitExit(stopOptions.stdinGraceMs ?? 2000))) {
      child.kill('SIGTERM');
      if (!(await waitExit(stopOptions.termGraceMs ?? 2000))) child.kill('SIGKILL');
    }
    return exited;
  };

  return {
    pid: child.pid ?? -1,
    stdin: child.stdin,
    stdout: child.stdout,
    exited,
    get exitInfo() {
      return exitInfo;
    },
    stderrTail: () => tail,
    onStderrLine: (listener) => {
      stderrListeners.add(listener);
      return () => stderrListeners.delete(listener);
    },
    stop: (stopOptions) => (stopping ??= stop(stopOptions)),
  };
}
