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
  /** The cap of the plugin's process tree it reached, when that is why it ended. */
  readonly limit?: ResourceLimitHit;
}

/**
 * How a plugin's tree limits are enforced: a cgroup v1 or v2 control group
 * around the whole tree, or (the fallback) per-process rlimits.
 */
export type TreeLimitMechanism = 'cgroup-v1' | 'cgroup-v2' | 'rlimit';

/** A tree limit a plugin reached, as read from the kernel's event counters. */
export interface ResourceLimitHit {
  /** Which cap: the tree's memory (tmpfs included) or its number of tasks. */
  readonly limit: 'memory' | 'processes';
  /** The cap, in bytes or tasks. */
  readonly value: number;
  /** What enforced it. */
  readonly mechanism: TreeLimitMechanism;
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
  /**
   * Whether the stderr ring dropped older bytes, so that the tail begins
   * inside a line; absent, the host takes it as dropped wherever it matters
   * (keeping secrets out of a tail).
   */
  stderrWrapped?(): boolean;
  /** Subscribes to complete stderr lines; returns an unsubscribe function. */
  onStderrLine(listener: (line: string) => void): () => void;
  /**
   * The cap of its process tree the plugin reached, read from the kernel when
   * asked (so a crash report can name it before the exit is known); present
   * only on processes whose tree is capped as a whole.
   */
  limitHit?(): ResourceLimitHit | undefined;
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
