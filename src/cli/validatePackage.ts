import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { err, ok, type Result } from 'neverthrow';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PluginHost, describeErrorCode, type HostError, type PluginHostOptions } from '../index.js';
import { missingExecutableMessage } from '../installer/manifestHostChecks.js';
import { fail, hostOptions, packageOptions, type CommandContext } from './context.js';
import type { ExitCode } from './exitCodes.js';
import { violationsOf } from './Output.js';
import { printed, printValidation, type Findings } from './validateReport.js';

/** The check starting the plugin makes: its tool list against the manifest, or with --live its canary call. */
const startCheck = (live: boolean): string => (live ? 'canary (live)' : 'tool list');

/** Where a binding refusal points in the manifest. */
const INSTALL_POINTERS: Partial<Record<string, string>> = {
  PLUGIN_EXECUTABLE_UNTRUSTED: '/executable',
  PLUGIN_SHAPE_UNSUPPORTED: '/shape',
  PLUGIN_CHECKSUM_MISMATCH: '/package/checksum',
};

/**
 * `validate` of a package (a directory or an archive), or of a lone MCP Bundle
 * manifest, which only the installer reads: every install check, reported in
 * full, with nothing installed. The package is inspected against a scratch
 * profile (all manifest and host checks, every violation); when that is clean
 * and there is a real package (not a lone manifest), it is also installed
 * into the scratch profile, which pins the executable — the one check
 * inspection cannot do — and, with --canary, started. The scratch profile is
 * deleted afterwards.
 */
export async function validatePackage(ctx: CommandContext, given: string, kind: { readonly isDirectory: boolean; readonly manifestOnly: boolean }): Promise<ExitCode> {
  const { isDirectory, manifestOnly } = kind;
  const scratch = await mkdtemp(join(tmpdir(), 'mcp-plugin-host-validate-'));
  try {
    let source = given;
    if (manifestOnly) {
      source = join(scratch, 'package');
      await mkdir(source);
      await copyFile(given, join(source, 'manifest.json'));
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
    const missing = await missingExecutableMessage(given, report.manifest?.executable);
    if (missing !== undefined) findings.violations.push(printed({ pointer: '/executable', code: 'PLUGIN_EXECUTABLE_UNTRUSTED', message: missing, stage: 'executable_binding' }));
  }

  if (findings.violations.length === 0 && !manifestOnly && sandboxMissing !== undefined) {
    findings.skipped.push(...['executable binding', startCheck(flags.live)].map((check) => ({ check, code: sandboxMissing.code, reason: sandboxMissing.message })));
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
        listed.length > 0
          ? listed.map(printed)
          : [printed({ pointer: INSTALL_POINTERS[trial.error.code] ?? '', code: trial.error.code, message, stage: 'executable_binding', hint: trial.error.hint })];
    } else {
      findings.checked.push('executable binding');
      pluginId = trial.value.plugin.name;
      // Started whenever it can be: a tool list that differs from the manifest would fail every call, and only
      // the plugin itself can say what it lists.
      spinner.update(`starting ${pluginId}`);
      const canary = await host.canary(pluginId, { live: flags.live });
      if (canary.isErr()) {
        spinner.stop();
        return fail(ctx, canary.error, false, pluginId, { source: given });
      }
      findings.canary = canary.value;
      if (canary.value.status === 'skipped') {
        const why = canary.value.error;
        findings.skipped.push({ check: startCheck(flags.live), code: why?.code ?? 'PLUGIN_NEEDS_CONFIGURATION', reason: why?.message ?? 'the canary did not run' });
      } else {
        findings.checked.push(startCheck(flags.live));
      }
    }
  }
  spinner.stop();

  return printValidation(
    ctx,
    given,
    report,
    {
      kind: manifestOnly ? 'manifest' : pkg.source.kind,
      manifestFile: pkg.manifestFile,
      entries: pkg.stats.entries,
      bytes: pkg.stats.bytes,
      digest: pkg.digest,
      manifestPath: manifestOnly ? given : target.isDirectory ? join(given, pkg.manifestFile) : undefined,
    },
    findings,
  );
}
