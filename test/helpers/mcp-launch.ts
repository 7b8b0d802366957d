/**
 * A minimal PluginProcess over node:child_process for the MCP session tests
 * and benchmark. The real spawner (verification + sandbox) lives in
 * src/process/; this one only spawns, so the MCP suite stays independent of it.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { okAsync, errAsync, type ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../../src/errors/HostError.js';
import type { ExitInfo, PluginProcess, StopOptions } from '../../src/process/PluginProcess.js';
import type { ProcessLauncher } from '../../src/shapes/PluginSession.js';

const STDERR_TAIL_BYTES = 8 * 1024;
const running = new Set<PluginProcess>();

/** Where and how to start a test plugin. */
export interface TestLaunchOptions {
  /** Extra environment on top of PATH and HOME. */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory. */
  readonly cwd?: string;
  /** Receives every process this launcher starts. */
  readonly onSpawn?: (process: PluginProcess) => void;
}

function exitInfo(code: number | null, signal: NodeJS.Signals | null): ExitInfo {
  const signalNumber = signal === null ? 0 : (constants.signals[signal] ?? 0);
  const status = code ?? 128 + signalNumber;
  const description = signal === null ? `exited with code ${code ?? 0}` : `killed by ${signal} (${status})`;
  return { code, signal, status, description };
}

/** Spawns `argv` with piped stdio, a bounded stderr tail and the stop sequence. */
export function spawnTestProcess(argv: readonly string[], options: TestLaunchOptions = {}): PluginProcess {
  const [program, ...args] = argv;
  if (program === undefined) throw new Error('empty argv');
  const child = spawn(program, args, {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let tail = Buffer.alloc(0);
  let partialLine = '';
  const lineListeners = new Set<(line: string) => void>();
  child.stderr.on('data', (chunk: Buffer) => {
    tail = Buffer.concat([tail, chunk]);
    if (tail.length > STDERR_TAIL_BYTES) tail = tail.subarray(tail.length - STDERR_TAIL_BYTES);
    const lines = (partialLine + chunk.toString('utf8')).split('\n');
    partialLine = lines.pop() ?? '';
    for (const line of lines) for (const listener of lineListeners) listener(line);
  });
  child.stdin.on('error', () => undefined);
  let info: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.on('error', () => {
      info ??= exitInfo(127, null);
      resolve(info);
    });
    child.on('close', (code, signal) => {
      info ??= exitInfo(code, signal);
      resolve(info);
    });
  });
  const wait = (ms: number): Promise<boolean> =>
    Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
  let stopping: Promise<ExitInfo> | undefined;
  const proc: PluginProcess = {
    pid: child.pid ?? -1,
    stdin: child.stdin,
    stdout: child.stdout,
    exited,
    get exitInfo() {
      return info;
    },
    stderrTail: () => tail.toString('utf8'),
    onStderrLine(listener) {
      lineListeners.add(listener);
      return () => lineListeners.delete(listener);
    },
    stop(stopOptions: StopOptions = {}) {
      stopping ??= (async () => {
        child.stdin.end();
        if (!(await wait(stopOptions.stdinGraceMs ?? 2000))) {
          child.kill('SIGTERM');
          if (!(await wait(stopOptions.termGraceMs ?? 2000))) child.kill('SIGKILL');
        }
        return exited;
      })();
      return stopping;
    },
  };
  running.add(proc);
  void exited.then(() => running.delete(proc));
  return proc;
}

/** A launcher that spawns `argv` each time the session asks for a process. */
export function launchCommand(argv: readonly string[], options: TestLaunchOptions = {}): ProcessLauncher {
  return (): ResultAsync<PluginProcess, HostError> => {
    try {
      const proc = spawnTestProcess(argv, options);
      options.onSpawn?.(proc);
      return okAsync(proc);
    } catch (cause) {
      return errAsync(hostError('PLUGIN_SPAWN_FAILED', `could not spawn ${argv.join(' ')}`, { cause }));
    }
  };
}

/** Stops every test process still running (call from afterEach/afterAll). */
export async function stopAllTestProcesses(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop({ stdinGraceMs: 500, termGraceMs: 500 })));
}
