/**
 * Facts about a misbehaving stdio plugin that go into `HostError.details`:
 * the offending line (bounded, so a hostile plugin cannot bloat logs) and how
 * the process ended. Shared by the ndjson-rpc and handshake sessions.
 */
import type { Clock } from '../../ports/ports.js';
import { exitWithin } from '../../process/exitInfo.js';
import type { ExitInfo, PluginProcess } from '../../process/PluginProcess.js';

/** The most characters of a plugin line copied into error details. */
export const RAW_LINE_LIMIT = 2048;

/** `{ raw_line }`, cut to {@link RAW_LINE_LIMIT} characters with `raw_line_truncated` when cut. */
export function rawLineDetails(line: string): Record<string, unknown> {
  return line.length <= RAW_LINE_LIMIT
    ? { raw_line: line }
    : { raw_line: line.slice(0, RAW_LINE_LIMIT), raw_line_truncated: true, raw_line_length: line.length };
}

/**
 * How long a crash report waits for the exit status after stdout closed: the
 * two usually arrive within a millisecond of each other, in either order.
 */
export const EXIT_STATUS_WAIT_MS = 250;

/** The JSON-safe facts of an exit for `HostError.details`. */
export function exitDetails(exit: ExitInfo): Record<string, unknown> {
  return { code: exit.code, signal: exit.signal, status: exit.status, description: exit.description, ...(exit.limit === undefined ? {} : { limit: exit.limit }) };
}

/** `{ exit, stderr_tail }` of a process that stopped talking, waiting briefly for its exit status. */
export async function crashDetails(process: PluginProcess, clock: Clock): Promise<Record<string, unknown>> {
  const exit = await exitWithin(process, EXIT_STATUS_WAIT_MS, clock);
  return {
    pid: process.pid,
    ...(exit === undefined ? { exit: null } : { exit: exitDetails(exit) }),
    stderr_tail: process.stderrTail(),
  };
}
