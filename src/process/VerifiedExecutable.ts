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
  /**
   * When `argv[0]` names an inherited descriptor on a host file that is not a
   * private copy (a pinned interpreter): its position in `inheritFds` and its
   * host path. A launcher that can mount the descriptor read-only at that
   * path runs the program by path and keeps the descriptor from the child:
   * a descriptor on a file the plugin's user owns could be reopened for
   * writing through `/proc/self/fd`, read-only mounts notwithstanding.
   */
  readonly programFile?: { readonly index: number; readonly path: string };
  /** Host paths the child must be able to read (install root, interpreter). */
  readonly readOnlyPaths: readonly string[];
  /** The plugin's install root; the child's working directory. */
  readonly installRoot: string;
  /** The SHA-256 (hex) that was verified, for logs and events. */
  readonly sha256: string;
  /** Closes the inherited descriptors; call once the child has been spawned (or spawning failed). */
  release(): void;
}
