import { hostError, reworded, type HostError } from '../../errors/HostError.js';
import type { HostErrorCode } from '../../errors/registry.js';
import { isIssuedRunnerReportSeal, withoutReportSeals } from './runnerReportSeal.js';

/** The exit status of a runner whose plugin failed to load (EX_CONFIG). */
export const ESM_RUNNER_LOAD_FAILED_EXIT = 78;

/**
 * The codes an unsealed report is believed for: failures of the plugin's own
 * code (its import, createPlugin, its tools), which that code may as well
 * cause for real, so a report it forged tells nothing it could not make true.
 * The others (PLUGIN_EXECUTABLE_UNTRUSTED, the manifest, HOST_*) are found
 * before any plugin code runs, so the runner seals them (see
 * `runnerReportSeal`); unsealed, a plugin would plant a false tampering alarm
 * (a permanent quarantine) or a host fault that no crash book counts.
 */
export const ESM_PLUGIN_CODE_FAILURES: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  'PLUGIN_ENTRY_INVALID',
  'PLUGIN_CAPABILITY_MISMATCH',
  'PLUGIN_TOOL_INVALID',
  'PLUGIN_DEPENDENCY_MISSING',
  'PLUGIN_DEPENDENCY_CYCLE',
  'PLUGIN_NAMESPACE_CONFLICT',
  'PLUGIN_INTERNAL_ERROR',
  'PLUGIN_TIMEOUT',
]);

/** The codes a runner may report for a failed load; anything else on stderr is not believed. */
export const ESM_RUNNER_CODES: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  ...ESM_PLUGIN_CODE_FAILURES,
  'PLUGIN_MANIFEST_NOT_FOUND',
  'PLUGIN_MANIFEST_INVALID',
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

/** The stderr line for a report, with this start's seal for a report made before any plugin code ran. */
export function formatRunnerReport(report: EsmRunnerReport, seal?: string): string {
  return JSON.stringify(seal === undefined ? { esmRunner: report } : { esmRunner: report, seal });
}

/** A report and the seal its line carried, if any. */
interface ReportLine {
  readonly report: EsmRunnerReport;
  readonly seal?: unknown;
}

function parseReportLine(line: string): ReportLine | undefined {
  if (!line.startsWith('{"esmRunner":')) return undefined;
  try {
    const { esmRunner: parsed, seal } = JSON.parse(line) as { esmRunner?: unknown; seal?: unknown };
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const report = parsed as EsmRunnerReport;
    if ((report.kind === 'load-failed' || report.kind === 'reload-failed') && !ESM_RUNNER_CODES.has(report.code)) return undefined;
    return { report, seal };
  } catch {
    return undefined;
  }
}

/** The report on one stderr line, or `undefined` for any other line. */
export function parseRunnerReport(line: string): EsmRunnerReport | undefined {
  return parseReportLine(line)?.report;
}

/**
 * Turns the `PLUGIN_CRASHED` of a runner that exited because its plugin
 * failed to load (status {@link ESM_RUNNER_LOAD_FAILED_EXIT}) into the load's
 * own HostError (PLUGIN_ENTRY_INVALID, PLUGIN_CAPABILITY_MISMATCH, …), read
 * from the runner's last report in the stderr tail, with the crash as its
 * cause. A report is believed with any runner code when it carries a seal
 * this host issued for a start (see `runnerReportSeal`), otherwise only for
 * {@link ESM_PLUGIN_CODE_FAILURES}: the plugin's code shares the runner's
 * process and stderr. Seals in the tail are replaced in what comes back.
 * Any other error comes back unchanged.
 */
export function esmRunnerFailure(error: HostError): HostError {
  if (error.code !== 'PLUGIN_CRASHED') return error;
  const tail = error.details['stderr_tail'];
  if (typeof tail !== 'string') return error;
  const crash = tail.includes('"seal":') ? reworded(error, { details: { ...error.details, stderr_tail: withoutReportSeals(tail) } }) : error;
  const exit = error.details['exit'];
  if (typeof exit !== 'object' || exit === null || (exit as { code?: unknown }).code !== ESM_RUNNER_LOAD_FAILED_EXIT) return crash;
  const line = tail
    .split('\n')
    .map(parseReportLine)
    .findLast((r) => r?.report.kind === 'load-failed');
  const report = line?.report;
  if (report?.kind !== 'load-failed') return crash;
  if (!ESM_PLUGIN_CODE_FAILURES.has(report.code) && !isIssuedRunnerReportSeal(line?.seal)) return crash;
  return hostError(report.code, report.message, { details: { ...report.details, ...crash.details }, cause: crash });
}

/** The load-failed report of a HostError. */
export function loadFailedReport(error: HostError): EsmRunnerReport {
  return { kind: 'load-failed', code: error.code, message: error.message, details: error.details };
}
