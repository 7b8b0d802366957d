/**
 * An unsandboxed `ProcessLauncher` for protocol tests: the real plain spawner
 * (`spawnPluginProcess`, the same lifecycle the sandbox uses) on a command
 * line that is trusted as it is, so the protocol sessions are tested without
 * bubblewrap and without an install.
 */
import type { ResultAsync } from 'neverthrow';
import type { HostError } from '../../src/errors/HostError.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { spawnPluginProcess, unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import type { ProcessLauncher } from '../../src/shapes/PluginSession.js';

/** Where and how to start a plain child. */
export interface PlainSpawnOptions {
  /** Extra environment on top of PATH and HOME (the rest of the parent environment is not inherited). */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory. Default the current directory. */
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

/** Spawns `argv` with piped stdio; fails with PLUGIN_SPAWN_FAILED when the OS refuses. */
export function spawnPlain(argv: readonly string[], options: PlainSpawnOptions = {}): ResultAsync<PluginProcess, HostError> {
  return spawnPluginProcess({
    executable: unverifiedCommand(argv, options.cwd ?? process.cwd()),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...options.env },
  });
}
