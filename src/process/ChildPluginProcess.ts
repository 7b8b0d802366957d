import type { ChildProcess } from 'node:child_process';
import { basename } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import type { Readable, Writable } from 'node:stream';
import { internalError, type HostError } from '../errors/HostError.js';
import { silentLogger, systemClock, type Clock, type Logger } from '../ports/ports.js';
import { exitInfoOf } from './exitInfo.js';
import type { ExitInfo, PluginProcess, StopOptions } from './PluginProcess.js';
import { commandOf, descendantsOf, processState, sendSignal } from './processTree.js';
import { DEFAULT_STDERR_LINE_MAX_BYTES, DEFAULT_STDERR_RING_BYTES, StderrRing } from './StderrRing.js';

/** Default wait after closing stdin before SIGTERM. */
export const DEFAULT_STDIN_GRACE_MS = 2_000;
/** Default wait after SIGTERM before SIGKILL. */
export const DEFAULT_TERM_GRACE_MS = 2_000;

/** How long `exited` waits for stderr to drain after the exit, at most. */
const STDERR_DRAIN_MS = 1_000;

/** Lifecycle settings shared by every spawner. */
export interface LifecycleOptions {
  /** Wait after closing stdin before SIGTERM. Default 2,000 ms. */
  readonly stdinGraceMs?: number;
  /** Wait after SIGTERM before SIGKILL. Default 2,000 ms. */
  readonly termGraceMs?: number;
  /** Bytes of stderr kept for crash reports. Default 64 KiB. */
  readonly stderrRingBytes?: number;
  /** Longest stderr line passed to listeners. Default 16 KiB. */
  readonly stderrLineMaxBytes?: number;
  /** Timers. Default the system clock. */
  readonly clock?: Clock;
  /** Where lifecycle events are logged. Default silent. */
  readonly logger?: Logger;
}

/**
 * How a process tree is reached for signals:
 * - `pid-namespace`: the child is a sandbox launcher (bubblewrap) whose
 *   descendants live in their own PID namespace; SIGTERM goes to the
 *   descendants (the launcher would turn it into an immediate SIGKILL of
 *   everything), SIGKILL to the launcher ends the whole namespace.
 * - `process-group`: the child leads its own process group; signals go to
 *   the group and to any descendant that left it.
 */
export type TreeKind = 'pid-namespace' | 'process-group';

/** What {@link ChildPluginProcess} needs besides the child. */
export interface ChildPluginProcessOptions extends LifecycleOptions {
  readonly tree: TreeKind;
  /** Stderr lines of the launcher itself saying it could not execute the plugin. */
  readonly launcherFailure?: RegExp;
  /**
   * For a `pid-namespace` tree: the command name (`/proc/<pid>/comm`, see
   * {@link commandNameOf}) of the launcher's own processes. While every
   * process below the launcher still runs it, the sandbox is being set up and
   * no code of the plugin has run; its processes there ignore SIGTERM (a PID
   * namespace's process 1 does, and the launchers' forwarders have no one to
   * forward to yet), so a stop then kills the tree at once instead of
   * waiting out both graces for a plugin that is not there.
   */
  readonly setupCommand?: string;
}

/** The longest command name the kernel keeps for a process (TASK_COMM_LEN less its terminator). */
const COMM_MAX_BYTES = 15;

/** The command name the kernel gives a process that executed `program`: its file name, cut to 15 bytes. */
export function commandNameOf(program: string): string {
  return Buffer.from(basename(program)).subarray(0, COMM_MAX_BYTES).toString('utf8');
}

/** A {@link PluginProcess} over a Node child process. */
export class ChildPluginProcess implements PluginProcess {
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly exited: Promise<ExitInfo>;
  private info: ExitInfo | undefined;
  private stopping: Promise<ExitInfo> | undefined;
  private hostSentKill = false;
  private killedInSetup = false;
  private launcherFailureLine: string | undefined;
  private readonly ring: StderrRing;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly exitedRaw: Promise<void>;

  /**
   * Wraps `child`, which must have been spawned with `stdio[0..2]` as pipes
   * and have emitted its `spawn` event; anything else is a bug of the caller
   * (HOST_INTERNAL_ERROR).
   */
  static create(child: ChildProcess, options: ChildPluginProcessOptions): Result<ChildPluginProcess, HostError> {
    const { pid, stdin, stdout, stderr } = child;
    if (pid === undefined || !stdin || !stdout || !stderr) {
      return err(internalError('ChildPluginProcess needs a spawned child with piped stdio'));
    }
    return ok(new ChildPluginProcess(child, { pid, stdin, stdout, stderr }, options));
  }

  private constructor(
    private readonly child: ChildProcess,
    pipes: { readonly pid: number; readonly stdin: Writable; readonly stdout: Readable; readonly stderr: Readable },
    private readonly options: ChildPluginProcessOptions,
  ) {
    this.pid = pipes.pid;
    this.stdin = pipes.stdin;
    this.stdout = pipes.stdout;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.ring = new StderrRing(options.stderrRingBytes ?? DEFAULT_STDERR_RING_BYTES, options.stderrLineMaxBytes ?? DEFAULT_STDERR_LINE_MAX_BYTES);

    // A plugin that exits while the protocol writes would otherwise crash the host with EPIPE.
    pipes.stdin.on('error', (e) => this.logger.debug({ pid: this.pid, error: e.message }, 'plugin stdin error'));
    child.on('error', (e) => this.logger.warn({ pid: this.pid, error: e.message }, 'plugin process error'));
    const stderr = pipes.stderr;
    stderr.on('data', (chunk: Buffer) => this.ring.push(chunk));
    const stderrClosed = new Promise<void>((resolve) => stderr.once('close', resolve));
    stderr.once('end', () => this.ring.flush());
    if (options.launcherFailure) {
      const pattern = options.launcherFailure;
      this.ring.onLine((line) => {
        if (this.launcherFailureLine === undefined && pattern.test(line)) this.launcherFailureLine = line;
      });
    }

    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    this.exitedRaw = exit.then(() => undefined);
    this.exited = exit.then(async ({ code, signal }) => {
      if (options.tree === 'process-group') sendSignal(-this.pid, 'SIGKILL');
      await this.within(stderrClosed, STDERR_DRAIN_MS);
      // A launcher fails before the plugin runs, so before any byte on stdout: such a line after the plugin wrote there
      // is the plugin's own, in the launcher's words ("mcp-plugin-launcher: landlock: ..."), and was reported as the
      // host's sandbox failing to execute it.
      const stdoutRead = (pipes.stdout as Readable & { bytesRead?: number }).bytesRead ?? 0;
      const execFailure = (code === 1 || code === 127) && stdoutRead === 0 ? this.launcherFailureLine : undefined;
      this.info = exitInfoOf(code, signal, {
        hostSentKill: this.hostSentKill,
        killedInSetup: this.killedInSetup,
        viaLauncher: options.tree === 'pid-namespace',
        ...(execFailure === undefined ? {} : { execFailure }),
      });
      this.logger.info({ pid: this.pid, status: this.info.status, description: this.info.description }, 'plugin process exited');
      return this.info;
    });
  }

  get exitInfo(): ExitInfo | undefined {
    return this.info;
  }

  stderrTail(): string {
    return this.ring.tail();
  }

  stderrWrapped(): boolean {
    return this.ring.wrapped;
  }

  onStderrLine(listener: (line: string) => void): () => void {
    return this.ring.onLine(listener);
  }

  stop(options: StopOptions = {}): Promise<ExitInfo> {
    if (this.stopping === undefined) this.stopping = this.runStop(options);
    return this.stopping;
  }

  private async runStop(options: StopOptions): Promise<ExitInfo> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    const stdinGrace = options.stdinGraceMs ?? this.options.stdinGraceMs ?? DEFAULT_STDIN_GRACE_MS;
    const termGrace = options.termGraceMs ?? this.options.termGraceMs ?? DEFAULT_TERM_GRACE_MS;
    // Nothing of the plugin runs yet, so there is no shutdown to wait for: neither EOF nor SIGTERM would reach it.
    if (this.killedDuringSetup()) return this.exited;
    this.stdin.end();
    if (await this.within(this.exitedRaw, stdinGrace)) return this.exited;
    this.stdin.destroy();
    // A setup slower than the stdin grace: SIGTERM would be lost the same way.
    if (this.killedDuringSetup()) return this.exited;
    this.logger.debug({ pid: this.pid }, 'plugin ignored EOF; sending SIGTERM to its process tree');
    this.signalTree('SIGTERM');
    if (await this.within(this.exitedRaw, termGrace)) return this.exited;
    this.logger.warn({ pid: this.pid }, 'plugin ignored SIGTERM; sending SIGKILL to its process tree');
    this.hostSentKill = true;
    this.signalTree('SIGKILL');
    return this.exited;
  }

  /**
   * Kills the launcher and its tree when the sandbox is still being set up
   * (see `setupCommand`); says whether it did. A plugin that begins to run
   * in the instant between the look and the kill dies before its first
   * instructions, as it would had the stop come a moment earlier.
   */
  private killedDuringSetup(): boolean {
    const launcher = this.options.setupCommand;
    // Without /proc (the launcher's state unreadable) nothing tells setup from a running plugin; a launcher that exited
    // (a zombie not yet reaped) set up nothing more, and its exit, perhaps the plugin's own 137, must read as it was.
    const state = processState(this.pid);
    if (this.options.tree !== 'pid-namespace' || launcher === undefined || state === undefined || state === 'Z') return false;
    const descendants = descendantsOf(this.pid);
    // A process gone meanwhile (no name) ran nothing of the plugin's that could still be shut down.
    if (!descendants.every((pid) => (commandOf(pid) ?? launcher) === launcher)) return false;
    this.logger.debug({ pid: this.pid }, 'stop while the sandbox is set up: killing its launcher and tree');
    this.hostSentKill = true;
    this.killedInSetup = true;
    // Its process group first, which the kernel kills as one with whatever the launcher is forking right then: a
    // sandbox's process 1 that bubblewrap cloned between the look and a kill of bubblewrap alone outlived it, had not
    // yet asked to die with its parent, and went on to run the plugin. The Landlock launcher makes its group itself,
    // a moment after it starts; before that no group has its id, and it forked nothing yet.
    sendSignal(-this.pid, 'SIGKILL');
    sendSignal(this.pid, 'SIGKILL');
    for (const pid of descendants) sendSignal(pid, 'SIGKILL');
    return true;
  }

  private signalTree(signal: 'SIGTERM' | 'SIGKILL'): void {
    const descendants = descendantsOf(this.pid);
    if (this.options.tree === 'process-group') sendSignal(-this.pid, signal);
    else if (signal === 'SIGKILL') sendSignal(this.pid, signal);
    for (const pid of descendants) sendSignal(pid, signal);
  }

  /** Whether `promise` settled within `ms`. */
  private within(promise: Promise<unknown>, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = this.clock.setTimer(() => resolve(false), ms);
      void promise.then(() => {
        cancel();
        resolve(true);
      });
    });
  }
}
