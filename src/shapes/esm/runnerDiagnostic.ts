import { hostError, type HostError } from '../../errors/HostError.js';
import type { HostErrorCode } from '../../errors/registry.js';

/** The exit status of a runner whose plugin failed to load (EX_CONFIG). */
export const ESM_RUNNER_LOAD_FAILED_EXIT = 78;

/** The codes a runner may report for a failed load; anything else on stderr is not believed. */
export const ESM_RUNNER_CODES: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  'PLUGIN_MANIFEST_NOT_FOUND',
  'PLUGIN_MANIFEST_INVALID',
  'PLUGIN_ENTRY_INVALID',
  'PLUGIN_CAPABILITY_MISMATCH',
  'PLUGIN_TOOL_INVALID',
  'PLUGIN_DEPENDENCY_MISSING',
  'PLUGIN_DEPENDENCY_CYCLE',
  'PLUGIN_NAMESPACE_CONFLICT',
  'PLUGIN_INTERNAL_ERROR',
  'PLUGIN_TIMEOUT',
  'PLUGIN_EXECUTABLE_UNTRUSTED',
  'HOST_INVALID_OPTIONS',
  'HOST_IO_ERROR',
]);

/** What the runner writes to stderr, one JSON object per line, under the key `esmRunner`. */
export type EsmRunnerReport =
  | { readonly kind: 'load-failed'; readonly code: HostErrorCode; readonly message: string; readonly details: Readonly<Record<string, unknown>> }
  | { readonly kind: 'loaded'; readonly plugin: string; readonly version: string; readonly warnings: readonly string[] }
  | { readonly kind: 'reloaded'; readonly plugin: string; readonly version: string; readonly warnings: readonly string[] }
  | { readonly kind: 'reload-failed'; readonly plugin: string; readonly code: HostErrorCode; readonly message: string };

/** The stderr line for a report. */
export function formatRunnerReport(report: EsmRunnerReport): string {
  return JSON.stringify({ esmRunner: report });
}

/** The report on one stderr line, or `undefined` for any other line. */
export function parseRunnerReport(line: string): EsmRunnerReport | undefined {
  if (!line.startsWith('{"esmRunner":')) return undefined;
  try {
    const parsed = (JSON.parse(line) as { esmRunner?: unknown }).esmRunner;
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const report = parsed as EsmRunnerReport;
    if ((report.kind === 'load-failed' || report.kind === 'reload-failed') && !ESM_RUNNER_CODES.has(report.code)) return undefined;
    return report;
  } catch {
    return undefined;
  }
}

/**
 * Turns the `PLUGIN_CRASHED` of a runner that exited because its plugin
 * failed to load (status {@link ESM_RUNNER_LOAD_FAILED_EXIT}) into the load's
 * own HostError (PLUGIN_ENTRY_INVALID, PLUGIN_CAPABILITY_MISMATCH, …), read
 * from the runner's report in the stderr tail, with the crash as its cause.
 * Any other error comes back unchanged.
 */
export function esmRunnerFailure(error: HostError): HostError {
  if (error.code !== 'PLUGIN_CRASHED') return error;
  const exit = error.details['exit'];
  if (typeof exit !== 'object' || exit === null || (exit as { code?: unknown }).code !== ESM_RUNNER_LOAD_FAILED_EXIT) return error;
  const tail = error.details['stderr_tail'];
  if (typeof tail !== 'string') return error;
  const report = tail
    .split('\n')
    .map(parseRunnerReport)
    .findLast((r) => r?.kind === 'load-failed');
  if (report?.kind !== 'load-failed') return error;
  return hostError(report.code, report.message, { details: { ...report.details, ...error.details }, cause: error });
}

/** The load-failed report of a HostError. */
export function loadFailedReport(error: HostError): EsmRunnerReport {
  return { kind: 'load-failed', code: error.code, message: error.message, details: error.details };
}
