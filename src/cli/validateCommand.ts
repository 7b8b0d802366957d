import { copyFile, lstat, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { err, ok, type Result } from 'neverthrow';
import { tmpdir } from 'node:os';
import { basename, extname, join } from 'node:path';
import {
  ManifestValidator,
  PluginHost,
  describeErrorCode,
  hostError,
  isHostErrorCode,
  type CanaryOutcome,
  type HostError,
  type PluginHostOptions,
} from '../index.js';
import { fail, hostOptions, packageOptions, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { violationsOf, type PrintedViolation } from './Output.js';
import { canaryJson, canarySummary } from './present.js';
import { usageFailure } from './usage.js';

/** Where a binding refusal points in the manifest. */
const INSTALL_POINTERS: Partial<Record<string, string>> = {
  PLUGIN_EXECUTABLE_UNTRUSTED: '/executable',
  PLUGIN_SHAPE_UNSUPPORTED: '/shape',
  PLUGIN_CHECKSUM_MISMATCH: '/package/checksum',
};

const MANIFEST_EXTENSIONS = new Set(['.json', '.toml']);

/** The file name a lone manifest is checked under, so the validator reads it as the right form. */
async function manifestFileName(path: string): Promise<string> {
  const name = basename(path);
  if (ManifestValidator.fileNames.includes(name)) return name;
  if (extname(name).toLowerCase() === '.toml') return 'plugin.toml';
  try {
    return ManifestValidator.formOf(JSON.parse(await readFile(path, 'utf8'))) === 'open-discovery' ? 'mcp-plugin.json' : 'manifest.json';
  } catch {
    // Unparsable JSON is reported by the validator itself, with its pointer.
    return 'manifest.json';
  }
}

function printed(v: { readonly pointer: string; readonly code: string; readonly message: string; readonly stage: string }): PrintedViolation {
  return { pointer: v.pointer, code: v.code, message: v.message, stage: v.stage };
}

function humanBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} kB`;
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** A check that did not run, and why. */
interface SkippedCheck {
  readonly check: string;
  readonly code: string;
  readonly reason: string;
}

interface Findings {
  violations: PrintedViolation[];
  checked: string[];
  canary: CanaryOutcome | undefined;
  skipped: SkippedCheck[];
}

/**
 * `validate`: every install check, reported in full, with nothing installed.
 * The package is inspected against a scratch profile (all manifest and host
 * checks, every violation); when that is clean and there is a real package
 * (not a lone manifest), it is also installed into the scratch profile,
 * which pins the executable — the one check inspection cannot do — and,
 * with --canary, started. The scratch profile is deleted afterwards.
 */
export async function validateCommand(ctx: CommandContext): Promise<ExitCode> {
  const given = ctx.positionals[0] ?? '';
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(given)).isDirectory();
  } catch {
    return usageFailure(ctx, `no such file or directory: ${given}`, 'validate');
  }
  const manifestOnly = !isDirectory && MANIFEST_EXTENSIONS.has(extname(given).toLowerCase());
  const scratch = await mkdtemp(join(tmpdir(), 'mcp-plugin-host-validate-'));
  try {
    let source = given;
    if (manifestOnly) {
      source = join(scratch, 'package');
      await mkdir(source);
      await copyFile(given, join(source, await manifestFileName(given)));
    }
    // A directory (or lone manifest) can only ever be installed into a dev
    // profile, so that is what it is checked as; an archive is checked the
    // way the chosen profile kind would install it.
    const profileKind = isDirectory || manifestOnly || ctx.flags.dev ? 'dev' : 'standard';
    const scratchProfile = join(scratch, 'profile');
    const opened = await openScratchHost(ctx, { profileDir: scratchProfile, profile: 'validate', profileKind });
    if (opened.isErr()) return fail(ctx, opened.error, true);
    const { host, sandboxMissing } = opened.value;
    try {
      return await inspect(ctx, host, { given, source, manifestOnly, isDirectory, scratchProfile, sandboxMissing });
    } finally {
      await host.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Opens the host of the scratch profile. Where this machine has no enforcing
 * sandbox, a dev scratch host is opened without one so that the static checks
 * still run: `inspect` reads the package and never starts anything, and the
 * steps that could start plugin code (install, canary) are skipped on such a
 * host. `--strict` and archives checked as standard installs keep the refusal.
 */
async function openScratchHost(
  ctx: CommandContext,
  overrides: PluginHostOptions,
): Promise<Result<{ host: PluginHost; sandboxMissing: HostError | undefined }, HostError>> {
  const options = await hostOptions(ctx.flags, overrides);
  if (options.isErr()) return err(options.error);
  const sandboxed = await PluginHost.open(options.value);
  if (sandboxed.isOk()) return ok({ host: sandboxed.value, sandboxMissing: undefined });
  if (sandboxed.error.code !== 'PLUGIN_SANDBOX_UNSUPPORTED' || ctx.flags.strict || options.value.profileKind !== 'dev') return err(sandboxed.error);
  const staticOnly = await PluginHost.open({ ...options.value, sandbox: { dangerouslyRunUnsandboxed: true } });
  return staticOnly.map((host) => ({ host, sandboxMissing: sandboxed.error }));
}

/** What one validation looks at. */
interface Target {
  /** The path as the user gave it. */
  readonly given: string;
  /** The package directory or archive handed to the host. */
  readonly source: string;
  /** A lone manifest file, copied into a scratch package. */
  readonly manifestOnly: boolean;
  /** The user gave a directory. */
  readonly isDirectory: boolean;
  /** The scratch profile directory. */
  readonly scratchProfile: string;
  /** Why the checks that need the sandbox are skipped; undefined when it works. */
  readonly sandboxMissing: HostError | undefined;
}

/**
 * A directory package's executable that is not there: found by reading the
 * package, so it is reported even where the binding step cannot run.
 */
async function missingExecutable(dir: string, executable: string | undefined): Promise<PrintedViolation | undefined> {
  if (executable === undefined) return undefined;
  try {
    await lstat(join(dir, executable));
    return undefined;
  } catch {
    return { pointer: '/executable', code: 'PLUGIN_EXECUTABLE_UNTRUSTED', message: `executable '${executable}' is not in the package`, stage: 'executable_binding' };
  }
}

/** A message about a file in the scratch install root, with the path made relative to the package again. */
function withoutScratchRoot(message: string, scratchProfile: string): string {
  const root = `${scratchProfile}/plugins/`;
  return message.split(root).map((part, i) => (i === 0 ? part : part.replace(/^[^/]+\/[^/]+\//, ''))).join('');
}

async function inspect(ctx: CommandContext, host: PluginHost, target: Target): Promise<ExitCode> {
  const { given, source, manifestOnly, scratchProfile, sandboxMissing } = target;
  const { out, flags } = ctx;
  const options = await packageOptions(flags);
  if (options.isErr()) return fail(ctx, options.error, true);
  const spinner = out.spinner();
  spinner.update(`checking ${given}`);
  const inspected = await host.inspect(source, options.value);
  if (inspected.isErr()) {
    spinner.stop();
    return fail(ctx, inspected.error, true, undefined, { source: given });
  }
  const { report, package: pkg } = inspected.value;
  const findings: Findings = {
    violations: report.violations.map(printed),
    checked: ['package', 'manifest', 'namespace', 'env', 'credentials', 'schema refs'],
    canary: undefined,
    skipped: [],
  };
  let pluginId = report.manifest?.plugin_id;
  if (findings.violations.length === 0 && target.isDirectory) {
    const missing = await missingExecutable(given, report.manifest?.executable);
    if (missing !== undefined) findings.violations.push(missing);
  }

  if (findings.violations.length === 0 && !manifestOnly && sandboxMissing !== undefined) {
    findings.skipped.push(...['executable binding', ...(flags.canary ? ['canary'] : [])].map((check) => ({ check, code: sandboxMissing.code, reason: sandboxMissing.message })));
  } else if (findings.violations.length === 0 && !manifestOnly) {
    spinner.update('pinning the executable');
    const trial = await host.install(source, { ...options.value, canary: false });
    if (trial.isErr()) {
      if (describeErrorCode(trial.error.code).stage !== 'install') {
        spinner.stop();
        return fail(ctx, trial.error, true, pluginId, { source: given });
      }
      const listed = violationsOf(trial.error);
      const message = withoutScratchRoot(trial.error.message, scratchProfile);
      findings.violations =
        listed.length > 0 ? listed : [{ pointer: INSTALL_POINTERS[trial.error.code] ?? '', code: trial.error.code, message, stage: 'executable_binding' }];
    } else {
      findings.checked.push('executable binding');
      pluginId = trial.value.plugin.name;
      if (flags.canary) {
        spinner.update(`starting ${pluginId}`);
        const canary = await host.canary(pluginId, { live: flags.live });
        if (canary.isErr()) {
          spinner.stop();
          return fail(ctx, canary.error, false, pluginId, { source: given });
        }
        findings.canary = canary.value;
        findings.checked.push('canary');
      }
    }
  }
  spinner.stop();

  const manifest = report.manifest;
  const failedCanary = findings.canary?.status === 'failed' ? findings.canary.error : undefined;
  const ok = findings.violations.length === 0 && failedCanary === undefined;
  out.data({
    ok,
    source: given,
    package: {
      kind: manifestOnly ? 'manifest' : pkg.source.kind,
      manifest_file: pkg.manifestFile,
      entries: pkg.stats.entries,
      bytes: pkg.stats.bytes,
      digest: pkg.digest ?? null,
    },
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
    out.table(['  POINTER', 'CODE', 'MESSAGE'], findings.violations.map((v) => ['  ' + (v.pointer === '' ? '(document)' : v.pointer), v.code, v.message]), (text, _r, c) =>
      c === 1 ? s.red(text) : c === 0 ? s.cyan(text) : text,
    );
    out.line();
    for (const code of new Set(findings.violations.map((v) => v.code))) {
      if (isHostErrorCode(code)) out.line(`${s.yellow('hint')} ${code}: ${describeErrorCode(code).hint}`);
    }
    return EXIT_CODES.validation;
  }
  const what = manifest === undefined ? '' : ` ${manifest.plugin_id} ${manifest.version} ${s.dim(`(${report.form}, ${manifest.shape})`)}`;
  const size = manifestOnly ? 'a lone manifest' : `${pkg.source.kind}, ${pkg.stats.entries} entries, ${humanBytes(pkg.stats.bytes)}`;
  out.line(`${failedCanary === undefined ? s.green('✓') : s.red('✗')} ${given}:${what}`);
  out.line(`  ${s.dim('checked')}  ${findings.checked.join(', ')} ${s.dim(`(${size})`)}`);
  if (manifestOnly) out.line(`  ${s.dim('note')}     a lone manifest has no executable to pin; validate the package directory for that`);
  if (findings.canary !== undefined) out.line(`  ${s.dim('canary')}   ${canarySummary(findings.canary, s)}`);
  if (failedCanary !== undefined) {
    out.note(`${out.errStyle.yellow('hint')}: ${failedCanary.hint}`);
    return EXIT_CODES.runtime;
  }
  const skipped = findings.skipped[0];
  if (skipped !== undefined) {
    out.line(`  ${s.yellow('skipped')}  ${findings.skipped.map((k) => k.check).join(', ')}: ${skipped.code}: ${skipped.reason}`);
    out.line(`  ${s.dim('note')}     these checks need the OS sandbox; exit code ${EXIT_CODES.checksSkipped} (--strict fails instead)`);
    return EXIT_CODES.checksSkipped;
  }
  return EXIT_CODES.ok;
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
