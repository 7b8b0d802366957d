import { errAsync, ResultAsync } from 'neverthrow';
import {
  PluginHost,
  type CheckStage,
  type HostError,
  type HostErrorCode,
  type ManifestPreset,
  type ProfileKind,
  type SandboxSpawnerOptions,
} from '../index.js';
import { missingExecutableMessage } from '../installer/manifestHostChecks.js';
import { makeScratchDir, removeScratchDir } from './scratchProfile.js';

/** Options of {@link validatePluginDir}. */
export interface ValidatePluginDirOptions {
  /** The host preset to validate under (`gum` accepts only `mcp-plugin`). Default `neutral`. */
  readonly preset?: ManifestPreset;
  /** The kind of profile the plugin will be installed into. Default `dev` (local directories accepted). */
  readonly profileKind?: ProfileKind;
  /**
   * After the manifest checks pass, also install into the scratch profile, so
   * that what only an install finds (executable binding, the catalog
   * transaction) is reported too. Default true.
   */
  readonly install?: boolean;
  /** Sandbox options for the scratch host. */
  readonly sandbox?: SandboxSpawnerOptions;
  /**
   * Where no enforcing sandbox can be created, fail with
   * PLUGIN_SANDBOX_UNSUPPORTED instead of running the static checks alone
   * and listing the sandboxed ones in {@link PluginDirReport.skipped}. Default false.
   */
  readonly strict?: boolean;
}

/** A check {@link validatePluginDir} did not run, and why. */
export interface PluginDirSkippedCheck {
  /** The check: `install` (executable binding, catalog transaction). */
  readonly check: 'install';
  /** Why: the code of the sandbox failure (PLUGIN_SANDBOX_UNSUPPORTED). */
  readonly code: HostErrorCode;
  /** The sandbox failure's message. */
  readonly reason: string;
}

/** One problem found in a plugin directory. */
export interface PluginDirViolation {
  /** The stable code the host would give. */
  readonly code: HostErrorCode;
  /** JSON pointer into the manifest; `""` for the whole package. */
  readonly pointer: string;
  /** What is wrong, for people. */
  readonly message: string;
  /** The check that found it: a manifest check stage, `package` (reading the package) or `install`. */
  readonly stage: CheckStage | 'package' | 'install';
}

/** What {@link validatePluginDir} found. */
export interface PluginDirReport {
  /** Whether the host would install the plugin as it is. */
  readonly ok: boolean;
  /** The manifest file that was read, when one was found. */
  readonly manifestFile?: string;
  /** The plugin id, when the manifest was valid enough to tell. */
  readonly pluginId?: string;
  /** Every problem, in the host's check order. */
  readonly violations: readonly PluginDirViolation[];
  /** Checks that need the OS sandbox and were skipped because this machine has none; empty when every check ran. */
  readonly skipped: readonly PluginDirSkippedCheck[];
}

const fromError = (error: HostError, stage: 'package' | 'install'): PluginDirViolation => ({
  code: error.code,
  pointer: typeof error.details.pointer === 'string' ? error.details.pointer : '',
  message: error.message,
  stage,
});

/**
 * Runs every check the host runs on a plugin directory, on a scratch profile
 * that is deleted afterwards, and reports each violation with the code,
 * JSON pointer and message the host would give. Where this machine has no
 * enforcing sandbox, a dev scratch host without one runs the static checks
 * (it only reads the package) and the install is listed in `skipped`, never
 * run unconfined. `err` only when the scratch host itself cannot be set up
 * (no temp directory; no sandbox with `strict` or a standard profile).
 */
export function validatePluginDir(dir: string, options: ValidatePluginDirOptions = {}): ResultAsync<PluginDirReport, HostError> {
  const hostOptions = {
    profileKind: options.profileKind ?? 'dev',
    ...(options.preset === undefined ? {} : { preset: options.preset }),
  } as const;
  return makeScratchDir().andThen((profileDir) =>
    PluginHost.open({ profileDir, ...hostOptions, ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }) })
      .map((host) => ({ host, sandboxMissing: undefined as HostError | undefined }))
      .orElse((error) =>
        error.code !== 'PLUGIN_SANDBOX_UNSUPPORTED' || options.strict === true || hostOptions.profileKind !== 'dev'
          ? errAsync(error)
          : PluginHost.open({ profileDir, ...hostOptions, sandbox: { dangerouslyRunUnsandboxed: true } }).map((host) => ({ host, sandboxMissing: error })),
      )
      .andThen(({ host, sandboxMissing }) =>
        ResultAsync.fromSafePromise(inspectThenInstall(host, dir, options.install ?? true, sandboxMissing).finally(() => host.close())),
      )
      .andTee(() => removeScratchDir(profileDir))
      .orTee(() => removeScratchDir(profileDir)),
  );
}

async function inspectThenInstall(host: PluginHost, dir: string, install: boolean, sandboxMissing: HostError | undefined): Promise<PluginDirReport> {
  const inspected = await host.inspect(dir);
  if (inspected.isErr()) return { ok: false, violations: [fromError(inspected.error, 'package')], skipped: [] };
  const { report, package: pkg } = inspected.value;
  const violations: PluginDirViolation[] = report.violations.map((v) => ({ code: v.code, pointer: v.pointer, message: v.message, stage: v.stage }));
  const found = { manifestFile: pkg.manifestFile, ...(report.manifest === undefined ? {} : { pluginId: report.manifest.plugin_id }) };
  if (violations.length === 0) {
    const missing = await missingExecutableMessage(dir, report.manifest?.executable);
    if (missing !== undefined) violations.push({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', pointer: '/executable', message: missing, stage: 'install' });
  }
  if (violations.length > 0 || !install) return { ok: violations.length === 0, ...found, violations, skipped: [] };
  if (sandboxMissing !== undefined) {
    return { ok: true, ...found, violations: [], skipped: [{ check: 'install', code: sandboxMissing.code, reason: sandboxMissing.message }] };
  }
  const installed = await host.install(dir, { canary: false });
  if (installed.isErr()) return { ok: false, ...found, violations: [fromError(installed.error, 'install')], skipped: [] };
  return { ok: true, ...found, violations: [], skipped: [] };
}
