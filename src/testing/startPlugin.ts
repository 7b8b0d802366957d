import { AssertionError } from 'node:assert';
import { errAsync, ResultAsync, type Result } from 'neverthrow';
import {
  PluginHost,
  type CanaryOptions,
  type CanaryOutcome,
  type HostCallOptions,
  type HostError,
  type InstallOutcome,
  type ManifestPreset,
  type PluginHostOptions,
  type PluginInfo,
  type ProfileKind,
  type SandboxSpawnerOptions,
  type CallResult,
  type ToolDescriptor,
} from '../index.js';
import { describeFailure } from './assertions.js';
import { makeScratchDir, MemorySecretStore, removeScratchDir } from './scratchProfile.js';

/** Options of {@link startPlugin}. */
export interface StartPluginOptions {
  /** The kind of profile to install into. Default `dev` (local directories accepted). */
  readonly profileKind?: ProfileKind;
  /** The host preset. Default `neutral`. */
  readonly preset?: ManifestPreset;
  /** Sandbox options; the real OS sandbox runs unless they say otherwise. */
  readonly sandbox?: SandboxSpawnerOptions;
  /** The environment the plugin's `env_allow` names are read from. Default: none at all, so tests do not depend on the developer's shell. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Credential values by `needs_user_creds` name, held in memory for this profile only. */
  readonly credentials?: Readonly<Record<string, string>>;
  /** Per-call timeout. Default the host's (30 s). */
  readonly callTimeoutMs?: number;
  /** Capabilities granted to a handshake-shape plugin. */
  readonly handshakeCapabilities?: readonly string[];
}

/**
 * A plugin installed in a throwaway profile and running under a real
 * `PluginHost`: what a plugin author's tests talk to. Only
 * {@link startPlugin} makes one (the kit exports the type alone, so no
 * caller can construct a handle without a plugin behind it). Close it to
 * stop the plugin and delete the profile.
 */
export class PluginUnderTest {
  /** @internal */
  constructor(
    /** The host the plugin runs under, for anything this handle does not wrap. */
    readonly host: PluginHost,
    /** The installed plugin's id. */
    readonly pluginId: string,
    /** The throwaway profile directory. */
    readonly profileDir: string,
  ) {}

  /**
   * Calls one of the plugin's tools by its unprefixed name. Unlike a
   * production host, every risk class is accepted and `high_stakes_write`
   * calls are confirmed, unless `options` says otherwise. The result is
   * `PluginHost.call`'s own, so `shape` narrows `value` (an MCP
   * `CallToolResult` for `mcp-plugin` and `esm-module`) without a cast.
   */
  call(tool: string, args: unknown = {}, options: HostCallOptions = {}): ResultAsync<CallResult, HostError> {
    return this.host.call(`plug.${this.pluginId}.${tool}`, args, { maxRisk: 'destructive', confirm: () => true, ...options });
  }

  /** The inventory view: status, enforced sandbox policy, pinned executable. */
  info(): ResultAsync<PluginInfo, HostError> {
    return this.host.info(this.pluginId);
  }

  /** Runs the plugin's canary: passive (start and list tools) by default, `live` calls the declared canary tool. */
  canary(options: CanaryOptions = {}): ResultAsync<CanaryOutcome, HostError> {
    return this.host.canary(this.pluginId, options);
  }

  /** The tools the plugin lists when started (for ndjson-rpc, which has no discovery, the declared ones). */
  listTools(): ResultAsync<readonly ToolDescriptor[], HostError> {
    return this.host.tools(this.pluginId);
  }

  /**
   * Checks that the tools the plugin lists are exactly the tools its manifest
   * declares, as the host does before every call; throws an `AssertionError`
   * naming the undeclared and the missing tools otherwise.
   */
  async expectToolsMatchManifest(): Promise<readonly ToolDescriptor[]> {
    const listed = await this.listTools();
    if (listed.isOk()) return listed.value;
    const { code, details } = listed.error;
    if (code !== 'PLUGIN_TOOLS_MISMATCH') throw new AssertionError({ message: `the plugin did not list its tools: ${describeFailure(listed.error)}` });
    const undeclared = (details.undeclared ?? []) as readonly string[];
    const missing = (details.missing ?? []) as readonly string[];
    throw new AssertionError({
      message: `PLUGIN_TOOLS_MISMATCH: the plugin lists undeclared tools [${undeclared.join(', ')}] and misses declared tools [${missing.join(', ')}]`,
      actual: { undeclared },
      expected: { missing: [] },
      operator: 'expectToolsMatchManifest',
    });
  }


  /** Stops the plugin (its whole process tree) and deletes the throwaway profile. */
  async close(): Promise<void> {
    await this.host.close();
    await removeScratchDir(this.profileDir);
  }
}

/**
 * Installs the plugin in `dir` into a throwaway profile and opens a host on
 * it, reopened after the install as a real host would be, so the plugin is
 * active and its first call starts it inside the real sandbox.
 */
export function startPlugin(dir: string, options: StartPluginOptions = {}): ResultAsync<PluginUnderTest, HostError> {
  const secrets = new MemorySecretStore(options.credentials ?? {});
  const env = options.env ?? {};
  return makeScratchDir().andThen((profileDir) => {
    const hostOptions: PluginHostOptions = {
      profileDir,
      profileKind: options.profileKind ?? 'dev',
      secretStore: secrets,
      env,
      ...(options.preset === undefined ? {} : { preset: options.preset }),
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
      ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs }),
    };
    const installed = PluginHost.open(hostOptions).andThen(
      (first) =>
        new ResultAsync(
          (async (): Promise<Result<InstallOutcome, HostError>> => {
            const outcome = await first.install(dir, { canary: false });
            await first.close();
            return outcome;
          })(),
        ),
    );
    return installed
      .andThen(({ plugin }) => {
        const pluginId = plugin.name;
        const handshakeCapabilities = options.handshakeCapabilities ?? [];
        return PluginHost.open({ ...hostOptions, handshakeCapabilities: { [pluginId]: handshakeCapabilities } }).map(
          (host) => new PluginUnderTest(host, pluginId, profileDir),
        );
      })
      .orElse((error) => ResultAsync.fromSafePromise(removeScratchDir(profileDir)).andThen(() => errAsync<PluginUnderTest, HostError>(error)));
  });
}

