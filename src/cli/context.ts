import { existsSync, lstatSync } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { hostError, PluginHost, type HostError, type HostInstallOptions, type PluginHostOptions } from '../index.js';
import cliProfile from '../../etc/cli-profile.json' with { type: 'json' };
import { nearest, type Flags } from './args.js';
import { EXIT_CODES, exitCodeFor, type ExitCode } from './exitCodes.js';
import type { Output, Terminal } from './Output.js';

/** What every command receives. */
export interface CommandContext {
  /** The parsed flags. */
  readonly flags: Flags;
  /** The command's positional arguments. */
  readonly positionals: readonly string[];
  /** Where results go. */
  readonly out: Output;
  /** The process surroundings. */
  readonly terminal: Terminal;
  /** Aborted when the user interrupts. */
  readonly signal: AbortSignal;
}

/** The profile the contract's profile variable (GUM_PROFILE) names, when it is set and not empty. */
export function profileFromEnvironment(): string | undefined {
  const fromEnv = process.env[cliProfile.environmentVariable];
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}

/** The profile name in effect: --profile, else the contract's profile variable (GUM_PROFILE), else `default`. */
export function profileName(flags: Flags): string {
  return flags.profile ?? profileFromEnvironment() ?? 'default';
}

/** Whether the contract names `profile` a dev profile (`dev`). */
export function isDevProfileName(profile: string): boolean {
  return cliProfile.devProfileNames.includes(profile);
}

/** Whether the profile in effect is a dev profile: --dev, or a profile the contract names as one (`dev`). */
function isDevProfile(flags: Flags): boolean {
  return flags.dev || isDevProfileName(profileName(flags));
}

const errnoOf = (cause: unknown): string | undefined => (cause as NodeJS.ErrnoException).code;

/**
 * Makes the missing levels of a `--profile-dir` one at a time, after walking
 * up to the nearest existing one (as many steps as the path has parts).
 * Node's recursive mkdir never returns for a path under /proc (it retries
 * ENOENT forever), so the host's own recursive mkdir must find it made.
 */
async function prepareProfileDir(given: string): Promise<Result<void, HostError>> {
  const refused = (message: string, cause?: unknown): Result<never, HostError> =>
    err(
      hostError('HOST_INVALID_OPTIONS', `--profile-dir ${given}: ${message}`, {
        ...(cause === undefined ? {} : { cause }),
        details: { option: 'profile-dir' },
        hint: 'Give --profile-dir a directory you can create and write, or leave it out for the default location.',
      }),
    );
  const missing: string[] = [];
  for (let level = resolve(given); ; level = dirname(level)) {
    try {
      if (!(await stat(level)).isDirectory()) return refused(`${level} is not a directory`);
      break;
    } catch (cause) {
      if (errnoOf(cause) !== 'ENOENT') return refused(`cannot read ${level} (${errnoOf(cause) ?? 'error'})`, cause);
      missing.unshift(level);
      if (dirname(level) === level) break;
    }
  }
  for (const level of missing) {
    try {
      await mkdir(level, { mode: 0o700 });
    } catch (cause) {
      if (errnoOf(cause) !== 'EEXIST') return refused(`cannot create ${level} (${errnoOf(cause) ?? 'error'})`, cause);
    }
  }
  return ok(undefined);
}

/**
 * The profile directory when it does not exist, else undefined; the flags'
 * profile, app name and directory are checked as PluginHost.open checks
 * them (a bad one is its HOST_INVALID_OPTIONS) and the directory resolved as
 * it resolves it. Only install (and wrap, validate) may create a profile: a
 * command that reads or changes what is installed there (list, info, tools,
 * run, remove, quarantine, reload, canary, setup, serve) must not create one
 * for a mistyped name, and opening a host makes the directory and its layout.
 */
export function missingProfileDir(flags: Flags): Result<string | undefined, HostError> {
  const location = {
    profile: profileName(flags),
    ...(flags.appName === undefined ? {} : { appName: flags.appName }),
    ...(flags.profileDir === undefined ? {} : { profileDir: flags.profileDir }),
  };
  return missingProfileDirOf(location);
}

/** The directory `options` open a profile in when it does not exist, else undefined ({@link missingProfileDir} for host options). */
export function missingProfileDirOf(options: PluginHostOptions): Result<string | undefined, HostError> {
  return PluginHost.profileDirFor(options).map((profileDir) => {
    const dir = resolve(profileDir);
    // Only a directory that is not there is "no profile"; anything else (EACCES, ENOTDIR) is left to the host's own open.
    try {
      lstatSync(dir);
      return undefined;
    } catch (cause) {
      return errnoOf(cause) === 'ENOENT' ? dir : undefined;
    }
  });
}

/**
 * PLUGIN_NOT_FOUND for a plugin asked of a profile whose directory does not
 * exist: nothing is installed there, and the hint names where the CLI looked.
 */
export function notInMissingProfile(flags: Flags, pluginId: string, dir: string): HostError {
  return hostError('PLUGIN_NOT_FOUND', `plugin '${pluginId}' is not installed: profile ${profileName(flags)} has no directory (${dir})`, {
    details: { plugin_id: pluginId, profile_dir: dir, profile_exists: false },
    hint: 'Nothing is installed in a profile whose directory does not exist, and a command about an installed plugin does not create it (only install does). Check --profile, --profile-dir and GUM_PROFILE, or install into it first.',
  });
}

/** The `withoutProfile` of a command about one installed plugin: {@link notInMissingProfile}, printed. */
export function failInMissingProfile(ctx: CommandContext, pluginId: string): (dir: string) => ExitCode {
  return (dir) => fail(ctx, notInMissingProfile(ctx.flags, pluginId, dir), false, pluginId);
}

/** PluginHost options from the global flags; `overrides` win. */
export async function hostOptions(flags: Flags, overrides: PluginHostOptions = {}): Promise<Result<PluginHostOptions, HostError>> {
  if (flags.profileDir !== undefined && overrides.profileDir === undefined) {
    const prepared = await prepareProfileDir(flags.profileDir);
    if (prepared.isErr()) return err(prepared.error);
  }
  const keys: string[] = [];
  for (const key of flags.trustedKeys) {
    // A key is given inline (PEM or base64) or as a file holding one.
    if (!key.includes('\n') && existsSync(key)) {
      try {
        keys.push(await readFile(key, 'utf8'));
      } catch (cause) {
        return err(hostError('HOST_INVALID_OPTIONS', `--trusted-key ${key}: cannot read the file`, { cause, details: { option: 'trusted-key' } }));
      }
    } else {
      keys.push(key);
    }
  }
  return ok({
    profile: profileName(flags),
    profileKind: isDevProfile(flags) ? 'dev' : 'standard',
    ...(flags.appName === undefined ? {} : { appName: flags.appName }),
    ...(flags.profileDir === undefined ? {} : { profileDir: flags.profileDir }),
    ...(flags.preset === undefined ? {} : { preset: flags.preset }),
    ...(flags.sandbox === undefined ? {} : { sandbox: { backend: flags.sandbox } }),
    ...(keys.length === 0 ? {} : { trustedKeys: keys }),
    ...(flags.requireSignatures ? { requireSignatures: true } : {}),
    ...(flags.timeoutMs === undefined ? {} : { callTimeoutMs: flags.timeoutMs }),
    ...(flags.packageLimits === undefined ? {} : { packageLimits: flags.packageLimits }),
    // Only the registry: the token and the npm program stay the library's options (a token on the command line would be in ps).
    ...(flags.registry === undefined ? {} : { npm: { registry: flags.registry } }),
    ...overrides,
  });
}

/** Install options (checksum, signature file, namespace override) from the flags. */
export async function packageOptions(flags: Flags): Promise<Result<Omit<HostInstallOptions, 'canary'>, HostError>> {
  let signature: string | undefined;
  if (flags.signature !== undefined) {
    try {
      signature = (await readFile(flags.signature, 'utf8')).trim();
    } catch (cause) {
      return err(hostError('HOST_INVALID_OPTIONS', `--signature ${flags.signature}: cannot read the file`, { cause, details: { option: 'signature' } }));
    }
  }
  return ok({
    ...(flags.checksum === undefined ? {} : { checksum: flags.checksum }),
    ...(signature === undefined ? {} : { signature }),
    ...(flags.devAllowNamespaceConflict ? { devAllowNamespaceConflict: true } : {}),
  });
}

/**
 * Opens a host, runs `body`, and always closes the host (stopping every
 * plugin process tree), however `body` ends. With `readsCatalogOnly` the
 * sandbox is proved at the first spawn instead of at open.
 */
export async function withHost(
  ctx: CommandContext,
  body: (host: PluginHost) => Promise<ExitCode>,
  options: {
    readonly overrides?: PluginHostOptions;
    readonly checkingPackage?: boolean;
    readonly readsCatalogOnly?: boolean;
    /**
     * For a command that must not make a profile (all but install, wrap and
     * validate): run instead of opening a host when the profile directory does
     * not exist, so a mistyped --profile creates nothing.
     */
    readonly withoutProfile?: (dir: string) => ExitCode | Promise<ExitCode>;
  } = {},
): Promise<ExitCode> {
  if (options.withoutProfile !== undefined && options.overrides?.profileDir === undefined) {
    const missing = missingProfileDir(ctx.flags);
    if (missing.isErr()) return fail(ctx, missing.error, options.checkingPackage ?? false);
    if (missing.value !== undefined) return options.withoutProfile(missing.value);
  }
  // A command that never starts a plugin does not wait for the sandbox probe, and works where no sandbox exists.
  const deferProof = (o: PluginHostOptions): PluginHostOptions => (options.readsCatalogOnly === true ? { ...o, sandbox: { proveAt: 'first_spawn', ...o.sandbox } } : o);
  const opened = await (await hostOptions(ctx.flags, options.overrides)).asyncAndThen((o) => PluginHost.open(deferProof(o)));
  if (opened.isErr()) return fail(ctx, opened.error, options.checkingPackage ?? false);
  const host = opened.value;
  try {
    return await body(host);
  } finally {
    await host.close();
  }
}

/** Prints a failure and returns its exit code. */
export function fail(ctx: CommandContext, error: HostError, checkingPackage: boolean, pluginId?: string, extra?: Readonly<Record<string, unknown>>, meant?: string): ExitCode {
  ctx.out.failure(error, pluginId, extra, meant);
  return ctx.signal.aborted ? EXIT_CODES.interrupted : exitCodeFor(error, checkingPackage);
}

/**
 * {@link fail}, with a did-you-mean when the plugin or the tool was not found:
 * the installed plugin nearest `pluginId`, or the nearest of its tools when
 * the plugin is there and `tool` is not.
 */
export async function failNaming(
  ctx: CommandContext,
  host: PluginHost,
  error: HostError,
  names: { readonly pluginId: string; readonly tool?: string },
  extra?: Readonly<Record<string, unknown>>,
): Promise<ExitCode> {
  return fail(ctx, error, false, names.pluginId, extra, await nearestName(host, error, names));
}

async function nearestName(host: PluginHost, error: HostError, names: { readonly pluginId: string; readonly tool?: string }): Promise<string | undefined> {
  if (error.code !== 'PLUGIN_NOT_FOUND' && error.code !== 'VARIANT_NOT_FOUND') return undefined;
  const info = await host.info(names.pluginId);
  if (info.isErr()) {
    const rows = await host.list();
    return rows.isErr() ? undefined : nearest(names.pluginId, rows.value.map((r) => r.name));
  }
  if (names.tool === undefined) return undefined;
  const tool = nearest(names.tool, info.value.operations.map((o) => o.tool_name));
  return tool === undefined ? undefined : `${names.pluginId} ${tool}`;
}
