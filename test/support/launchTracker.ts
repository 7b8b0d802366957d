/**
 * Wraps a `ProcessLauncher` to record every launch and every line the host
 * writes to the plugin, so tests can assert lazy spawning, keep-alive,
 * respawn and the exact request lines.
 */
import type { Logger } from '../../src/ports/ports.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import type { ProcessLauncher } from '../../src/shapes/PluginSession.js';

/** What a tracked launcher saw. */
export interface LaunchTracker {
  /** The launcher to hand to a session. */
  readonly launch: ProcessLauncher;
  /** Every process launched, in order. */
  readonly processes: PluginProcess[];
  /** How many launches were attempted, successful or not. */
  attempts(): number;
  /** Every line written to any launched process's stdin, parsed as JSON. */
  readonly written: unknown[];
  /** Stops every launched process that still runs. */
  stopAll(): Promise<void>;
}

/** Tracks `launchers[i]` for the i-th launch (the last one repeats). */
export function trackLaunches(...launchers: ProcessLauncher[]): LaunchTracker {
  const processes: PluginProcess[] = [];
  const written: unknown[] = [];
  let attempts = 0;
  const launch: ProcessLauncher = () => {
    const launcher = launchers[Math.min(attempts, launchers.length - 1)];
    attempts += 1;
    if (launcher === undefined) throw new Error('trackLaunches needs at least one launcher');
    return launcher().map((proc) => {
      processes.push(proc);
      const write = proc.stdin.write.bind(proc.stdin) as (chunk: unknown, ...rest: unknown[]) => boolean;
      (proc.stdin as { write: typeof write }).write = (chunk: unknown, ...rest: unknown[]) => {
        for (const line of String(chunk).split('\n').filter((l) => l.length > 0)) written.push(JSON.parse(line));
        return write(chunk, ...rest);
      };
      return proc;
    });
  };
  return {
    launch,
    processes,
    attempts: () => attempts,
    written,
    stopAll: async () => {
      await Promise.all(processes.map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 1000 })));
    },
  };
}

/** One record of a {@link recordingLogger}. */
export interface LogRecord {
  readonly level: string;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

/** A logger that keeps its records for assertions. */
export function recordingLogger(): Logger & { readonly records: LogRecord[] } {
  const records: LogRecord[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void records.push({ level, fields, message });
  return { records, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
