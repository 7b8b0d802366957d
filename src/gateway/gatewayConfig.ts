/**
 * The gateway's configuration file (`etc/schemas/gateway-config.schema.json`):
 * read, checked against the schema, and turned into host and gateway options,
 * with bearer tokens read from their sources.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import schema from '../../etc/schemas/gateway-config.schema.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import type { PluginHostOptions } from '../host/PluginHost.js';
import type { ManifestPreset } from '../manifest/ManifestValidator.js';
import type { SandboxBackendChoice } from '../sandbox/backendChoice.js';
import { DEFAULT_SECRET_PATHS } from '../sandbox/secretLocations.js';
import type { RiskClass } from '../manifest/model.js';
import { AUDIT_DEFAULTS } from '../audit/auditLines.js';
import type { AuditFsyncPolicy } from '../audit/JsonlAuditSink.js';
import type { GatewayHttpClient } from './httpListener.js';
import type { GatewayOptions } from './serveGateway.js';
import { readTokenFile, weakToken } from './tokenFile.js';

/** Where a bearer token is read: an environment variable or a file's first line. */
export type GatewayTokenSource = { readonly env: string } | { readonly file: string };

/** An HTTP client of the configuration file. */
export interface GatewayConfigClient {
  /** A name for it. */
  readonly name: string;
  /** Where its token is read. */
  readonly token: GatewayTokenSource;
  /** Its risk ceiling. */
  readonly maxRisk?: RiskClass;
  /** Plugin ids and op ids it is offered. */
  readonly allow?: readonly string[];
  /** Plugin ids and op ids it is never offered. */
  readonly deny?: readonly string[];
}

/** The configuration file of `mcp-plugin-host serve`, as its schema describes it. */
export interface GatewayConfig {
  /** The profile name. */
  readonly profile?: string;
  /** The profile directory. */
  readonly profileDir?: string;
  /** The application name. */
  readonly appName?: string;
  /** Whether the profile is a dev profile. */
  readonly dev?: boolean;
  /** The manifest preset. */
  readonly preset?: ManifestPreset;
  /** The Linux sandbox backend (`--sandbox`). */
  readonly sandbox?: SandboxBackendChoice;
  /** Time a plugin may stay silent during a call, in ms. */
  readonly timeoutMs?: number;
  /** Follow plugins other processes install, upgrade or remove, without restarting (`PluginHostOptions.hotReload`). */
  readonly hotReload?: boolean;
  /** `stdio` (default) or `http`. */
  readonly transport?: 'stdio' | 'http';
  /** The server name announced to clients. */
  readonly name?: string;
  /** The risk ceiling of the stdio client and the default token. */
  readonly maxRisk?: RiskClass;
  /** What the stdio client and the default token are offered. */
  readonly allow?: readonly string[];
  /** What they are never offered. */
  readonly deny?: readonly string[];
  /** How often the catalog is read again, in ms. */
  readonly catalogPollMs?: number;
  /** Resource subscriptions one client may hold at once. */
  readonly maxSubscriptionsPerClient?: number;
  /** Plugins' requests one client may have waiting for its answer at once. */
  readonly maxPendingRequestsPerClient?: number;
  /** The HTTP transport. */
  readonly http?: GatewayConfigHttp;
  /** The audit file. */
  readonly audit?: GatewayConfigAudit;
}

/** The `audit` section of the configuration file: where `serve` appends an audit record per call. */
export interface GatewayConfigAudit {
  /** The JSONL file (a relative path is read from the configuration file's directory). */
  readonly file: string;
  /** Record each call's arguments, secret fields redacted. */
  readonly arguments?: boolean;
  /** More argument field names whose values are redacted. */
  readonly secretFields?: readonly string[];
  /** When the file is synced: after every batch of records (default), or only when the gateway stops. */
  readonly fsync?: AuditFsyncPolicy;
  /** The live file's bound in bytes before it is rotated to `<file>.1` (default 64 MiB). */
  readonly maxFileBytes?: number;
  /** Rotated files kept, `<file>.1` to `<file>.<keepFiles>` (default 4). */
  readonly keepFiles?: number;
}

/** The `http` section of the configuration file. */
export interface GatewayConfigHttp {
  /** The address to listen on. */
  readonly host?: string;
  /** The port; 0 picks a free one. */
  readonly port?: number;
  /** Where the default bearer token is read; without it one is generated. */
  readonly token?: GatewayTokenSource;
  /** Origins accepted besides loopback ones. */
  readonly allowedOrigins?: readonly string[];
  /** Clients with their own tokens, ceilings and filters. */
  readonly clients?: readonly GatewayConfigClient[];
  /** MCP sessions open at once. */
  readonly maxSessions?: number;
  /** Time a session may stay idle before it is closed, in ms. */
  readonly sessionIdleMs?: number;
  /** HTTP connections open at once. */
  readonly maxConnections?: number;
  /** Bytes of request bodies held at once, all clients together. */
  readonly maxBodyBytesInFlight?: number;
}

/** What a configuration resolves to: how to open the host, and how to serve it. */
export interface ResolvedGatewayConfig {
  /** Options for `PluginHost.open`. */
  readonly host: PluginHostOptions;
  /** Options for `serveGateway`. */
  readonly gateway: GatewayOptions;
  /** The audit file to open for the host, when the configuration names one. */
  readonly audit?: GatewayConfigAudit;
  /** What a person should fix but the gateway accepts: a token file other users can read. */
  readonly warnings: readonly string[];
}

let validate: ReturnType<Ajv2020['compile']> | undefined;

function invalidConfig(where: string, message: string, cause?: unknown): HostError {
  return hostError('HOST_INVALID_OPTIONS', `gateway configuration ${where}: ${message}`, { ...(cause === undefined ? {} : { cause }), details: { option: 'config' } });
}

/** Checks a parsed configuration against the shipped schema. */
export function checkGatewayConfig(value: unknown, where = '(inline)'): Result<GatewayConfig, HostError> {
  validate ??= new Ajv2020({ allErrors: true, strict: false }).compile(schema);
  if (validate(value)) return ok(value as GatewayConfig);
  const first = validate.errors?.[0];
  return err(invalidConfig(where, `${first?.instancePath === '' || first === undefined ? '/' : first.instancePath} ${first?.message ?? 'is invalid'}`));
}

/** Reads and checks a configuration file; a relative `profileDir` is read from the file's directory. */
export function readGatewayConfig(path: string): ResultAsync<GatewayConfig, HostError> {
  return ResultAsync.fromPromise(readFile(path, 'utf8'), (cause) => invalidConfig(path, 'cannot be read', cause))
    .andThen((text) => {
      try {
        return okAsync(JSON.parse(text) as unknown);
      } catch (cause) {
        return errAsync(invalidConfig(path, 'is not JSON', cause));
      }
    })
    .andThen((value) => checkGatewayConfig(value, path))
    .map((config) => (config.profileDir === undefined ? config : { ...config, profileDir: resolve(dirname(path), config.profileDir) }))
    .map((config) => (config.audit === undefined ? config : { ...config, audit: { ...config.audit, file: resolve(dirname(path), config.audit.file) } }));
}

function readToken(source: GatewayTokenSource, env: Readonly<Record<string, string | undefined>>, warnings: string[]): ResultAsync<string, HostError> {
  const checked = (token: string | undefined, from: string): ResultAsync<string, HostError> => {
    const weak = weakToken(token);
    return weak === undefined && token !== undefined ? okAsync(token) : errAsync(invalidConfig(from, weak ?? 'is empty'));
  };
  if ('env' in source) return checked(env[source.env], `token env ${source.env}`);
  const where = `token file ${source.file}`;
  return ResultAsync.fromPromise(readTokenFile(source.file, warnings), (cause) => invalidConfig(where, 'cannot be read', cause)).andThen((text) =>
    text.isErr() ? errAsync(invalidConfig(where, text.error)) : checked(text.value.split('\n')[0]?.trim(), where),
  );
}

/**
 * The files the gateway reads its bearer tokens from and writes its audit to,
 * as absolute paths. On a host that is not root every plugin runs as the
 * host's own user, so one of them inside a tree the sandbox mounts (a service
 * account's `/etc/mcp-gateway/token`) would be readable by every plugin, and a
 * networked plugin could call the gateway with its token (review R11 F3).
 */
function gatewayFiles(config: GatewayConfig): string[] {
  const sources = [config.http?.token, ...(config.http?.clients ?? []).map((client) => client.token)];
  const tokenFiles = sources.flatMap((source) => (source !== undefined && 'file' in source ? [source.file] : []));
  // The audit file's rotated copies hold the same records (those already there when a plugin starts: docs/gateway.md).
  const audit = config.audit;
  const auditFiles = audit === undefined ? [] : [audit.file, ...Array.from({ length: audit.keepFiles ?? AUDIT_DEFAULTS.keepFiles }, (_, n) => `${audit.file}.${n + 1}`)];
  return [...tokenFiles, ...auditFiles].map((file) => resolve(file));
}

/**
 * Turns a checked configuration into host and gateway options, reading every
 * token from its source. The host's plugins are kept from the gateway's own
 * files: every token file and the audit file are hidden from them beside the
 * default secret locations (`sandbox.secretPaths`).
 */
export function resolveGatewayConfig(config: GatewayConfig, env: Readonly<Record<string, string | undefined>>): ResultAsync<ResolvedGatewayConfig, HostError> {
  const host: PluginHostOptions = {
    ...(config.profile === undefined ? {} : { profile: config.profile }),
    ...(config.profileDir === undefined ? {} : { profileDir: config.profileDir }),
    ...(config.appName === undefined ? {} : { appName: config.appName }),
    ...(config.dev === true ? { profileKind: 'dev' as const } : {}),
    ...(config.preset === undefined ? {} : { preset: config.preset }),
    sandbox: { ...(config.sandbox === undefined ? {} : { backend: config.sandbox }), secretPaths: [...DEFAULT_SECRET_PATHS, ...gatewayFiles(config)] },
    ...(config.timeoutMs === undefined ? {} : { callTimeoutMs: config.timeoutMs }),
    ...(config.hotReload === true ? { hotReload: {} } : {}),
  };
  const policy = {
    ...(config.maxRisk === undefined ? {} : { maxRisk: config.maxRisk }),
    ...(config.allow === undefined ? {} : { allow: config.allow }),
    ...(config.deny === undefined ? {} : { deny: config.deny }),
  };
  const base: GatewayOptions = {
    policy,
    ...(config.name === undefined ? {} : { name: config.name }),
    ...(config.catalogPollMs === undefined ? {} : { catalogPollMs: config.catalogPollMs }),
    ...(config.maxSubscriptionsPerClient === undefined ? {} : { maxSubscriptionsPerClient: config.maxSubscriptionsPerClient }),
    ...(config.maxPendingRequestsPerClient === undefined ? {} : { maxPendingRequestsPerClient: config.maxPendingRequestsPerClient }),
  };
  const http = config.http ?? {};
  const audit = config.audit === undefined ? {} : { audit: config.audit };
  if (config.transport !== 'http') return okAsync({ host, gateway: { ...base, stdio: true }, ...audit, warnings: [] });
  const warnings: string[] = [];
  const defaultToken = http.token === undefined ? okAsync<string | undefined, HostError>(undefined) : readToken(http.token, env, warnings);
  const clients = ResultAsync.combine(
    (http.clients ?? []).map((c) =>
      readToken(c.token, env, warnings).map(
        (token): GatewayHttpClient => ({
          name: c.name,
          token,
          ...('file' in c.token ? { tokenFile: c.token.file } : {}),
          policy: { ...(c.maxRisk === undefined ? {} : { maxRisk: c.maxRisk }), ...(c.allow === undefined ? {} : { allow: c.allow }), ...(c.deny === undefined ? {} : { deny: c.deny }) },
        }),
      ),
    ),
  );
  return ResultAsync.combine([defaultToken, clients] as const).map(([token, resolvedClients]) => ({
    host,
    ...audit,
    warnings,
    gateway: {
      ...base,
      http: {
        ...(http.host === undefined ? {} : { host: http.host }),
        ...(http.port === undefined ? {} : { port: http.port }),
        ...(token === undefined ? {} : { token }),
        ...(http.token !== undefined && 'file' in http.token ? { tokenFile: http.token.file } : {}),
        ...(http.allowedOrigins === undefined ? {} : { allowedOrigins: http.allowedOrigins }),
        ...(http.maxSessions === undefined ? {} : { maxSessions: http.maxSessions }),
        ...(http.sessionIdleMs === undefined ? {} : { sessionIdleMs: http.sessionIdleMs }),
        ...(http.maxConnections === undefined ? {} : { maxConnections: http.maxConnections }),
        ...(http.maxBodyBytesInFlight === undefined ? {} : { maxBodyBytesInFlight: http.maxBodyBytesInFlight }),
        clients: resolvedClients,
      },
    },
  }));
}
