import { readFile } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import { hostError, type HostError } from '../errors/HostError.js';
import { describeErrorCode, isHostErrorCode } from '../errors/registry.js';
import type { CanaryOutcome, ManifestReport } from '../index.js';
import type { CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { locate } from './jsonLocations.js';
import { workflowCommand, type PrintedViolation } from './Output.js';
import { canaryJson, canarySummary } from './present.js';
import { continued, oneLineField } from './style.js';
import { packageVersion } from './version.js';

/** A check that did not run, and why. */
export interface SkippedCheck {
  readonly check: string;
  readonly code: string;
  readonly reason: string;
}

/** What a validation found. */
export interface Findings {
  violations: PrintedViolation[];
  checked: string[];
  canary: CanaryOutcome | undefined;
  skipped: SkippedCheck[];
}

/** What was validated, as the report names it. */
export interface ValidatedPackage {
  /** `directory`, `tgz`, `zip`, or `manifest` for a lone manifest file. */
  readonly kind: string;
  readonly manifestFile: string;
  readonly entries: number;
  readonly bytes: number;
  readonly digest: string | undefined;
  /** The manifest as a file the CLI can read (undefined inside an archive): violations get its lines and columns. */
  readonly manifestPath: string | undefined;
}

/** The violation as the report prints it, with the registry's hint for its code. */
export function printed(v: { readonly pointer: string; readonly code: string; readonly message: string; readonly stage: string; readonly hint?: string }): PrintedViolation {
  const hint = v.hint ?? (isHostErrorCode(v.code) ? describeErrorCode(v.code).hint : undefined);
  return { pointer: v.pointer, code: v.code, message: v.message, stage: v.stage, ...(hint === undefined ? {} : { hint }) };
}

/** The violations with the line and column of each in the manifest text, when it can be read. */
async function located(violations: readonly PrintedViolation[], manifestPath: string | undefined): Promise<PrintedViolation[]> {
  if (manifestPath === undefined || violations.length === 0) return [...violations];
  let text: string;
  try {
    text = await readFile(manifestPath, 'utf8');
  } catch {
    return [...violations];
  }
  return violations.map((v) => {
    const at = locate(text, v.pointer, v.message);
    return at === undefined ? v : { ...v, line: at.line, column: at.column };
  });
}

/** A path as code scanning and annotations want it: relative to the working directory, with forward slashes. */
const reportPath = (path: string): string => relative(process.cwd(), path).split(sep).join('/');

function humanBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} kB`;
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** Prints a validation's findings in the chosen format and returns its exit code. */
export async function printValidation(
  ctx: CommandContext,
  given: string,
  report: Pick<ManifestReport, 'form' | 'manifest'>,
  pkg: ValidatedPackage,
  found: Findings,
): Promise<ExitCode> {
  const { out } = ctx;
  const findings: Findings = { ...found, violations: await located(found.violations, pkg.manifestPath) };
  const file = reportPath(pkg.manifestPath ?? given);
  if (ctx.flags.format === 'sarif') out.data(sarifLog(file, findings));
  if (ctx.flags.format === 'github') {
    for (const v of findings.violations) {
      out.annotation(workflowCommand('error', { file, line: v.line, col: v.column, title: `${v.code} at ${v.pointer || '(document)'}` }, v.hint === undefined ? v.message : `${v.message}\n${v.hint}`));
    }
    for (const k of findings.skipped) out.annotation(workflowCommand('warning', { file, title: `${k.check} skipped` }, `${k.code}: ${k.reason}`));
    const canaryError = findings.canary?.status === 'failed' ? findings.canary.error : undefined;
    if (canaryError !== undefined) out.annotation(workflowCommand('error', { file, title: `canary: ${canaryError.code}` }, `${canaryError.message}\n${canaryError.hint}`));
  }
  const manifestOnly = pkg.kind === 'manifest';
  const manifest = report.manifest;
  const failedCanary = findings.canary?.status === 'failed' ? findings.canary.error : undefined;
  const ok = findings.violations.length === 0 && failedCanary === undefined;
  if (ctx.flags.format !== 'sarif') out.data({
    ok,
    source: given,
    package: { kind: pkg.kind, manifest_file: pkg.manifestFile, entries: pkg.entries, bytes: pkg.bytes, digest: pkg.digest ?? null },
    form: report.form,
    plugin: manifest === undefined ? null : { plugin_id: manifest.plugin_id, name: manifest.name, version: manifest.version, shape: manifest.shape },
    checked: findings.checked,
    violations: findings.violations,
    skipped: findings.skipped,
    canary: findings.canary === undefined ? null : canaryJson(findings.canary),
    ...(ok ? {} : { error: summaryError(findings.violations, failedCanary).toJSON() }),
  });

  const s = out.style;
  if (findings.violations.length > 0) {
    const n = findings.violations.length;
    out.line(`${s.red('✗')} ${given}: ${n} violation${n === 1 ? '' : 's'} ${s.dim(`(${pkg.manifestFile}, ${report.form})`)}`);
    out.line();
    out.table(
      ['  LINE', 'POINTER', 'CODE', 'MESSAGE'],
      findings.violations.map((v) => ['  ' + (v.line === undefined ? '-' : `${v.line}:${v.column ?? 1}`), v.pointer === '' ? '(document)' : oneLineField(v.pointer), v.code, oneLineField(v.message)]),
      (text, _r, c) => (c === 2 ? s.red(text) : c === 1 ? s.cyan(text) : c === 0 ? s.dim(text) : text),
    );
    out.line();
    // Each distinct hint once: most are the registry's for the code, some name the cause (an interpreter shim).
    for (const hint of new Set(findings.violations.flatMap((v) => (v.hint === undefined ? [] : [`${v.code}: ${v.hint}`])))) {
      out.line(`${s.yellow('hint')} ${hint}`);
    }
    return EXIT_CODES.validation;
  }
  const what = manifest === undefined ? '' : ` ${manifest.plugin_id} ${manifest.version} ${s.dim(`(${report.form}, ${manifest.shape})`)}`;
  const size = manifestOnly ? 'a lone manifest' : `${pkg.kind}, ${pkg.entries} entries, ${humanBytes(pkg.bytes)}`;
  out.line(`${failedCanary === undefined ? s.green('✓') : s.red('✗')} ${given}:${what}`);
  out.line(`  ${s.dim('checked')}  ${findings.checked.join(', ')} ${s.dim(`(${size})`)}`);
  if (manifestOnly) out.line(`  ${s.dim('note')}     a lone manifest has no executable to pin; validate the package directory for that`);
  if (findings.canary !== undefined) out.line(`  ${s.dim('canary')}   ${canarySummary(findings.canary, s)}`);
  if (failedCanary !== undefined) {
    const e = out.errStyle;
    const tail = stderrTail(failedCanary);
    if (tail.length > 0) out.note([e.dim('plugin stderr (last lines):'), ...tail.map((l) => e.dim(`  ${l}`))].join('\n'));
    out.note(`${e.yellow('hint')}: ${continued(failedCanary.hint, '    ')}`);
    return EXIT_CODES.runtime;
  }
  for (const reason of new Set(findings.skipped.map((k) => `${k.code}: ${k.reason}`))) {
    const checks = findings.skipped.filter((k) => `${k.code}: ${k.reason}` === reason).map((k) => k.check);
    out.line(`  ${s.yellow('skipped')}  ${checks.join(', ')}: ${reason}`);
  }
  if (findings.skipped.some((k) => k.code === 'PLUGIN_SANDBOX_UNSUPPORTED')) {
    out.line(`  ${s.dim('note')}     these checks need the OS sandbox; exit code ${EXIT_CODES.checksSkipped} (--strict fails instead)`);
    return EXIT_CODES.checksSkipped;
  }
  return EXIT_CODES.ok;
}

/** How many of the plugin's last stderr lines a failed canary shows. */
const STDERR_LINES = 10;

/** The plugin's last stderr lines a failure carries (a crash, a refused start), without trailing blank ones. */
function stderrTail(error: HostError): string[] {
  const tail = error.details.stderr_tail;
  if (typeof tail !== 'string' || tail.trim() === '') return [];
  return tail.trimEnd().split('\n').slice(-STDERR_LINES);
}

/** The `error` of a refused validation: the first violation's code, every violation counted. */
function summaryError(violations: readonly PrintedViolation[], canaryError: HostError | undefined): HostError {
  const first = violations[0];
  if (first === undefined || !isHostErrorCode(first.code)) {
    return canaryError ?? hostError('PLUGIN_MANIFEST_INVALID', 'the package was refused');
  }
  const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : '';
  return hostError(first.code, `${first.pointer || '(document)'}: ${first.message}${more}`);
}

/** The SARIF 2.1.0 log of a validation: one rule per code (its hint as help), one result per violation, skipped check and failed canary. */
function sarifLog(file: string, findings: Findings): Record<string, unknown> {
  const canaryError = findings.canary?.status === 'failed' ? findings.canary.error : undefined;
  const entries = [
    ...findings.violations.map((v) => ({ code: v.code, level: 'error', text: v.message, pointer: v.pointer, line: v.line, column: v.column })),
    ...findings.skipped.map((k) => ({ code: k.code, level: 'warning', text: `${k.check} skipped: ${k.reason}`, pointer: undefined, line: undefined, column: undefined })),
    ...(canaryError === undefined ? [] : [{ code: canaryError.code, level: 'error', text: `canary: ${canaryError.message}`, pointer: undefined, line: undefined, column: undefined }]),
  ];
  const codes = [...new Set(entries.map((e) => e.code))];
  const rules = codes.map((code) => ({
    id: code,
    shortDescription: { text: code },
    ...(isHostErrorCode(code) ? { help: { text: describeErrorCode(code).hint } } : {}),
  }));
  const results = entries.map((e) => ({
    ruleId: e.code,
    ruleIndex: codes.indexOf(e.code),
    level: e.level,
    message: { text: e.text },
    locations: [
      {
        physicalLocation: {
          artifactLocation: { uri: file },
          ...(e.line === undefined ? {} : { region: { startLine: e.line, startColumn: e.column ?? 1 } }),
        },
        ...(e.pointer === undefined ? {} : { logicalLocations: [{ fullyQualifiedName: e.pointer === '' ? '/' : e.pointer, kind: 'member' }] }),
      },
    ],
  }));
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [{ tool: { driver: { name: PROGRAM, version: packageVersion(), informationUri: 'https://www.npmjs.com/package/mcp-plugin-host', rules } }, results }],
  };
}
