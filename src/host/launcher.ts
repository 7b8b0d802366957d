/**
 * Starting one process of a plugin, the way go-plugin's client does: check
 * the catalog still pins the code the session was built for, open the data
 * directories, build the environment from the allowlist and the declared
 * credentials only, verify the pinned code, describe the sandbox, spawn.
 */
import { DATA_DIR_STARTUP_CODE_OFF } from '../binding/ExecutableBinding.js';
import { dirname, join } from 'node:path';
import { err, errAsync, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import { NODE_MAIN_GUARD } from '../binding/nodeMain.js';
import { verifyBindingTree } from '../binding/recheckPinnedCode.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { EnvDenylist } from '../env/EnvDenylist.js';
import { pluginSearchPath } from '../env/pluginPath.js';
import { hostError, type HostError } from '../errors/HostError.js';
import type { HostEvents } from '../events/HostEvents.js';
import type { DeclaredCapabilities } from '../manifest/model.js';
import type { Logger, Random } from '../ports/ports.js';
import type { PluginProcess } from '../process/PluginProcess.js';
import { SecretRedactor } from '../secrets/knownSecrets.js';
import { isSecretField, secretNameSet } from '../audit/auditLines.js';
import { withSecretsRedacted } from '../secrets/secretRedactingProcess.js';
import type { VerifiedExecutable } from '../process/VerifiedExecutable.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';
import { openPluginDirectories, pluginDirectoryPaths, type PluginDirectories } from '../sandbox/pluginDirectories.js';
import type { PluginIdentity } from '../sandbox/pluginIdentity.js';
import type { EnforcedPolicy, SandboxPolicyRequest, SandboxSpawner } from '../sandbox/SandboxSpawner.js';
import { moveStartupCode, STARTUP_CODE_QUARANTINE_DIR } from '../sandbox/startupCode.js';
import { writeDirComponents } from '../sandbox/writeDir.js';
import type { ProcessLauncher } from '../shapes/PluginSession.js';
import { withoutReportSeals } from '../shapes/esm/runnerReportSeal.js';
import type { CredentialSource } from './credentials.js';
import { closedError, sameBinding, type HostCatalog } from './hostCatalog.js';
import type { HostConfig } from './hostConfig.js';
import type { ProtocolAdapter } from './protocolAdapters.js';
import { bundleLaunchEnv } from '../bundle/bundleLaunch.js';
import { EventBudget } from '../budget/EventBudget.js';
import lineEvents from '../../etc/plugin-line-events.json' with { type: 'json' };
import { pinnedCapabilities } from './pinnedCapabilities.js';
import { unsetStartEnv, type UnsetStartEnv } from './startEnvHints.js';

/** What the launcher works with: the host's profile, sandbox, secrets and environment rules. */
export interface LauncherParts {
  readonly layout: ProfileLayout;
  readonly spawner: SandboxSpawner;
  readonly credentials: CredentialSource;
  readonly env: EnvDenylist;
  readonly catalog: HostCatalog;
  readonly events: HostEvents;
  readonly logger: Logger;
  readonly random: Random;
  readonly config: HostConfig;
  /** Whether the host was closed (a process starting then is stopped at once). */
  readonly isClosed: () => boolean;
}

/** What a launch prepares besides the verified code: the plugin's user, its opened directories and its environment. */
interface PreparedLaunch {
  readonly identity: PluginIdentity | undefined;
  readonly directories: PluginDirectories;
  readonly pluginEnv: Record<string, string>;
}

/**
 * Both halves of a launch once both settled, or what stopped it. A failed
 * catalog check wins over either (a plugin reinstalled meanwhile is pending
 * restart, not quarantined for its removed files), a failed preparation over
 * the verification, and whatever the other half holds is released.
 */
function bothPrepared(
  checks: ResultAsync<void, HostError>,
  prepared: ResultAsync<PreparedLaunch, HostError>,
  verifying: ResultAsync<VerifiedExecutable, HostError>,
): ResultAsync<[PreparedLaunch, VerifiedExecutable], HostError> {
  return new ResultAsync(
    (async (): Promise<Result<[PreparedLaunch, VerifiedExecutable], HostError>> => {
      const [launch, verified] = await Promise.all([prepared, verifying]);
      const both = launch.andThen((l) => verified.map((v): [PreparedLaunch, VerifiedExecutable] => [l, v]));
      if (both.isOk()) return both;
      if (launch.isOk()) launch.value.directories.close();
      if (verified.isOk()) verified.value.release();
      const checked = await checks;
      return checked.isErr() ? err(checked.error) : both;
    })(),
  );
}

/** The values of a plugin's environment that are secrets: its credentials and the host values its grant passes through. */
function secretEnvValues(env: Readonly<Record<string, string | undefined>>, names: readonly string[]): string[] {
  return names.flatMap((name) => {
    const value = env[name];
    return value === undefined ? [] : [value];
  });
}

// Granted host values whose names read as secrets (the audit's secret field names) are redacted; the rest (USER, LANG,
// FAULT_MODE) are ordinary words: blanked, they would garble other plugins' audit records and logs, and the plugin's own
// stderr that its author reads to find out why it failed.
const SECRET_ENV_NAMES = secretNameSet();

/** Builds the process launchers of a host's plugins and describes the sandbox each one gets. */
export class PluginLauncher {
  readonly #parts: LauncherParts;
  /** The granted env names each plugin's latest launch did not get, by plugin id (absent: it got them all). */
  readonly #unsetEnv = new Map<string, UnsetStartEnv>();

  constructor(parts: LauncherParts) {
    this.#parts = parts;
    // A spawner the host made is the host's alone: it may keep a control group ready for the next start (removed by close).
    if (parts.config.spawner === undefined) parts.spawner.keepSpareGroup();
  }

  /**
   * Removes the control group the host's own spawner keeps ready for the next
   * start, and reports the refused-egress summaries its proxy still holds
   * (plugins are stopped by then: no count comes after); the application's
   * spawner is left as it is.
   */
  close(): void {
    if (this.#parts.config.spawner !== undefined) return;
    this.#parts.spawner.dropSpareGroup();
    this.#parts.spawner.flushEgressEvents();
  }

  /** Whether plugins run inside an OS sandbox. */
  get sandboxed(): boolean {
    return this.#parts.spawner.backendName !== 'none';
  }

  /**
   * Why no plugin of this host can start, when that is known without a
   * spawn: no sandbox backend exists and plugins may not run unconfined (a
   * host opened with `proveAt: 'first_spawn'` where no sandbox exists; with
   * `create` it would not have opened). Undefined otherwise.
   */
  get startRefusal(): HostError | undefined {
    if (this.sandboxed || this.#parts.config.sandbox.dangerouslyRunUnsandboxed === true) return undefined;
    return hostError('PLUGIN_SANDBOX_UNSUPPORTED', 'No OS sandbox backend exists on this host, and plugins are not run unconfined: every start of a plugin fails.');
  }

  /**
   * The launcher of `plugin`'s sessions: each call starts one process of the
   * binding the catalog pinned when the session was built, and only that one.
   */
  launcherFor(plugin: InstalledPlugin, adapter: ProtocolAdapter): ProcessLauncher {
    const { layout, spawner, credentials, env, config } = this.#parts;
    const id = plugin.plugin_id;
    const binding = plugin.lock.binding;
    const caps = plugin.descriptor?.capabilities ?? { network: false, fs_write_dir: '', env_allow: [] };
    const declared = plugin.descriptor?.needs_user_creds ?? [];
    const dataRoot = dirname(layout.dataDir(id));
    const policy = this.sandboxPolicy(id, caps);
    const writeComponents = writeDirComponents(caps.fs_write_dir);
    const interpreter = binding.interpreter?.path ?? adapter.runnerPath(config);
    const launch = bundleLaunchEnv(plugin);
    const start = (): ResultAsync<PluginProcess, HostError> => {
      if (this.#parts.isClosed()) return errAsync(closedError());
      if (policy.isErr()) return errAsync(policy.error);
      if (writeComponents.isErr()) return errAsync(writeComponents.error);
      if (launch.isErr()) return errAsync(launch.error);
      // The pinned code is verified while the launch is prepared; nothing of it runs before every check passed.
      const verifying = this.#verifiedCode(plugin, adapter);
      // Whether the catalog still pins this code with these capabilities: neither check shapes the launch, so both run
      // beside it and the spawn's gate waits for them, as for the tree check: the plugin runs only once they passed.
      const stillPinned = this.#stillPinned(plugin);
      const reading = credentials.values(plugin, declared);
      const prepared = spawner
        .pluginIdentity(dataRoot, id)
        .andThen((identity) =>
          openPluginDirectories({ dataRoot, pluginId: id, writeComponents: writeComponents.value, fsWriteDir: caps.fs_write_dir, ...(identity === undefined ? {} : { owner: identity }) })
            .andThen((directories) => this.#moveStartupCode(id, directories))
            .map((directories) => ({ identity, directories })),
        )
        .asyncAndThen(({ identity, directories }) =>
          reading
            .andThen((values) =>
              env.buildEnv({
                parentEnv: config.env,
                envAllow: caps.env_allow,
                credentials: values,
                fixed: { ...launch.unwrapOr({}), ...DATA_DIR_STARTUP_CODE_OFF, HOME: directories.data.path, TMPDIR: directories.write.path, PATH: pluginSearchPath(interpreter) },
                pluginId: id,
              }),
            )
            .map((pluginEnv) => {
              // Kept for the diagnosis of a start that fails: the environment the plugin got is known only here.
              const unset = unsetStartEnv(caps.env_allow, declared, pluginEnv);
              if (unset === undefined) this.#unsetEnv.delete(id);
              else this.#unsetEnv.set(id, unset);
              return { identity, directories, pluginEnv };
            })
            .orElse((error) => {
              directories.close();
              return errAsync(error);
            }),
        );
      return bothPrepared(stillPinned, prepared, verifying)
        .andThen(([{ identity, directories, pluginEnv }, executable]) =>
          // The spawner releases the verified descriptors and the directories whatever the outcome.
          spawner
            .spawn({
              ...policy.value,
              writeDir: directories.write.path,
              executable,
              env: pluginEnv,
              directories,
              ...(identity === undefined ? {} : { identity }),
              // The rest of the install root is checked while the sandbox is set up; the plugin runs only once it and the
              // catalog checks passed (a failed catalog check is reported first).
              gate: () => ResultAsync.combine([stillPinned, verifyBindingTree(binding)]).map(() => undefined),
            })
            .map((process) => {
              const credentials = secretEnvValues(pluginEnv, declared);
              const secretGrants = caps.env_allow.filter((name) => isSecretField(name, SECRET_ENV_NAMES));
              const secrets = [...credentials, ...secretEnvValues(pluginEnv, secretGrants)];
              config.knownSecrets.know(id, secrets);
              return withSecretsRedacted(process, new SecretRedactor(secrets));
            }),
        )
        .andThen((process) => this.#adopt(id, process, binding.executable_sha256));
    };
    return () => config.telemetry.spawn(id, this.sandboxed, start);
  }

  /**
   * The env names `pluginId` is granted (from the host's environment, or
   * declared credentials) that its latest launch by this host did not get;
   * undefined when it got them all or was not launched.
   */
  unsetEnvOf(pluginId: string): UnsetStartEnv | undefined {
    return this.#unsetEnv.get(pluginId);
  }

  /** What a plugin's sandbox allows: what `spawn` enforces and `info()` reports. */
  sandboxPolicy(pluginId: string, caps: DeclaredCapabilities): Result<SandboxPolicyRequest, HostError> {
    const layout = this.#parts.layout;
    const dataDir = layout.dataDir(pluginId);
    return writeDirComponents(caps.fs_write_dir).map((components) => {
      const paths = pluginDirectoryPaths(dirname(dataDir), pluginId, components);
      const egress = caps.network ? [] : (caps.egress ?? []);
      return { network: caps.network, writeDir: paths.write, hiddenPaths: [layout.root], readOnlyPaths: [paths.data], pluginId, ...(egress.length === 0 ? {} : { egress }) };
    });
  }

  /** The sandbox a launch of `plugin` gets, as `info()` reports it; null when the plugin declares no capabilities. */
  enforcedPolicy(plugin: InstalledPlugin): EnforcedPolicy | null {
    const { layout, spawner } = this.#parts;
    const caps = plugin.descriptor?.capabilities;
    if (caps === undefined) return null;
    const policy = this.sandboxPolicy(plugin.plugin_id, caps);
    if (policy.isErr()) return null;
    const identity = spawner.pluginIdentity(dirname(layout.dataDir(plugin.plugin_id)), plugin.plugin_id);
    // The launch also mounts the pinned interpreter and, for Node under an integrity policy, the main-module guard.
    const pin = plugin.lock.binding.interpreter;
    const underPolicy = pin?.kind === 'node' && pin.node_main === 'integrity_policy' && !spawner.mountsMain;
    const runtime = pin === undefined ? [] : [pin.path, ...(underPolicy ? [NODE_MAIN_GUARD] : [])];
    return spawner.describe({
      ...policy.value,
      readOnlyPaths: [...(policy.value.readOnlyPaths ?? []), ...runtime],
      installRoot: plugin.lock.binding.install_root,
      ...(identity.isOk() && identity.value !== undefined ? { identity: identity.value } : {}),
    });
  }

  /**
   * Moves start-up code planted in the plugin's data directory out of it
   * (`moveStartupCode`), telling the application what was moved; a failure
   * closes the directories and fails the start.
   */
  #moveStartupCode(pluginId: string, directories: PluginDirectories): Result<PluginDirectories, HostError> {
    const { events, logger, config, random } = this.#parts;
    // Beside the data directories (same file system, so a rename), under a name no plugin id can have; no sandbox shows it.
    const quarantine = join(dirname(directories.data.path), STARTUP_CODE_QUARANTINE_DIR, pluginId);
    const setName = `${new Date(config.clock.now()).toISOString().replace(/[:.]/g, '-')}-${Buffer.from(random.bytes(4)).toString('hex')}`;
    const moved = moveStartupCode({ dataPath: directories.data.path, dataFd: directories.data.fd, quarantine, setName });
    if (moved.isErr()) {
      directories.close();
      return err(moved.error);
    }
    if (moved.value !== undefined) {
      const { paths, movedTo } = moved.value;
      logger.warn({ plugin_id: pluginId, paths, moved_to: movedTo }, 'start-up code found in the plugin data directory was moved out before the start');
      events.emit('startup_code:moved', { plugin_id: pluginId, paths, moved_to: movedTo });
    }
    return ok(directories);
  }

  /**
   * Verifies the pinned code just before a spawn: the executable, or for an
   * `esm-module` plugin its entry module, re-hashed and copied (never
   * cached), whose verified bytes the child runs. Every other file of the
   * install root is checked against the binding's file list (unchanged stat
   * identities vouch for unchanged files) by the spawn's gate, before the
   * plugin runs.
   */
  #verifiedCode(plugin: InstalledPlugin, adapter: ProtocolAdapter): ResultAsync<VerifiedExecutable, HostError> {
    const binding = plugin.lock.binding;
    const { layout, random, config, spawner } = this.#parts;
    const context = { copyDir: layout.execDir, random, config, launcherMountsMain: spawner.mountsMain };
    // A refused main file is reported as the tree check reports it, naming the file within its install root.
    return adapter.verifyMain(binding, context).orElse((error) => verifyBindingTree(binding).andThen(() => errAsync(error)));
  }

  /**
   * That the catalog still pins the binding the session was built for, and
   * the capabilities the sandbox is built from are the ones the install
   * pinned; a reinstall is reported before a capabilities mismatch.
   */
  #stillPinned(plugin: InstalledPlugin): ResultAsync<void, HostError> {
    const pinned = plugin.descriptor?.capabilities === undefined ? okAsync(undefined) : pinnedCapabilities(plugin).map(() => undefined);
    return ResultAsync.combine([this.#checkStillInstalled(plugin), pinned]).map(() => undefined);
  }

  /** Another process may have upgraded or removed the plugin since this session was built; it then waits for the next open. */
  #checkStillInstalled(plugin: InstalledPlugin): ResultAsync<void, HostError> {
    const id = plugin.plugin_id;
    return this.#parts.catalog.plugin(id).andThen((now) =>
      sameBinding(now.lock.binding, plugin.lock.binding)
        ? ok(undefined)
        : err(
            hostError('PLUGIN_PENDING_RESTART', `plugin '${id}' was reinstalled since this host started it; the new version is callable on the next open`, {
              details: { plugin_id: id },
            }),
          ),
    );
  }

  /** Wires a fresh process into the events, or stops it when the host closed while it was starting. */
  #adopt(pluginId: string, process: PluginProcess, sha256: string): ResultAsync<PluginProcess, HostError> {
    const { events, logger, config } = this.#parts;
    if (this.#parts.isClosed()) return ResultAsync.fromSafePromise(process.stop()).andThen(() => errAsync(closedError()));
    logger.debug({ plugin_id: pluginId, pid: process.pid }, 'plugin process started');
    events.emit('spawn', { plugin_id: pluginId, pid: process.pid, sandboxed: this.sandboxed, sha256 });
    // A line costs the plugin nothing: without a budget a loop of them is an event each, without end (etc/plugin-line-events.json).
    const budget = new EventBudget<'stderr'>(lineEvents.stderr, config.clock);
    const summary = (suppressed: number): void => events.emit('stderr', { plugin_id: pluginId, line: '', suppressed });
    const off = process.onStderrLine((line) => {
      // An ESM runner's sealed report carries its start's seal, which esmRunnerFailure believes from any plugin's
      // stderr: listeners (logs a plugin might read) get the line without it, as callers get the tail (review R15).
      if (budget.admit('stderr', summary)) events.emit('stderr', { plugin_id: pluginId, line: withoutReportSeals(line) });
    });
    void process.exited.then((exit) => {
      off();
      // exited waits for stderr to close, so every line was counted: the count still waiting for a token goes out before `exit`.
      budget.flush();
      events.emit('exit', { plugin_id: pluginId, pid: process.pid, exit });
    });
    return okAsync(process);
  }
}
