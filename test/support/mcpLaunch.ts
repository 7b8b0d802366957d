/**
 * Launchers for the MCP session tests and benchmark: the plain spawner of
 * test/support/plainLauncher.ts, plus a registry of what was started so that
 * a suite can stop every process it left running.
 */
import type { ResultAsync } from 'neverthrow';
import type { HostError } from '../../src/errors/HostError.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import type { ProcessLauncher } from '../../src/shapes/PluginSession.js';
import { spawnPlain, type PlainSpawnOptions } from './plainLauncher.js';

const running = new Set<PluginProcess>();

/** Where and how to start a test plugin. */
export interface TestLaunchOptions extends PlainSpawnOptions {
  /** Receives every process this launcher starts. */
  readonly onSpawn?: (process: PluginProcess) => void;
}

/** A launcher that spawns `argv` each time the session asks for a process. */
export function launchCommand(argv: readonly string[], options: TestLaunchOptions = {}): ProcessLauncher {
  return (): ResultAsync<PluginProcess, HostError> =>
    spawnPlain(argv, options).map((proc) => {
      running.add(proc);
      void proc.exited.then(() => running.delete(proc));
      options.onSpawn?.(proc);
      return proc;
    });
}

/** Stops every test process still running (call from afterEach/afterAll). */
export async function stopAllTestProcesses(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop({ stdinGraceMs: 500, termGraceMs: 500 })));
}
