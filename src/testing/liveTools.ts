/**
 * Reads the tools an installed plugin actually offers, launching it exactly
 * as PluginHost does (binding re-verified, same sandbox policy, same
 * environment rules), because the host facade has no call that returns the
 * live tool list.
 */
import { mkdir } from 'node:fs/promises';
import { errAsync, okAsync, ResultAsync, type Result } from 'neverthrow';
import {
  CatalogStore,
  EnvDenylist,
  HandshakeSession,
  McpSession,
  ProfileLayout,
  SandboxSpawner,
  hostError,
  lookupPlugin,
  resolveWriteDir,
  verifyExecutableBinding,
  type HostError,
  type InstalledPlugin,
  type ManifestPreset,
  type PluginProcess,
  type PluginSession,
  type ProcessLauncher,
  type ProfileKind,
  type SandboxSpawnerOptions,
  type SecretStore,
  type ToolDescriptor,
} from '../index.js';

/** What is needed to launch a plugin of a scratch profile the way its host does. */
export interface LiveToolsContext {
  readonly profileDir: string;
  readonly pluginId: string;
  readonly profileKind: ProfileKind;
  readonly preset: ManifestPreset;
  readonly sandbox: SandboxSpawnerOptions | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly secrets: SecretStore;
  readonly handshakeCapabilities: readonly string[];
}

function installedPlugin(ctx: Pick<LiveToolsContext, 'profileDir' | 'pluginId'>): ResultAsync<InstalledPlugin, HostError> {
  return CatalogStore.open({ profileDir: ctx.profileDir, profile: 'default' })
    .andThen((store) => store.snapshot())
    .andThen((snapshot) => {
      const plugin = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: ctx.pluginId });
      return plugin === undefined
        ? errAsync(hostError('PLUGIN_NOT_FOUND', `plugin '${ctx.pluginId}' is not installed in the scratch profile`))
        : okAsync(plugin);
    });
}

function launcher(ctx: LiveToolsContext, plugin: InstalledPlugin, spawner: SandboxSpawner): ProcessLauncher {
  const layout = new ProfileLayout(ctx.profileDir);
  const caps = plugin.descriptor?.capabilities ?? { network: false, fs_write_dir: '', env_allow: [] };
  const dataDir = layout.dataDir(plugin.plugin_id);
  return (): ResultAsync<PluginProcess, HostError> => {
    const writeDir = resolveWriteDir(dataDir, caps.fs_write_dir);
    if (writeDir.isErr()) return errAsync(writeDir.error);
    const denylist = EnvDenylist.create({ preset: ctx.preset });
    if (denylist.isErr()) return errAsync(denylist.error);
    return ResultAsync.fromPromise(mkdir(writeDir.value, { recursive: true, mode: 0o700 }), (cause) =>
      hostError('HOST_IO_ERROR', `cannot create the data directory of '${plugin.plugin_id}'`, { cause }),
    )
      .andThen(() => ctx.secrets.get(plugin.plugin_id))
      .andThen((credentials) =>
        denylist.value.buildEnv({
          parentEnv: ctx.env,
          envAllow: caps.env_allow,
          credentials: Object.fromEntries(Object.entries(credentials).filter(([k]) => (plugin.descriptor?.needs_user_creds ?? []).includes(k))),
          fixed: { HOME: dataDir, TMPDIR: writeDir.value },
          pluginId: plugin.plugin_id,
        }),
      )
      .andThen((env) =>
        verifyExecutableBinding(plugin.lock.binding, { copyDir: layout.execDir }).andThen((executable) =>
          spawner
            .spawn({ executable, env, network: caps.network, writeDir: writeDir.value, hiddenPaths: [layout.root], readOnlyPaths: [dataDir] })
            .andTee(() => executable.release())
            .orTee(() => executable.release()),
        ),
      );
  };
}

function sessionFor(ctx: LiveToolsContext, plugin: InstalledPlugin, launch: ProcessLauncher): PluginSession | ResultAsync<never, HostError> {
  switch (plugin.descriptor?.shape) {
    case 'mcp-plugin':
      return new McpSession({ launch });
    case 'handshake': {
      const session = HandshakeSession.create({ launch, pluginId: plugin.plugin_id, allowedCapabilities: ctx.handshakeCapabilities });
      return session.isOk() ? session.value : errAsync(session.error);
    }
    default:
      return errAsync(hostError('PLUGIN_SHAPE_UNSUPPORTED', `plugin '${plugin.plugin_id}' has shape ${String(plugin.descriptor?.shape)}, which has no tool discovery`));
  }
}

const toolNames = (plugin: InstalledPlugin): string[] => [...new Set(plugin.variants.map((v) => v.tool_name))].sort();

/** The unprefixed tool names the installed manifest declares, as the host's catalog recorded them. */
export function declaredTools(ctx: Pick<LiveToolsContext, 'profileDir' | 'pluginId'>): ResultAsync<readonly string[], HostError> {
  return installedPlugin(ctx).map(toolNames);
}

/** The tools the plugin lists when started (MCP `tools/list`, handshake `exposed_tools`); the declared tools for ndjson-rpc, which has no discovery. */
export function liveTools(ctx: LiveToolsContext): ResultAsync<readonly ToolDescriptor[], HostError> {
  return installedPlugin(ctx).andThen((plugin) => {
    if (plugin.descriptor?.shape === 'ndjson-rpc') return okAsync(toolNames(plugin).map((name) => ({ name })));
    return SandboxSpawner.create({ profileKind: ctx.profileKind, ...ctx.sandbox }).andThen((spawner) => {
      const session = sessionFor(ctx, plugin, launcher(ctx, plugin, spawner));
      if (session instanceof ResultAsync) return session;
      return new ResultAsync(
        (async (): Promise<Result<readonly ToolDescriptor[], HostError>> => {
          const listed = await session.listTools();
          await session.close();
          return listed;
        })(),
      );
    });
  });
}
