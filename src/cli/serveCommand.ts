import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { okAsync, type ResultAsync } from 'neverthrow';
import { checkGatewayConfig, hostError, JsonlAuditSink, PluginHost, readGatewayConfig, resolveGatewayConfig, serveGateway, type GatewayConfig, type HostError } from '../index.js';
import type { Flags } from './args.js';
import { fail, isDevProfileName, missingProfileDirOf, profileFromEnvironment, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { usageFailure } from './usage.js';

/** The configuration keys the command-line flags set; a flag wins over the file's key. */
function flagConfig(flags: Flags): GatewayConfig {
  const http = {
    ...(flags.bind === undefined ? {} : { host: flags.bind }),
    ...(flags.port === undefined ? {} : { port: flags.port }),
    ...(flags.tokenEnv === undefined ? {} : { token: { env: flags.tokenEnv } }),
    ...(flags.tokenFile === undefined ? {} : { token: { file: flags.tokenFile } }),
    ...(flags.allowOrigins.length === 0 ? {} : { allowedOrigins: flags.allowOrigins }),
  };
  return {
    ...(flags.profile === undefined ? {} : { profile: flags.profile }),
    ...(flags.profileDir === undefined ? {} : { profileDir: flags.profileDir }),
    ...(flags.appName === undefined ? {} : { appName: flags.appName }),
    ...(flags.dev ? { dev: true } : {}),
    ...(flags.preset === undefined ? {} : { preset: flags.preset }),
    ...(flags.sandbox === undefined ? {} : { sandbox: flags.sandbox }),
    ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
    ...(flags.hotReload ? { hotReload: true } : {}),
    ...(flags.http ? { transport: 'http' as const } : {}),
    ...(flags.maxRisk === undefined ? {} : { maxRisk: flags.maxRisk }),
    ...(flags.allow.length === 0 ? {} : { allow: flags.allow }),
    ...(flags.deny.length === 0 ? {} : { deny: flags.deny }),
    ...(Object.keys(http).length === 0 ? {} : { http }),
  };
}

/**
 * The environment plugins' allowlisted variables are read from, without the
 * variables the gateway's bearer tokens come from: a plugin granted that name
 * would otherwise hold a token to the gateway that serves it.
 */
function withoutTokens(env: Readonly<Record<string, string | undefined>>, config: GatewayConfig): Record<string, string | undefined> {
  const sources = [config.http?.token, ...(config.http?.clients ?? []).map((client) => client.token)];
  const names = new Set(sources.flatMap((source) => (source !== undefined && 'env' in source ? [source.env] : [])));
  return Object.fromEntries(Object.entries(env).filter(([name]) => !names.has(name)));
}

function mergedConfig(flags: Flags): ResultAsync<GatewayConfig, HostError> {
  const fromFile = flags.config === undefined ? okAsync<GatewayConfig, HostError>({}) : readGatewayConfig(flags.config);
  const fromFlags = flagConfig(flags);
  return fromFile
    .andThen((file) => checkGatewayConfig({ ...file, ...fromFlags, ...(file.http === undefined && fromFlags.http === undefined ? {} : { http: { ...file.http, ...fromFlags.http } }) }, '(flags)'))
    .map(asEveryCommandPicksTheProfile);
}

/**
 * The profile as every other command picks it, below --profile and the
 * file's `profile`: GUM_PROFILE (a `GUM_PROFILE=work` shell served `default`
 * while `install` wrote to `work`), and a profile the contract names a dev
 * one (`dev`) is served as one, as `--dev` does.
 */
function asEveryCommandPicksTheProfile(config: GatewayConfig): GatewayConfig {
  const fromEnv = config.profile === undefined ? profileFromEnvironment() : undefined;
  const withProfile = fromEnv === undefined ? config : { ...config, profile: fromEnv };
  return withProfile.dev !== true && withProfile.profile !== undefined && isDevProfileName(withProfile.profile) ? { ...withProfile, dev: true } : withProfile;
}

/**
 * A profile whose directory does not exist is not served: an MCP client would
 * find no tools and no reason, and the host's open would create the directory
 * a mistyped --profile names. Exit 2, as any option that names nothing usable.
 */
function noProfileToServe(dir: string): HostError {
  return hostError('HOST_INVALID_OPTIONS', `the profile to serve has no directory (${dir})`, {
    details: { option: 'profileDir', profile_dir: dir, profile_exists: false },
    hint: 'serve does not create a profile. Check --profile, --profile-dir, GUM_PROFILE and the configuration file\'s profile and profileDir; install a plugin into the profile first, or create the directory to serve an empty profile.',
  });
}

/**
 * `serve`: opens the profile (one that exists: {@link noProfileToServe}) and
 * serves every active plugin as one MCP server until interrupted (or, over stdio, until the client closes stdin).
 * Over stdio, stdout carries MCP only; everything for people goes to stderr.
 */
export async function serveCommand(ctx: CommandContext): Promise<ExitCode> {
  const { flags, terminal } = ctx;
  if (flags.tokenEnv !== undefined && flags.tokenFile !== undefined) return usageFailure(ctx, 'give --token-env or --token-file, not both', 'serve');
  const merged = await mergedConfig(flags);
  if (merged.isErr()) return fail(ctx, merged.error, false);
  const resolved = await resolveGatewayConfig(merged.value, terminal.env);
  if (resolved.isErr()) return fail(ctx, resolved.error, false);
  const { host: hostOptions, gateway, audit, warnings } = resolved.value;
  const env = withoutTokens(terminal.env, merged.value);
  const missing = missingProfileDirOf({ ...hostOptions, env });
  if (missing.isErr()) return fail(ctx, missing.error, false);
  if (missing.value !== undefined) return fail(ctx, noProfileToServe(missing.value), false);
  for (const warning of warnings) terminal.stderr.write(`mcp-plugin-host: warning: ${warning}\n`);
  const { stdin, stdout } = terminal;
  let stdio: { readonly stdin: Readable; readonly stdout: Writable } | undefined;
  if (gateway.stdio !== undefined) {
    if (!(stdin instanceof Readable && stdout instanceof Writable)) return usageFailure(ctx, 'serving over stdio needs real stdin and stdout streams', 'serve');
    stdio = { stdin, stdout };
  }
  const sink =
    audit === undefined
      ? undefined
      : await JsonlAuditSink.open(audit.file, {
          ...(audit.fsync === undefined ? {} : { fsync: audit.fsync }),
          ...(audit.maxFileBytes === undefined ? {} : { maxFileBytes: audit.maxFileBytes }),
          ...(audit.keepFiles === undefined ? {} : { keepFiles: audit.keepFiles }),
        });
  if (sink?.isErr() === true) return fail(ctx, sink.error, false);
  const auditSink = sink?.isOk() === true ? sink.value : undefined;
  const auditOptions =
    auditSink === undefined || audit === undefined
      ? {}
      : { audit: { sink: auditSink, ...(audit.arguments === undefined ? {} : { arguments: audit.arguments }), ...(audit.secretFields === undefined ? {} : { secretFields: audit.secretFields }) } };
  const opened = await PluginHost.open({ ...hostOptions, env, ...auditOptions });
  if (opened.isErr()) {
    // The open's failure is the one to report; the empty audit file's close adds nothing.
    await auditSink?.close().unwrapOr(undefined);
    return fail(ctx, opened.error, false);
  }
  const host = opened.value;
  try {
    // What the HTTP side has to tell about token files (a rotated token, a file that cannot give one) is for the operator.
    const onNotice = (message: string): void => void terminal.stderr.write(`mcp-plugin-host: ${message}\n`);
    const withNotices = gateway.http === undefined ? gateway : { ...gateway, http: { ...gateway.http, onNotice } };
    const served = await serveGateway(host, stdio === undefined ? withNotices : { ...withNotices, stdio });
    if (served.isErr()) return fail(ctx, served.error, false);
    const handle = served.value;
    if (handle.url !== undefined) {
      terminal.stderr.write(`mcp-plugin-host gateway listening on ${handle.url}\n`);
      if (gateway.http?.token === undefined) terminal.stderr.write(`bearer token (shown once): ${handle.token ?? ''}\n`);
    }
    const ended: Promise<unknown>[] = [once(ctx.signal, 'abort')];
    if (stdio !== undefined) ended.push(once(stdio.stdin, 'end'));
    if (!ctx.signal.aborted) await Promise.race(ended);
    await handle.close();
    return EXIT_CODES.ok;
  } finally {
    await host.close();
    // After the host, so that the records of calls cut short by the close are kept.
    const closed = await auditSink?.close();
    if (closed?.isErr() === true) terminal.stderr.write(`mcp-plugin-host: the audit file was not fully written: ${closed.error.message}\n`);
  }
}
