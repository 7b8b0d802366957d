import { mkdir, open, rename, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { bindExecutable, type ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import type { CatalogStore } from '../catalog/CatalogStore.js';
import { putPlugin, removePlugin, type InstalledPlugin } from '../catalog/catalogContents.js';
import type { CatalogSnapshot, CatalogVariant, PluginDescriptor, PluginStateRecord } from '../catalog/catalogTypes.js';
import type { EnvDenylist } from '../env/EnvDenylist.js';
import { hostError, type HostError } from '../errors/HostError.js';
import { ManifestValidator, type ManifestPreset, type ManifestReport } from '../manifest/ManifestValidator.js';
import type { ManifestShape, NormalizedManifest } from '../manifest/model.js';
import { hasViolations, violation, violationsError, type Violation } from '../manifest/violations.js';
import type { NamespaceLock, ProfileKind } from '../namespace/NamespaceLock.js';
import { systemClock, systemRandom, type Clock, type Random } from '../ports/ports.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';
import { resolveWriteDir } from '../sandbox/writeDir.js';
import { parseChecksum } from './checksum.js';
import type { PackageLimits } from './limits.js';
import { openPackageSource, type StagedPackage } from './openPackageSource.js';
import { setExecutableMode } from './setExecutableMode.js';

/** What the Installer is built from: the profile's store and the host's policies. */
export interface InstallerOptions {
  /** The profile's catalog. */
  readonly store: CatalogStore;
  /** The profile's directory map. */
  readonly layout: ProfileLayout;
  /** The env denylist applied to `env_allow` and `needs_user_creds`. */
  readonly envDenylist: EnvDenylist;
  /** Reserved prefixes and recorded owners. */
  readonly namespaceLock: NamespaceLock;
  /** `dev` accepts local directories without checksum and the namespace override. */
  readonly profileKind: ProfileKind;
  /** Shape policy of the manifest validator. Default `neutral`. */
  readonly preset?: ManifestPreset;
  /** Shapes accepted, overriding the preset. */
  readonly allowedShapes?: readonly ManifestShape[];
  /** Public keys whose package signatures are trusted (PEM SPKI or raw base64 Ed25519). */
  readonly trustedKeys?: readonly string[];
  /** Refuse packages not signed by a trusted key. */
  readonly requireSignatures?: boolean;
  /** Archive limits. */
  readonly limits?: Partial<PackageLimits>;
  /** PATH used once, at install, to resolve `#!/usr/bin/env <program>` interpreters. */
  readonly searchPath?: string;
  /** Stamps `installed_at`. */
  readonly clock?: Clock;
  /** Names install roots. */
  readonly random?: Random;
}

/** Per-install choices. */
export interface InstallOptions {
  /** The expected package SHA-256 (`sha256:<hex>` or hex); required for archives outside dev profiles. */
  readonly checksum?: string;
  /** The package's Ed25519 signature over its digest (base64 or bytes); `<archive>.sig` is read otherwise. */
  readonly signature?: string | Uint8Array;
  /** Dev profiles only: install despite another recorded namespace owner. */
  readonly devAllowNamespaceConflict?: boolean;
  /** Install as bundled first-party code (reserved prefixes and a missing namespace_owner allowed). */
  readonly firstParty?: boolean;
  /** Decides the initial status from the validated manifest (e.g. needs_configuration when credentials are missing). */
  readonly initialStatus?: (manifest: NormalizedManifest) => Promise<PluginStateRecord['status']> | PluginStateRecord['status'];
}

/** What an inspection (the CLI's `validate`) found. */
export interface InstallInspection {
  /** Every violation in check order, host checks included; empty when the package would install. */
  readonly report: ManifestReport;
  /** How the package was read. */
  readonly package: Pick<StagedPackage, 'manifestFile' | 'source' | 'stats'> & { readonly digest?: string };
}

const io = (what: string) => (cause: unknown): HostError =>
  hostError('HOST_IO_ERROR', `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/**
 * Installs plugins into one profile in the contract's order: package source
 * (checksum, signature, limits) → parse → schema version → Shape 2 gate →
 * structure → namespace → env denylist → credential descriptors → schema refs
 * → staged copy into a fresh install root → executable binding → schema store
 * → one catalog transaction. A failure at any step leaves nothing behind.
 */
export class Installer {
  readonly #o: InstallerOptions;
  readonly #clock: Clock;
  readonly #random: Random;

  /** @param options - The profile's store and the host's policies. */
  constructor(options: InstallerOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
  }

  /** Runs every install check on a package without installing it; reports every violation. */
  inspect(source: string, options: InstallOptions = {}): ResultAsync<InstallInspection, HostError> {
    return this.#withStaged(source, options, async (staged) => {
      const snapshot = await this.#o.store.snapshot();
      if (snapshot.isErr()) return err(snapshot.error);
      const report = await this.#inspectStaged(staged, snapshot.value, options);
      if (report.isErr()) return err(report.error);
      const digest = staged.digest;
      return ok({
        report: report.value,
        package: { manifestFile: staged.manifestFile, source: staged.source, stats: staged.stats, ...(digest ? { digest } : {}) },
      });
    });
  }

  /** Installs (or upgrades) a plugin from a directory or archive. */
  install(source: string, options: InstallOptions = {}): ResultAsync<InstalledPlugin, HostError> {
    return this.#withStaged(source, options, async (staged) => {
      const snapshot = await this.#o.store.snapshot();
      if (snapshot.isErr()) return err(snapshot.error);
      const report = await this.#inspectStaged(staged, snapshot.value, options);
      if (report.isErr()) return err(report.error);
      const { manifest, violations, source: manifestSource } = report.value;
      if (hasViolations(violations)) return err(violationsError(manifestSource, violations));
      if (manifest === undefined) return err(hostError('PLUGIN_MANIFEST_INVALID', `${manifestSource}: no manifest could be read`));
      const checksum = checkDeclaredChecksum(staged, manifest);
      if (checksum.isErr()) return err(checksum.error);
      return this.#publish(staged, manifest, options);
    });
  }

  /** Removes a plugin: its rows and install root go, its namespace owner stays recorded. */
  remove(pluginId: string): ResultAsync<void, HostError> {
    const removed: { root?: string } = {};
    return this.#o.store
      .transaction((current) => {
        const lock = current.plugins[pluginId];
        if (lock === undefined) return err(hostError('PLUGIN_NOT_FOUND', `plugin '${pluginId}' is not installed`, { details: { plugin_id: pluginId } }));
        removed.root = lock.binding.install_root;
        return ok(removePlugin(current, pluginId));
      })
      .andThen(() =>
        ResultAsync.fromPromise(
          (async () => {
            if (removed.root === undefined) return;
            await rm(removed.root, { recursive: true, force: true });
            // The per-plugin parent goes too once no install root is left in it.
            await rmdir(dirname(removed.root)).catch(() => undefined);
          })(),
          io(`removing the install root of '${pluginId}'`),
        ),
      );
  }

  #withStaged<T>(
    source: string,
    options: InstallOptions,
    body: (staged: StagedPackage) => Promise<Result<T, HostError>>,
  ): ResultAsync<T, HostError> {
    const o = this.#o;
    const opened = openPackageSource(source, {
      stagingRoot: o.layout.stagingDir,
      requireChecksum: o.profileKind !== 'dev',
      ...(options.checksum === undefined ? {} : { checksum: options.checksum }),
      ...(options.signature === undefined ? {} : { signature: options.signature }),
      ...(o.trustedKeys === undefined ? {} : { trustedKeys: o.trustedKeys }),
      ...(o.requireSignatures === undefined ? {} : { requireSignatures: o.requireSignatures }),
      ...(o.limits === undefined ? {} : { limits: o.limits }),
    });
    return opened.andThen((staged) =>
      new ResultAsync(
        body(staged)
          .catch((cause: unknown) => err(io('install failed')(cause)))
          .finally(() => staged.discard()),
      ),
    );
  }

  async #inspectStaged(staged: StagedPackage, snapshot: CatalogSnapshot, options: InstallOptions): Promise<Result<ManifestReport, HostError>> {
    const manifestPath = join(staged.root, staged.manifestFile);
    const firstParty = options.firstParty ?? false;
    const base = {
      preset: this.#o.preset ?? 'neutral',
      firstParty,
      ...(this.#o.allowedShapes === undefined ? {} : { allowedShapes: this.#o.allowedShapes }),
    } as const;
    // The plugin id is needed to tell a collision with another plugin's schema
    // from this plugin's own previous version, so a first pass reads it.
    let pluginId: string | undefined;
    const first = await new ManifestValidator(base).inspectFile(manifestPath, {
      hostChecks: (m) => {
        pluginId = m.plugin_id;
        return [];
      },
    });
    if (first.isErr()) return err(first.error);
    const validator = new ManifestValidator({ ...base, knownSchemaDigests: knownSchemaDigests(snapshot, pluginId) });
    return validator.inspectFile(manifestPath, { hostChecks: (m) => this.#hostChecks(m, snapshot, options) });
  }

  #hostChecks(manifest: NormalizedManifest, snapshot: CatalogSnapshot, options: InstallOptions): Violation[] {
    const out: Violation[] = [];
    const owners = snapshot.contents.namespace_owners;
    const claim = {
      plugin_id: manifest.plugin_id,
      ...(manifest.namespace_owner === undefined ? {} : { namespace_owner: manifest.namespace_owner }),
      firstParty: options.firstParty ?? false,
      devAllowNamespaceConflict: options.devAllowNamespaceConflict ?? false,
    };
    const ns = this.#o.namespaceLock.check(claim, owners);
    if (ns.isErr()) out.push(violation('namespace', ns.error.code, '/namespace_owner', ns.error.message));
    const env = this.#o.envDenylist;
    for (const [field, names, pointer] of [
      ['env_allow', manifest.capabilities.env_allow, '/declared_capabilities/env_allow'],
      ['needs_user_creds', manifest.requirements.needs_user_creds, '/requirements/needs_user_creds'],
    ] as const) {
      const checked = env.check(manifest.plugin_id, names, field);
      if (checked.isErr()) out.push(violation('env', checked.error.code, pointer, checked.error.message));
    }
    const write = resolveWriteDir(this.#o.layout.dataDir(manifest.plugin_id), manifest.capabilities.fs_write_dir);
    if (write.isErr()) out.push(violation('structure', write.error.code, '/declared_capabilities/fs_write_dir', write.error.message));
    return out;
  }

  async #publish(staged: StagedPackage, manifest: NormalizedManifest, options: InstallOptions): Promise<Result<InstalledPlugin, HostError>> {
    const layout = this.#o.layout;
    const installRoot = layout.installRoot(manifest.plugin_id, manifest.version, hex(this.#random.bytes(6)));
    const createdSchemaFiles: string[] = [];
    const undo = async (): Promise<void> => {
      await rm(installRoot, { recursive: true, force: true });
      await Promise.all(createdSchemaFiles.map((f) => rm(f, { force: true })));
    };
    try {
      await mkdir(dirname(installRoot), { recursive: true, mode: 0o755 });
      await rename(staged.root, installRoot);
      const binding = await this.#bind(installRoot, manifest);
      if (binding.isErr()) {
        await undo();
        return err(binding.error);
      }
      for (const schema of manifest.schemas) {
        const file = layout.schemaFile(schema.ref, schema.digest);
        if (await writeNewFile(file, JSON.stringify(schema.schema))) createdSchemaFiles.push(file);
      }
      const status = options.initialStatus ? await options.initialStatus(manifest) : 'installed_pending_restart';
      const records = pluginRecords(manifest, binding.value, staged, status, new Date(this.#clock.now()).toISOString());
      let previousRoot: string | undefined;
      const committed = await this.#o.store.transaction((current) => {
        // Ownership is checked again under the profile lock: another process
        // may have claimed the prefix since the inspection.
        const claimed = this.#o.namespaceLock.claim(
          {
            plugin_id: manifest.plugin_id,
            ...(manifest.namespace_owner === undefined ? {} : { namespace_owner: manifest.namespace_owner }),
            firstParty: options.firstParty ?? false,
            devAllowNamespaceConflict: options.devAllowNamespaceConflict ?? false,
          },
          current.namespace_owners,
        );
        if (claimed.isErr()) return err(claimed.error);
        previousRoot = current.plugins[manifest.plugin_id]?.binding.install_root;
        return ok(putPlugin({ ...current, namespace_owners: claimed.value }, records));
      });
      if (committed.isErr()) {
        await undo();
        return err(committed.error);
      }
      if (previousRoot !== undefined && previousRoot !== installRoot) await rm(previousRoot, { recursive: true, force: true });
      const installed = await this.#o.store.lookup({ profile: this.#o.store.profile, plugin_id: manifest.plugin_id });
      if (installed.isErr()) return err(installed.error);
      if (installed.value === undefined) return err(hostError('CATALOG_CORRUPT', `plugin '${manifest.plugin_id}' vanished right after its install`));
      return ok(installed.value);
    } catch (cause) {
      await undo();
      return err(io(`installing '${manifest.plugin_id}'`)(cause));
    }
  }

  async #bind(installRoot: string, manifest: NormalizedManifest): Promise<Result<ExecutableBindingRecord, HostError>> {
    if (manifest.executable === undefined) {
      return err(
        hostError('PLUGIN_SHAPE_UNSUPPORTED', `plugin '${manifest.plugin_id}' of shape ${manifest.shape} has no executable this installer can pin`, {
          details: { plugin_id: manifest.plugin_id, shape: manifest.shape },
        }),
      );
    }
    const mode = await setExecutableMode(installRoot, manifest.executable);
    if (mode.isErr()) return err(mode.error);
    return bindExecutable({
      installRoot,
      executable: manifest.executable,
      ...(this.#o.searchPath === undefined ? {} : { searchPath: this.#o.searchPath }),
    });
  }
}

/** The served-schema digests already installed, except those of `ownPluginId` (its own earlier version may change them). */
function knownSchemaDigests(snapshot: CatalogSnapshot, ownPluginId: string | undefined): Map<string, string> {
  const known = new Map<string, string>();
  for (const variant of snapshot.contents.variants) {
    if (variant.plugin_id === ownPluginId) continue;
    for (const [ref, digest] of Object.entries(variant.schema_hashes)) known.set(ref, digest);
  }
  return known;
}

/** An archive must match the checksum its own manifest declares, when it declares one. */
function checkDeclaredChecksum(staged: StagedPackage, manifest: NormalizedManifest): Result<void, HostError> {
  const declared = manifest.package?.checksum;
  if (declared === undefined || declared === '' || staged.digest === undefined) return ok(undefined);
  const parsed = parseChecksum(declared);
  if (parsed.isErr()) return err(parsed.error);
  if (parsed.value !== staged.digest) {
    return err(
      hostError('PLUGIN_CHECKSUM_MISMATCH', `the package digest ${staged.digest} differs from [package].checksum ${parsed.value}`, {
        details: { expected: parsed.value, actual: staged.digest, reason: 'manifest_checksum' },
      }),
    );
  }
  return ok(undefined);
}

function pluginRecords(
  manifest: NormalizedManifest,
  binding: ExecutableBindingRecord,
  staged: StagedPackage,
  status: PluginStateRecord['status'],
  now: string,
): { lock: InstalledPlugin['lock']; state: PluginStateRecord; variants: CatalogVariant[]; descriptor: PluginDescriptor } {
  const id = manifest.plugin_id;
  const variants = manifest.tools.map((tool): CatalogVariant => {
    const opId = tool.op_id ?? `plug.${id}.${tool.name}`;
    const schemaHashes = Object.fromEntries(
      manifest.schemas.filter((s) => tool.schema_ref !== undefined && s.ref.startsWith(`${tool.schema_ref}.`)).map((s) => [s.ref, s.digest]),
    );
    return {
      op_id: opId,
      variant_id: tool.variant_id ?? `${opId}@${manifest.version}`,
      plugin_id: id,
      tool_name: tool.tool_name ?? tool.name,
      risk_class: tool.risk_class,
      confirmation_policy: tool.confirmation_policy,
      schema_hashes: schemaHashes,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      ...(tool.backend_kind === undefined ? {} : { backend_kind: tool.backend_kind }),
      ...(tool.output_profile === undefined ? {} : { output_profile: tool.output_profile }),
    };
  });
  return {
    lock: {
      plugin_id: id,
      version: manifest.version,
      ...(manifest.namespace_owner === undefined ? {} : { namespace_owner: manifest.namespace_owner }),
      package: {
        source: `${staged.source.kind}:${staged.source.path}`,
        ref: manifest.package?.ref ?? manifest.version,
        checksum: staged.digest ?? '',
      },
      binding,
    },
    state: {
      status,
      installed_at: now,
      activated_at: null,
      retry_count: 0,
      next_retry_at: null,
      quarantined_at: null,
      quarantine_reason: null,
      last_error_code: null,
      canary: { status: 'never_run', last_run_at: null },
    },
    variants,
    descriptor: describePlugin(manifest),
  };
}

/** The plugin-level facts the runtime needs, recorded in the catalog so a tampered manifest file cannot change them. */
function describePlugin(m: NormalizedManifest): PluginDescriptor {
  return {
    plugin_id: m.plugin_id,
    name: m.name,
    version: m.version,
    shape: m.shape,
    form: m.form,
    ...(m.description === undefined ? {} : { description: m.description }),
    ...(m.namespace_owner === undefined ? {} : { namespace_owner: m.namespace_owner }),
    ...(m.tos === undefined ? {} : { tos: m.tos }),
    ...(m.risk === undefined ? {} : { risk: m.risk }),
    capabilities: {
      network: m.capabilities.network,
      fs_write_dir: m.capabilities.fs_write_dir,
      env_allow: [...m.capabilities.env_allow],
    },
    needs_user_creds: [...m.requirements.needs_user_creds],
    credential_descriptors: m.requirements.credential_descriptors.map((d) => ({ ...d })),
    ...(m.requirements.canary === undefined ? {} : { canary: { ...m.requirements.canary } }),
  };
}

/** Writes a file that must not exist yet (0644, fsynced); `false` when an identical file is already there. */
async function writeNewFile(path: string, text: string): Promise<boolean> {
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  try {
    await stat(path);
    return false;
  } catch {
    // Absent: write it.
  }
  const temp = `${path}.${process.pid}.tmp`;
  const handle = await open(temp, 'wx', 0o644);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
  return true;
}
