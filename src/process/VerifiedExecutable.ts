/**
 * What a spawner runs: a command line with the descriptors the child
 * inherits and the host paths it must be able to read. The spawners take
 * either a {@link VerifiedExecutable} (the binding module hashed exactly
 * these bytes) or an {@link UnverifiedCommand} (nothing was checked), and the
 * two types say which one a caller holds.
 */
export interface PluginCommand {
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
  /**
   * For a launcher that can mount a descriptor's contents read-only at a
   * path (bubblewrap): the verified bytes of a Node main module, at
   * `inheritFds[index]`, to show at `path` (the main module's own path), and
   * the command line to run instead of `argv`, which then needs no integrity
   * policy: what Node reads at that path can only be those bytes. With
   * `required`, `argv` is that command line too (no policy was written), so
   * a launcher that cannot mount must refuse the command: it would run
   * whatever file is at the path.
   */
  readonly mountedMain?: { readonly index: number; readonly path: string; readonly argv: readonly string[]; readonly required?: boolean };
  /** Host paths the child must be able to read (install root, interpreter). */
  readonly readOnlyPaths: readonly string[];
  /** The plugin's install root; the child's working directory. */
  readonly installRoot: string;
  /** Closes the inherited descriptors; call once the child has been spawned (or spawning failed). */
  release(): void;
}

// A type-level mark with no runtime value: code outside the binding module cannot name the key, so it cannot
// build an object of the branded type without a cast.
declare const verifiedByBinding: unique symbol;

/**
 * A command whose code the binding module verified just before the spawn
 * (`ExecutableBinding.verify`, or an `esm-module` entry run through the ESM
 * runner), so that what was hashed is what is executed. Only the binding
 * module produces one.
 */
export interface VerifiedExecutable extends PluginCommand {
  /** The SHA-256 (hex) that was verified, for logs and events. */
  readonly sha256: string;
  /** The binding module's mark. */
  readonly [verifiedByBinding]: true;
}

/**
 * A command the host runs without verifying anything (dev profiles, the
 * sandbox probe, tests of protocol modules); `unverifiedCommand` builds one.
 */
export interface UnverifiedCommand extends PluginCommand {
  /** Says at run time that no hash was checked. */
  readonly verified: false;
}
