/**
 * What a spawner runs: the result of verifying an executable binding just
 * before a spawn. Produced by `verifyExecutableBinding`, consumed by the
 * spawners, so that what was hashed is what is executed.
 */
export interface VerifiedExecutable {
  /**
   * The command line to execute, first element the program. Paths are as
   * the child will see them (they may name inherited descriptors, e.g.
   * `/proc/self/fd/3`, when execution goes through the verified descriptor).
   */
  readonly argv: readonly string[];
  /**
   * Open file descriptors that the child must inherit, in order, as fds 3,
   * 4, …; `argv` refers to them by those numbers.
   */
  readonly inheritFds: readonly number[];
  /** Host paths the child must be able to read (install root, interpreter). */
  readonly readOnlyPaths: readonly string[];
  /** The plugin's install root; the child's working directory. */
  readonly installRoot: string;
  /** The SHA-256 (hex) that was verified, for logs and events. */
  readonly sha256: string;
  /** Closes the inherited descriptors; call once the child has been spawned (or spawning failed). */
  release(): void;
}
