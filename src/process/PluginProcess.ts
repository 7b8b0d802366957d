import type { Readable, Writable } from 'node:stream';

/** How a plugin process ended. */
export interface ExitInfo {
  /** Exit status, or `null` when a signal ended it. */
  readonly code: number | null;
  /** The signal that ended it, if any. */
  readonly signal: NodeJS.Signals | null;
  /**
   * A shell-style status: `code`, or 128 + signal number. 137 means SIGKILL,
   * which without a host stop usually means the kernel's out-of-memory killer.
   */
  readonly status: number;
  /** One line a person can read, e.g. `killed by SIGKILL (137, likely out of memory)`. */
  readonly description: string;
}

/**
 * A running plugin subprocess, whatever protocol it speaks and however it
 * was sandboxed. Every protocol session is built on this interface.
 */
export interface PluginProcess {
  /** The OS process id of the direct child (the sandbox launcher when sandboxed). */
  readonly pid: number;
  /** The plugin's stdin. */
  readonly stdin: Writable;
  /** The plugin's stdout. */
  readonly stdout: Readable;
  /** Resolves once the process has exited and its process tree is gone. */
  readonly exited: Promise<ExitInfo>;
  /** The exit, once it happened. */
  readonly exitInfo: ExitInfo | undefined;
  /** The last bytes the plugin wrote to stderr (bounded ring buffer), as text. */
  stderrTail(): string;
  /** Subscribes to complete stderr lines; returns an unsubscribe function. */
  onStderrLine(listener: (line: string) => void): () => void;
  /**
   * Stops the plugin and its whole process tree: close stdin, wait, SIGTERM,
   * wait, SIGKILL. Resolves with how it ended; safe to call more than once.
   */
  stop(options?: StopOptions): Promise<ExitInfo>;
}

/** Grace periods of the stop sequence. */
export interface StopOptions {
  /** How long to wait after closing stdin before SIGTERM. Default 2,000 ms. */
  readonly stdinGraceMs?: number;
  /** How long to wait after SIGTERM before SIGKILL. Default 2,000 ms. */
  readonly termGraceMs?: number;
}
