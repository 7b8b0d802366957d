import { mkdir, realpath, rename, rmdir } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { err, errAsync, ok, ResultAsync, type Result } from 'neverthrow';
import { bindExecutable, launchArgumentsOf, type ExecutableBindingRecord } from '../binding/ExecutableBinding.js';
import { confinedInterpreterVersion } from '../binding/interpreterVersion.js';
import { bindModuleEntry } from '../binding/ModuleEntryBinding.js';
import { pinnedEntries, pinPackageTree, type HashedWhileWritten } from '../binding/packageTree.js';
import { verifyBindingTree } from '../binding/recheckPinnedCode.js';
import type { CatalogStore } from '../catalog/CatalogStore.js';
import { lookupPlugin, putPlugin, registryPackageName, removePlugin, type InstalledPlugin } from '../catalog/catalogContents.js';
import type { CatalogSnapshot, LockedPlugin, NamespaceOwnerEntry, PluginStateRecord } from '../catalog/catalogTypes.js';
import { syncDirectory } from '../catalog/generationFiles.js';
import { syncTree } from './syncTree.js';
import type { EnvDenylist } from '../env/EnvDenylist.js';
import { hostError, isHostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { ManifestValidator, type ManifestPreset, type ManifestReport, type PackageManifestName } from '../manifest/ManifestValidator.js';
import { calledOpId, type ClientRequestKind, type DeclaredCapabilities, type ManifestShape, type ManifestTool, type NormalizedManifest, type PluginGrant, type SettingValue } from '../manifest/model.js';
import { hasViolations, sortViolations, violationsError, type NonEmptyViolations, type Violation } from '../manifest/violations.js';
import type { NamespaceClaim, NamespaceLock, NamespaceOwners, ProfileKind } from '../namespace/NamespaceLock.js';
import { silentLogger, systemClock, systemRandom, type Clock, type Logger, type Random } from '../ports/ports.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';
import { conflictUnderLock, knownSchemaDigests } from './installConflicts.js';
import { BUNDLE_NEEDS_REVIEW, readBundleManifest, type BundleServerStart } from '../bundle/bundleManifest.js';
import { hasNetwork, introspectServer, type IntrospectionNetwork } from './introspect.js';
import { pluginIdOf, riskClassOf } from './npmManifest.js';
import { DEFAULT_INTROSPECTION_TIMEOUT_MS } from './openNpmSource.js';
import { checkGrantedEnv, DEFAULT_CAPABILITIES, grantedCapabilities, grantExceedsHint, sameGrant } from './grant.js';
import { pluginRecords, toolIds } from './installRecords.js';
import { claimInstallRoot, collectInstallLeftovers, type CollectedLeftovers } from './installLeftovers.js';
import { installPathRefusal } from './installPath.js';
import { removeTree } from './removeTree.js';
import { resolveLimits, type PackageLimits } from './limits.js';
import { openPackageSource, type PackageSourceKind, type StagedPackage } from './openPackageSource.js';
import { sameAsPinned, sameTree } from './sameTree.js';
import { reuseRecordedManifest } from './recordedIntrospection.js';
import { collectSchemaGarbage } from './schemaGarbage.js';
import { unpin, writePin } from './schemaPins.js';
import { storeSchema, withSchemaStoreLock } from './schemaStore.js';
import { setExecutableMode } from './setExecutableMode.js';
import { compareVersions } from '../manifest/versionOrder.js';
import { consoleScriptOf, installConsoleScript } from './pythonVenv.js';
import { checkUidRange, DEFAULT_PLUGIN_UID_RANGE, pluginIdentity, type PluginIdentity } from '../sandbox/pluginIdentity.js';
import { parseNpmSpec, type NpmSettings } from './npmFetch.js';
import { isNpmSource, openNpmSource, type NetworkedStart, type NpmSourceOptions } from './openNpmSource.js';
import { wrapNpmSource, type WrapOptions, type WrappedServer } from './wrapNpmSource.js';
import { resolveLaunchArgs } from './launchArgs.js';
import {
  addedCapabilities,
  addedCredentials,
  addedCapabilityText,
  hasLicenseFile,
  riskChangeText,
  riskLowerings,
  trustRequestOf,
  ungrantedCapabilities,
  widensCapabilities,
  type AddedCapability,
  type ComparedTool,
  type ToolRiskChange,
  type TrustCallback,
  type TrustRequest,
} from './trust.js';
import { acceptedOriginOf, packageChangeOf, registryChangeOf, registryChangeText, type AcceptedOrigin, type PackageChange, type RegistryChange } from './trustRegistry.js';
import { manifestHostChecks, namespaceClaimOf, noExecutableMessage, pinnedCodeOf, type PinnedCode } from './manifestHostChecks.js';
import type { SandboxSpawner } from '../sandbox/SandboxSpawner.js';

/** What an install or a wrap grants that its introspection start gets too. */
interface IntrospectionGrant {
  readonly clientRequests: readonly ClientRequestKind[] | undefined;
  readonly env: readonly string[] | undefined;
  readonly network?: IntrospectionNetwork;
  /** The writable directory the install grants (`fs_write_dir`), made in the start's data directory as at every start. */
  readonly fsWriteDir?: string;
  /** Asked before a start with network (the install's `accept`); absent: the grant is the consent. */
  readonly consent?: (start: NetworkedStart) => Promise<Result<void, HostError>>;
}

/** A generated manifest's id and capabilities source, the host default a grant widens: what an introspected server is installed with. */
const INTROSPECTED: Pick<NormalizedManifest, 'plugin_id' | 'capabilities' | 'capabilities_source'> = {
  plugin_id: 'npm-introspection',
  capabilities: DEFAULT_CAPABILITIES,
  capabilities_source: 'host_default',
};

/** What the Installer is built from: the profile's store and the host's policies. */
export interface InstallerOptions {
  /** The profile's catalog. */
  readonly store: CatalogStore;
  /** The profile's directory map. */
  readonly layout: ProfileLayout;
  /** The env denylist applied to `env_allow` and `needs_user_creds`. */
  readonly envDenylist: EnvDenylist;
  /** The host environment an `npm:` server's introspection start reads the env names the install grants from. Default: none of it. */
  readonly hostEnv?: Readonly<Record<string, string | undefined>>;
  /** Reserved prefixes and recorded owners. */
  readonly namespaceLock: NamespaceLock;
  /** `dev` accepts local directories, archives without checksum and the namespace override. */
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
  /** Names install roots and temporary files. */
  readonly random?: Random;
  /** Told when cleaning up after a committed install or remove fails; the operation still succeeds. */
  readonly logger?: Logger;
  /** Which npm fetches `npm:` sources, and from which registry (default: the npm shipped with this Node, registry.npmjs.org). */
  readonly npm?: NpmSettings;
  /** Refuse packages from archives and registries that ship no LICENSE file (PLUGIN_LICENSE_MISSING). */
  readonly requireLicense?: boolean;
  /** Fsync every file and directory of a new install root, and the folders it was moved into, before its commit (see syncTree). */
  readonly durableInstall?: boolean;
  /** The sandbox an `npm:` server that ships no manifest is started in once, to read its tools; without it such a server needs the `manifest` option. */
  readonly spawner?: SandboxSpawner;
  /** Time for that whole start: its `initialize` and every `tools/list` page (the host's `introspectionTimeoutMs`). Default 30 s. */
  readonly introspectionTimeoutMs?: number;
  /** Time for each request of that start (the host's `startupTimeoutMs`, as any start of the plugin gets for each). Default: the whole time. */
  readonly startupTimeoutMs?: number;
}

/** What a caller decides about one package: the checks it must pass and the replacements it may make. */
export interface PackageInstallChoices {
  /**
   * The expected package SHA-256 (`sha256:<hex>` or hex); required for
   * archives outside dev profiles. When given it is the checksum that counts;
   * without it, an archive is checked against its manifest's
   * `[package].checksum`.
   */
  readonly checksum?: string;
  /** The package's Ed25519 signature over its digest (base64 or bytes); `<archive>.sig` is read otherwise. */
  readonly signature?: string | Uint8Array;
  /** Dev profiles only: install despite another recorded namespace owner. */
  readonly devAllowNamespaceConflict?: boolean;
  /** Install as bundled first-party code (reserved prefixes and a missing namespace_owner allowed). */
  readonly firstParty?: boolean;
  /**
   * Replace the installed package when the same version is installed from
   * other bytes (otherwise `PLUGIN_ALREADY_INSTALLED`). The same bytes again
   * are never replaced: that install succeeds with `unchanged: true`.
   */
  readonly replace?: boolean;
  /** Install a lower version than the one installed (otherwise `PLUGIN_DOWNGRADE_REFUSED`). */
  readonly allowDowngrade?: boolean;
  /**
   * Replace a package signed by one trusted key with one signed by another
   * key, or not signed at all (otherwise `PLUGIN_SIGNATURE_INVALID` with
   * `details.reason: "signer_changed"`). The new signer is recorded.
   */
  readonly allowSignerChange?: boolean;
  /**
   * Sandbox powers granted to the plugin: they narrow what its manifest
   * declares (asking for more is `PLUGIN_GRANT_EXCEEDS_DECLARATION`), or for
   * a source that declares nothing, they are what it gets beyond the host
   * default (no network, no writable dir beyond the data dir, no env).
   * Recorded in the lock; the same package installed again with another
   * grant is installed again under it.
   */
  readonly grant?: PluginGrant;
  /**
   * For a package whose executable is a console script of its
   * pyproject.toml: a package index (PEP 503 simple API URL, e.g.
   * `https://pypi.org/simple/`) from which pip may fetch the wheels the
   * package does not ship. Without it the install never uses the network.
   */
  readonly pythonIndexUrl?: string;
  /**
   * Values of an MCP Bundle's non-sensitive `user_config` keys, overriding
   * their defaults (sensitive ones are credentials: see `setup`). Recorded
   * in the catalog; the same package installed again with other settings is
   * installed again with them.
   */
  readonly settings?: Readonly<Record<string, SettingValue>>;
  /**
   * For a package that ships no manifest (an `npm:` server): the manifest to
   * install it with, as a GUM JSON document. Without it the host generates
   * one from the server's own `tools/list`, read in a sandboxed start.
   */
  readonly manifest?: Readonly<Record<string, unknown>>;
  /**
   * Arguments the executable is started with, recorded in the binding.
   * `${data_dir}` in an argument becomes the plugin's data directory (its
   * HOME), e.g. `['${data_dir}']` for a server that takes the directory it
   * may serve.
   */
  readonly args?: readonly string[];
  /**
   * For an `npm:` package that ships no manifest: the name of its `bin` to
   * run as the server, for a package whose MCP server is not its default
   * executable (e.g. `bunqueue-mcp` of `bunqueue`). Without it the host runs
   * the package's only bin, or the one named like the package; a package
   * with several and none so named fails with PLUGIN_NPM_INSTALL_FAILED
   * (`no_bin`), a name the package lacks with `unknown_bin`, both hints
   * listing its bins. Recorded in the lock: a later install of the plugin
   * (an upgrade, a reinstall) without it runs the same bin, and one whose
   * version no longer has it fails with `unknown_bin`.
   */
  readonly bin?: string;
}

/** Per-install choices. */
export interface InstallOptions extends PackageInstallChoices {
  /**
   * Asked to accept the plugin (namespace owner, terms of service, risk,
   * license, powers) after every check passed and before anything is
   * written, unless the same owner installed it before; declining is
   * PLUGIN_TRUST_DECLINED. Without it the caller's install is the acceptance,
   * except of an upgrade or reinstall that, against the version accepted
   * before, makes tools easier to call (`TrustRequest.risk_changes`) or gives
   * the plugin a power it did not have and this install's `grant` does not
   * name (`TrustRequest.added_capabilities`): refused with
   * PLUGIN_TRUST_DECLINED, `details.reason` `risk_lowered` or `capabilities_widened`.
   * Judged again under the profile lock, never asked there: when another
   * process installed or removed the plugin meanwhile and the install would
   * now be asked about, it is PLUGIN_TRUST_DECLINED, retryable,
   * `details.reason` `baseline_changed` (install again), unless what it
   * would ask now is the very request the callback accepted.
   * A server that ships no manifest is started once to list its tools; that
   * start is judged the same way first, before any code of it runs: a start
   * with network is asked about (`TrustRequest.stage: 'introspection'`), and
   * without the callback what the install would be refused whatever the
   * server lists (`registry_changed`, an ungranted power or credential name,
   * another namespace owner, a signer change) is refused before it.
   */
  readonly accept?: TrustCallback;
  /** Decides the initial status from the validated manifest (e.g. needs_configuration when credentials are missing). */
  readonly initialStatus?: (manifest: NormalizedManifest) => Promise<PluginStateRecord['status']> | PluginStateRecord['status'];
}

/** What an inspection (the CLI's `validate`) found. */
export interface InstallInspection {
  /** Every violation in check order, host checks included; empty when the manifest passes every check. */
  readonly report: ManifestReport;
  /** How the package was read. */
  readonly package: InspectedPackage;
}

/** How `PluginHost.inspect` read a package: the staged package's facts, without its staging directory. */
export interface InspectedPackage {
  /** The manifest file found at the package root. */
  readonly manifestFile: PackageManifestName;
  /** Where the package came from. */
  readonly source: { readonly kind: PackageSourceKind; readonly path: string };
  /** Entries and file bytes staged. */
  readonly stats: { readonly entries: number; readonly bytes: number };
  /** The archive's SHA-256 (`sha256:<hex>`); absent for directory sources. */
  readonly digest?: string;
}

/** What {@link Installer.install} did: the plugin as installed now. */
export interface InstallResult extends InstalledPlugin {
  /**
   * Present when the same package (same digest, or for directory sources
   * the same files and bytes) was already installed at this version:
   * nothing was written and the running code was left alone.
   */
  readonly unchanged?: true;
}

/** How an install relates to what is installed under its plugin id. */
type Reinstall =
  | { readonly kind: 'new' }
  | { readonly kind: 'unchanged'; readonly plugin: InstalledPlugin }
  | { readonly kind: 'repair'; readonly root: string; readonly signer?: string };

const io = (operation: string) => (cause: unknown): HostError => ioError(operation, undefined, cause);

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** The network part of capabilities, for an introspection start. */
function networkOf(capabilities: DeclaredCapabilities): IntrospectionNetwork {
  return { network: capabilities.network, ...(capabilities.egress === undefined ? {} : { egress: capabilities.egress }) };
}

/** The record an earlier install kept for the plugin id with its owner (kept across remove), if any. */
function ownerRecordOf(snapshot: CatalogSnapshot, id: string): NamespaceOwnerEntry | undefined {
  const owners = snapshot.contents.namespace_owners;
  return Object.hasOwn(owners, id) ? owners[id] : undefined;
}

/**
 * The origin (npm registry) the version accepted before came from: the
 * installed one's lock row, or after a remove the owner record's (see
 * {@link acceptedOriginOf}).
 */
function acceptedOriginFor(snapshot: CatalogSnapshot, id: string): AcceptedOrigin | undefined {
  const installed = Object.hasOwn(snapshot.contents.plugins, id) ? snapshot.contents.plugins[id]?.package : undefined;
  return acceptedOriginOf(installed, ownerRecordOf(snapshot, id));
}

/**
 * The powers the plugin id was accepted with before: the installed plugin's,
 * or once removed those recorded with its owner at the remove (whoever the
 * owner). Undefined for a first install, or a remove from before that record.
 */
function acceptedCapabilitiesOf(snapshot: CatalogSnapshot, id: string): DeclaredCapabilities | undefined {
  const previous = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: id });
  if (previous !== undefined) return previous.descriptor?.capabilities;
  return ownerRecordOf(snapshot, id)?.accepted_capabilities;
}

/**
 * The credential names (`needs_user_creds`) the plugin id was accepted with
 * before: the installed plugin's, or once removed those recorded with its
 * owner. An owner record from before credentials were recorded holds none,
 * so every name of the reinstall counts as new (asked once more, not given
 * unasked). Undefined when no powers were accepted before either.
 */
function acceptedCredentialsOf(snapshot: CatalogSnapshot, id: string): readonly string[] | undefined {
  const previous = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: id });
  if (previous !== undefined) return previous.descriptor?.capabilities === undefined ? undefined : (previous.descriptor.needs_user_creds ?? []);
  const recorded = ownerRecordOf(snapshot, id);
  return recorded?.accepted_capabilities === undefined ? undefined : (recorded.accepted_credentials ?? []);
}

/**
 * Whether an owner recorded for the plugin id by an earlier install (kept
 * across remove) already accepted these powers. The owner string is the
 * package's own claim: it spares the question only while the plugin gets no
 * power it was accepted without (see {@link acceptedCapabilitiesOf}).
 */
function acceptedBefore(snapshot: CatalogSnapshot, id: string, owner: string | undefined, capabilities: DeclaredCapabilities, registry: string | undefined, packageName: string | undefined): boolean {
  const recorded = ownerRecordOf(snapshot, id);
  if (recorded?.namespace_owner === undefined || recorded.namespace_owner !== owner) return false;
  // The same name from another registry, or another name claiming the same owner, is another publisher's package (review R9 F3).
  if (registryChangeFor(snapshot, id, registry) !== undefined || packageChangeOf(acceptedOriginFor(snapshot, id), packageName) !== undefined) return false;
  const accepted = acceptedCapabilitiesOf(snapshot, id);
  return accepted !== undefined && !widensCapabilities(accepted, capabilities);
}

/**
 * The registry change of an install of `id` from `registry` (the registry npm
 * fetched an npm registry package from; undefined for other sources) against
 * the version accepted before (see {@link acceptedOriginFor}).
 */
function registryChangeFor(snapshot: CatalogSnapshot, id: string, registry: string | undefined): RegistryChange | undefined {
  if (registry === undefined) return undefined;
  return registryChangeOf(acceptedOriginFor(snapshot, id), registry);
}

/** The tools a plugin id was accepted with before, as {@link riskLowerings} compares them, and whether they are matched by op id. */
interface AcceptedTools {
  readonly tools: readonly ComparedTool[];
  readonly byOpId: boolean;
}

/**
 * The tools the plugin id was accepted with before: the installed plugin's,
 * or once removed those recorded with its owner at the remove. Undefined for
 * a first install, or a remove from before that record.
 */
function acceptedToolsOf(snapshot: CatalogSnapshot, id: string): AcceptedTools | undefined {
  const installed = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: id });
  if (installed !== undefined) {
    return { byOpId: true, tools: installed.variants.map((v) => ({ id: v.op_id, name: v.tool_name, risk_class: v.risk_class, confirmation_policy: v.confirmation_policy })) };
  }
  // Compared by op id, which callers, maxRisk ceilings and confirmations address: a TOML form may keep its op_id and
  // rename the tool_name its server lists (review R4 F1). An owner record from before op ids were kept there names the
  // tool as its rows did (tool_name, else name), and is matched on that.
  const recorded = ownerRecordOf(snapshot, id)?.accepted_tools;
  if (recorded === undefined) return undefined;
  const byOpId = recorded.every((t) => t.op_id !== undefined);
  return {
    byOpId,
    tools: recorded.map((t) => ({ id: byOpId && t.op_id !== undefined ? t.op_id : `tool:${t.name}`, name: t.name, risk_class: t.risk_class, confirmation_policy: t.confirmation_policy })),
  };
}

/**
 * The tools `manifest` makes easier to call than the version accepted
 * before under its id (see {@link riskLowerings} and {@link acceptedToolsOf}).
 * Empty for a first install, whose question (or the caller's install) covers every tool.
 */
function riskChangesOf(snapshot: CatalogSnapshot, manifest: NormalizedManifest): ToolRiskChange[] {
  const id = manifest.plugin_id;
  const accepted = acceptedToolsOf(snapshot, id);
  if (accepted === undefined) return [];
  const next = manifest.tools.map((t) => ({
    id: accepted.byOpId ? toolIds(manifest, t).op_id : `tool:${t.tool_name ?? t.name}`,
    op_id: calledOpId(id, toolIds(manifest, t).op_id),
    name: t.name,
    risk_class: t.risk_class,
    confirmation_policy: t.confirmation_policy,
  }));
  return riskLowerings(accepted.tools, next);
}

/** JSON with every object's keys sorted, so that equal values read the same whichever file (a descriptor, an owner record) kept them. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/**
 * Everything {@link Installer.#trust} judges an install of `id` against, as
 * one comparable string: the recorded owner, and the powers and tools the id
 * was accepted with before (the installed plugin's, or the owner record's
 * after a remove). The install compares it again under the profile lock: if
 * another install or remove of the same id changed it since, what would be
 * committed was judged against something it no longer replaces.
 */
function trustBaselineOf(snapshot: CatalogSnapshot, id: string): string {
  const tools = acceptedToolsOf(snapshot, id);
  return canonicalJson({
    owner: ownerRecordOf(snapshot, id)?.namespace_owner ?? null,
    origin: acceptedOriginFor(snapshot, id) ?? null,
    capabilities: acceptedCapabilitiesOf(snapshot, id) ?? null,
    credentials: acceptedCredentialsOf(snapshot, id) ?? null,
    tools: tools === undefined ? null : [...tools.tools].map((t) => ({ ...t })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
  });
}

/**
 * What the trust gate judges: a plugin id and what it would get. The install
 * judges its manifest (see {@link subjectOf}); the introspection start before
 * it, what is known before any code of the package runs (no tools yet, so
 * no risk changes).
 */
interface TrustSubject {
  readonly id: string;
  /** The powers it will run with (the declaration, or the host default, as granted). */
  readonly capabilities: DeclaredCapabilities;
  /** The credential names it needs (`needs_user_creds`). */
  readonly credentials: readonly string[];
  /** Tools made easier to call than the version accepted before (see {@link riskChangesOf}). */
  readonly changes: readonly ToolRiskChange[];
  /** The namespace owner the install claims. */
  readonly owner: string | undefined;
  /** The registry an npm registry package was fetched from; undefined for other sources. */
  readonly registry: string | undefined;
  /** The npm package name an npm registry package was fetched as; undefined for other sources. */
  readonly packageName: string | undefined;
}

/** What an install's trust gate finds against one catalog snapshot. */
interface TrustJudgement {
  /** Tools made easier to call than the version accepted before. */
  readonly changes: readonly ToolRiskChange[];
  /** Powers the plugin did not have. */
  readonly added: readonly AddedCapability[];
  /** Of `added`, those the install's own grant does not name. */
  readonly unconsented: readonly AddedCapability[];
  /** Whether an `accept` callback would not be asked: nothing easier to call, the same registry, and the recorded owner accepted these powers before. */
  readonly spared: boolean;
  /** The npm registry the package comes from, when it is not the one the version accepted before came from. */
  readonly registryChange: RegistryChange | undefined;
  /** The npm package this is, when another package than the installed one claims its id and owner. */
  readonly packageChange: PackageChange | undefined;
  /** The powers the plugin will run with. */
  readonly capabilities: DeclaredCapabilities;
}

/** What the install of `manifest` is judged by (see {@link judgeTrust}). */
function subjectOf(snapshot: CatalogSnapshot, manifest: NormalizedManifest, options: InstallOptions, owner: string | undefined, source: StagedPackage['source']): TrustSubject {
  return {
    id: manifest.plugin_id,
    capabilities: grantedCapabilities(manifest, options.grant).unwrapOr(manifest.capabilities),
    credentials: manifest.requirements.needs_user_creds,
    changes: riskChangesOf(snapshot, manifest),
    owner,
    registry: source.registry,
    packageName: registryPackageNameOf(source),
  };
}

/** The npm package name of a staged npm registry package (its path is `<name>@<version>`); undefined for other sources. */
function registryPackageNameOf(source: StagedPackage['source']): string | undefined {
  return source.kind === 'npm' && source.registry !== undefined ? registryPackageName(`npm:${source.path}`) : undefined;
}

/**
 * The trust gate's findings for `subject` against `snapshot`, the one
 * judgement of both the install (see {@link Installer.#trust}) and its
 * introspection start (see {@link Installer.#consentToStart}); `grant` is the
 * install's own.
 */
function judgeSubject(snapshot: CatalogSnapshot, subject: TrustSubject, grant: PluginGrant | undefined): TrustJudgement {
  const { id, capabilities, changes } = subject;
  const accepted = acceptedCapabilitiesOf(snapshot, id);
  // A new credential name is a power too: with credentialsFromEnv the plugin gets the host's value of it unasked (review R7 N2).
  const added = accepted === undefined ? [] : [...addedCapabilities(accepted, capabilities), ...addedCredentials(acceptedCredentialsOf(snapshot, id) ?? [], subject.credentials)];
  // What the caller grants on this very install it asked for; only what the package declares, or the default gives, is refused.
  const unconsented = ungrantedCapabilities(added, grant);
  const registryChange = registryChangeFor(snapshot, id, subject.registry);
  const packageChange = packageChangeOf(acceptedOriginFor(snapshot, id), subject.packageName);
  const spared = changes.length === 0 && added.length === 0 && acceptedBefore(snapshot, id, subject.owner, capabilities, subject.registry, subject.packageName);
  return { changes, added, unconsented, spared, registryChange, packageChange, capabilities };
}

/**
 * The trust gate's findings for `manifest` against `snapshot` (see {@link Installer.#trust}); `owner` is the namespace
 * owner the install claims, `registry` the registry an npm registry package was fetched from.
 */
function judgeTrust(snapshot: CatalogSnapshot, manifest: NormalizedManifest, options: InstallOptions, owner: string | undefined, source: StagedPackage['source']): TrustJudgement {
  return judgeSubject(snapshot, subjectOf(snapshot, manifest, options, owner, source), options.grant);
}

/** The install question for `manifest`, with what the judgement found changed against the version accepted before. */
function installRequest(manifest: NormalizedManifest, source: StagedPackage['source'], judged: TrustJudgement): TrustRequest {
  const { changes, added, registryChange, packageChange } = judged;
  return {
    ...trustRequestOf(manifest, source, judged.capabilities),
    ...(changes.length === 0 ? {} : { risk_changes: changes }),
    ...(added.length === 0 ? {} : { added_capabilities: added }),
    ...(registryChange === undefined ? {} : { registry_change: registryChange }),
    ...(packageChange === undefined ? {} : { package_change: packageChange }),
  };
}

/**
 * What the trust gate judged an install against and, when it asked, what it
 * asked: checked again under the profile lock (see {@link trustUnderLock}).
 */
interface TrustedBaseline {
  /** The baseline judged against (see {@link trustBaselineOf}). */
  readonly baseline: string;
  /** The question the `accept` callback accepted, as comparable text (see {@link canonicalJson}); absent when none was asked. */
  readonly asked?: string;
}

/**
 * The trust gate again, under the profile lock, when the baseline changed
 * since the install was judged (see {@link trustBaselineOf}): without an
 * `accept` callback the install is refused as the gate would refuse it now;
 * with one, an install the gate would now ask about is refused, retryable
 * (the callback may ask a person, who is not kept waiting under the lock,
 * and what they answered was about another baseline), unless the question
 * it would ask now is the very one the callback accepted (`trusted.asked`):
 * the same changes, powers and registry, so the answer holds. Undefined: it
 * may be committed.
 */
function trustUnderLock(
  snapshot: CatalogSnapshot,
  manifest: NormalizedManifest,
  options: InstallOptions,
  subject: { readonly owner: string | undefined; readonly source: StagedPackage['source'] },
  trusted: TrustedBaseline,
): HostError | undefined {
  const judged = judgeTrust(snapshot, manifest, options, subject.owner, subject.source);
  if (options.accept === undefined) return unaskedRefusal(manifest, judged);
  if (judged.spared) return undefined;
  if (trusted.asked !== undefined && canonicalJson(installRequest(manifest, subject.source, judged)) === trusted.asked) return undefined;
  const id = manifest.plugin_id;
  return hostError('PLUGIN_TRUST_DECLINED', `the install of '${id}' ${manifest.version} was judged against a version of '${id}' that another install or remove replaced meanwhile; it was not installed`, {
    retryable: true,
    details: { plugin_id: id, namespace_owner: manifest.namespace_owner ?? null, ...changeDetails(judged.added, judged.changes), reason: 'baseline_changed' },
    hint: `Another process installed or removed '${id}' on this profile while the install was being accepted. Install again: it is judged, and asked, against what is installed now.`,
  });
}

/** Where a package an introspection start runs comes from, as the trust gate judges it: its kind, the owner it claims, its npm registry, the key that signed it. */
interface StartSource {
  readonly kind: PackageSourceKind;
  readonly owner: string | undefined;
  readonly registry?: string;
  readonly signer?: string;
  /** The staged package whole, as the install will compare it with the installed version (a bundle's: nothing is generated into it). */
  readonly staged?: StagedPackage;
}

/** The manifest file an npm server without one gets from its tools (openNpmSource writes it after the start). */
const GENERATED_MANIFEST_FILE = 'manifest.json';

/** Who and what a refusal names: the manifest's, or before an introspection start what is known of the package then. */
type RefusedInstall = Pick<NormalizedManifest, 'plugin_id' | 'version' | 'namespace_owner'>;

/** How many changed tools, or added powers, a refusal's message and hint name; `details` has them all. */
const NAMED_CHANGES = 8;

/** The first {@link NAMED_CHANGES} items as one phrase, the rest counted. */
function namedText<T>(items: readonly T[], text: (item: T) => string): string {
  const named = items.slice(0, NAMED_CHANGES).map(text).join(', ');
  return items.length > NAMED_CHANGES ? `${named} and ${items.length - NAMED_CHANGES} more` : named;
}

/**
 * Why an upgrade was refused or declined, with what changed: `details.reason`
 * is `capabilities_widened` when it adds a power, whether or not it also
 * makes tools easier to call (a power reaches past every tool's ceiling), else
 * `risk_lowered`; `details.added_capabilities` and `details.risk_changes` are
 * each present when not empty, so a caller reads both off one refusal.
 */
function changeDetails(added: readonly AddedCapability[], changes: readonly ToolRiskChange[]): Record<string, unknown> {
  if (added.length === 0 && changes.length === 0) return {};
  return {
    reason: added.length > 0 ? 'capabilities_widened' : 'risk_lowered',
    ...(added.length === 0 ? {} : { added_capabilities: added }),
    ...(changes.length === 0 ? {} : { risk_changes: changes }),
  };
}

/**
 * The refusal of an upgrade, with no one to ask (no `accept` callback), that
 * gives the plugin powers the version accepted before did not have and the
 * caller did not grant, or makes tools easier to call: one refusal naming both.
 */
function unaskedChangeRefusal(manifest: RefusedInstall, added: readonly AddedCapability[], changes: readonly ToolRiskChange[]): HostError {
  const id = manifest.plugin_id;
  const powers = added.length === 0 ? undefined : namedText(added, addedCapabilityText);
  const tools = changes.length === 0 ? undefined : namedText(changes, riskChangeText);
  const what = [
    ...(powers === undefined ? [] : [`gives it powers the version accepted before did not have (${powers})`]),
    ...(tools === undefined ? [] : [`makes tools easier to call than the version accepted before (${tools})`]),
  ].join(' and ');
  const review = [...(powers === undefined ? [] : [powers]), ...(tools === undefined ? [] : [tools])].join('; ');
  // A power the caller grants on the install is its own consent (the CLI's --grant-* flags); a tool's rating is not grantable.
  const grantIt = powers === undefined || added.every((a) => a.field === 'needs_user_creds') ? '' : ', or grant those powers on the install itself (the grant option; the CLI: --grant-network, --grant-egress, --grant-env, --grant-write-dir, --grant-client-request)';
  return hostError('PLUGIN_TRUST_DECLINED', `the install of '${id}' ${manifest.version} ${what} and no one was asked`, {
    details: { plugin_id: id, namespace_owner: manifest.namespace_owner ?? null, ...changeDetails(added, changes) },
    hint: `Review ${review}, then install again with an accept callback that accepts it (the CLI: answer y on a terminal, or pass --yes)${grantIt}.`,
  });
}

/**
 * The refusal of an install no one can be asked about (no `accept` callback),
 * or undefined when it may go on unasked: a package from another npm registry
 * than the version accepted before, or another npm package claiming its id
 * and owner, is another publisher's (`registry_changed`, `package_changed`,
 * which name the other changes too); else an upgrade
 * that widens powers or makes tools easier to call (see {@link unaskedChangeRefusal}).
 */
function unaskedRefusal(manifest: RefusedInstall, judged: TrustJudgement): HostError | undefined {
  const { registryChange, packageChange, unconsented, changes } = judged;
  const id = manifest.plugin_id;
  const ownerChange =
    registryChange !== undefined
      ? {
          what: `comes from another npm registry than the version accepted before (${registryChangeText(registryChange)})`,
          details: { reason: 'registry_changed', registry_from: registryChange.from, registry_to: registryChange.to },
          hint: `A package of the same name on another registry may be another publisher's. If ${registryChange.to} is meant (the npm.registry option or --registry changed on purpose), install again with an accept callback that accepts it (the CLI: answer y on a terminal, or pass --yes); else install with the registry of before.`,
        }
      : packageChange !== undefined
        ? {
            what: `is the npm package '${packageChange.to}', not '${packageChange.from}' the plugin was accepted as,`,
            details: { reason: 'package_changed', package_from: packageChange.from, package_to: packageChange.to },
            hint: `Another package claims this plugin's id and namespace owner; installed, it would take over the plugin's data directory and host env grants. If '${packageChange.to}' is meant to replace '${packageChange.from}', remove '${id}' first or install again with an accept callback that accepts it (the CLI: answer y on a terminal, or pass --yes).`,
          }
        : undefined;
  if (ownerChange === undefined) return changes.length === 0 && unconsented.length === 0 ? undefined : unaskedChangeRefusal(manifest, unconsented, changes);
  return hostError('PLUGIN_TRUST_DECLINED', `the install of '${id}' ${manifest.version} ${ownerChange.what} and no one was asked`, {
    details: { plugin_id: id, namespace_owner: manifest.namespace_owner ?? null, ...changeDetails(unconsented, changes), ...ownerChange.details },
    hint: ownerChange.hint,
  });
}

/** The error of a refused install; a grant beyond the declaration gets the hint that names its field. */
function installRefusal(source: string, violations: NonEmptyViolations): HostError {
  const error = violationsError(source, violations);
  const first = violations[0];
  if (first.code !== 'PLUGIN_GRANT_EXCEEDS_DECLARATION') return error;
  return hostError(first.code, error.message, { ...(error.details === undefined ? {} : { details: error.details }), hint: grantExceedsHint(first.pointer.replace(/^\/grant\/?/, '')) });
}

/** Whether two resolved settings records hold the same values (both absent counts as the same). */
function sameSettings(a: Readonly<Record<string, SettingValue>> | undefined, b: Readonly<Record<string, SettingValue>> | undefined): boolean {
  const text = (r: Readonly<Record<string, SettingValue>> | undefined): string => JSON.stringify(Object.entries(r ?? {}).sort(([x], [y]) => (x < y ? -1 : 1)));
  return text(a) === text(b);
}

/** The key that signed a plugin id's last removed install, as the owners record keeps it (see removePlugin). */
function removedSigner(owners: NamespaceOwners, id: string): string | undefined {
  return Object.hasOwn(owners, id) ? owners[id]?.signer : undefined;
}

/** `PLUGIN_SIGNATURE_INVALID` (`missing`) for an `npm:` source on a host that requires signatures: it cannot carry one. */
/** The refusal of a package from an archive or a registry that ships no LICENSE file, on a host that requires one. */
function licenseMissing(id: string, source: PackageSourceKind): HostError {
  return hostError('PLUGIN_LICENSE_MISSING', `plugin '${id}' from a ${source} package has no LICENSE file at its root`, { details: { plugin_id: id, source } });
}

function unsignedNpmSource(source: string): HostError {
  return hostError('PLUGIN_SIGNATURE_INVALID', `signatures are required and '${source}' is an npm: source, which carries no signature`, {
    details: { reason: 'missing', source: 'npm' },
    hint: 'An npm: source cannot be signed (npm checks registry integrity only): install the plugin as a signed archive instead (a .tgz, .zip or .mcpb holding its manifest, with its .sig), or open the host without requireSignatures.',
  });
}

/**
 * `PLUGIN_SIGNATURE_INVALID` (`signer_changed`) when the plugin, installed or
 * last removed (`version` absent), was signed by a key that did not sign this
 * package, unless `allowSignerChange`.
 */
function signerRefusal(recorded: { readonly signer: string | undefined; readonly version?: string }, id: string, staged: Pick<StagedPackage, 'signature'>, options: InstallOptions): HostError | undefined {
  const signer = staged.signature?.keyFingerprint;
  if (recorded.signer === undefined || signer === recorded.signer || options.allowSignerChange === true) return undefined;
  const which = recorded.version === undefined ? 'was signed by key' : `${recorded.version} was signed by key`;
  return hostError(
    'PLUGIN_SIGNATURE_INVALID',
    `plugin '${id}' ${which} ${recorded.signer}${recorded.version === undefined ? ' when it was removed' : ''}; this package is ${signer === undefined ? 'not signed' : `signed by key ${signer}`}`,
    {
      details: { reason: 'signer_changed', plugin_id: id, installed_signer: recorded.signer, signer: signer ?? null },
      hint: 'Sign the package with the key that signed the installed version, or pass allowSignerChange: true (CLI: --allow-signer-change) if the publisher changed keys.',
    },
  );
}

/**
 * Why a package may not replace the installed one, or `undefined`: the same
 * version is `PLUGIN_ALREADY_INSTALLED` unless `replace` (an unchanged
 * package never gets here), a lower one `PLUGIN_DOWNGRADE_REFUSED` unless
 * `allowDowngrade`, and a package not signed by the key that signed the
 * installed one `PLUGIN_SIGNATURE_INVALID` unless `allowSignerChange`: any
 * trusted key verifies a signature, so without this a package signed by
 * another trusted key (or, where signatures are optional, by none) would take
 * over the plugin's id, data and stored credentials. Versions that are not
 * semver have no order: only the same string is the same version.
 */
function versionRefusal(
  installed: LockedPlugin,
  manifest: Pick<NormalizedManifest, 'plugin_id' | 'version'>,
  staged: Pick<StagedPackage, 'digest' | 'signature'>,
  options: InstallOptions,
): HostError | undefined {
  const id = manifest.plugin_id;
  const signerChanged = signerRefusal({ signer: installed.package.signer, version: installed.version }, id, staged, options);
  if (signerChanged !== undefined) return signerChanged;
  const order = compareVersions(manifest.version, installed.version);
  const details = { plugin_id: id, version: manifest.version, installed_version: installed.version };
  if (order === 0 && options.replace !== true) {
    return hostError('PLUGIN_ALREADY_INSTALLED', `plugin '${id}' ${installed.version} is already installed from other bytes; pass replace to replace it`, {
      details: { ...details, installed_checksum: installed.package.checksum, checksum: staged.digest ?? '' },
    });
  }
  if (order === -1 && options.allowDowngrade !== true) {
    return hostError('PLUGIN_DOWNGRADE_REFUSED', `plugin '${id}' ${installed.version} is installed; ${manifest.version} is lower`, { details });
  }
  return undefined;
}

/**
 * Installs plugins into one profile in the contract's order: package source
 * (checksum, signature, limits) → parse → schema version → Shape 2 gate →
 * structure → namespace → env denylist → credential descriptors → schema refs
 * → schema store → staged copy into a fresh install root → executable mode
 * and hash (for `esm-module`, the entry module's hash) → one catalog transaction that re-checks ownership and conflicts
 * under the profile lock. A failure at any step leaves nothing behind: no
 * rows, no install root, no schema file it created, nothing in staging.
 * After every remove, and every install that got as far as the schema
 * store (committed or not), schema files no installed plugin references any
 * more are deleted (see {@link Installer.collectUnreferencedSchemas}).
 */
export class Installer {
  readonly #o: InstallerOptions;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #logger: Logger;

  /** @param options - The profile's store and the host's policies. */
  constructor(options: InstallerOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * Runs every install check on a package without installing it and reports
   * every violation; the catalog is only read. Package-level refusals
   * (checksum, signature, archive limits) fail the result instead.
   */
  inspect(source: string, options: InstallOptions = {}): ResultAsync<InstallInspection, HostError> {
    return this.#withStaged(source, options, async (staged) => {
      const report = await this.#inspectStaged(staged, options);
      if (report.isErr()) return err(report.error);
      const digest = staged.digest;
      return ok({
        report: report.value,
        package: { manifestFile: staged.manifestFile, source: staged.source, stats: staged.stats, ...(digest ? { digest } : {}) },
      });
    });
  }

  /**
   * Installs (or upgrades) a plugin from a directory or archive. An upgrade
   * replaces the plugin's rows and deletes its previous install root once the
   * new generation is published.
   */
  install(source: string, options: InstallOptions = {}): ResultAsync<InstallResult, HostError> {
    // Collected after the install, so that the install's own inspection is its first catalog read.
    return new ResultAsync(
      (async () => {
        const result = await this.#install(source, options);
        await this.#collectLeftovers();
        return result;
      })(),
    );
  }

  #install(source: string, options: InstallOptions): ResultAsync<InstallResult, HostError> {
    return this.#withStaged(source, options, async (staged) => {
      const current = await this.#o.store.snapshot();
      if (current.isErr()) return err(current.error);
      const report = await this.#inspectStaged(staged, options, current.value, true);
      if (report.isErr()) return err(report.error);
      const { manifest, violations, source: manifestSource } = report.value;
      if (hasViolations(violations)) return err(installRefusal(manifestSource, violations));
      if (manifest === undefined) return err(hostError('PLUGIN_MANIFEST_INVALID', `${manifestSource}: no manifest could be read`));
      const reinstall = await this.#reinstall(staged, manifest, options, current.value);
      if (reinstall.isErr()) return err(reinstall.error);
      if (reinstall.value.kind === 'unchanged') return ok({ ...reinstall.value.plugin, unchanged: true });
      const trusted = await this.#trust(staged, manifest, options, current.value);
      if (trusted.isErr()) return err(trusted.error);
      if (reinstall.value.kind !== 'repair') return this.#publish(staged, manifest, options, trusted.value);
      const { root, signer } = reinstall.value;
      return this.#publish(signer === undefined ? staged : { ...staged, signature: { keyFingerprint: signer } }, manifest, options, trusted.value, root);
    }, true);
  }

  /**
   * Compares the package with the version installed under its id: the same
   * version from the same bytes is an unchanged install, from other bytes
   * it is refused unless `replace`; a lower version is refused unless
   * `allowDowngrade`. The version rules run again under the profile lock
   * (see {@link versionRefusal}), since another process may install meanwhile.
   * `snapshot` is the one the inspection checked ownership on.
   */
  async #reinstall(staged: StagedPackage, manifest: NormalizedManifest, options: InstallOptions, snapshot: CatalogSnapshot): Promise<Result<Reinstall, HostError>> {
    const plugin = lookupPlugin(snapshot, { profile: snapshot.profile, plugin_id: manifest.plugin_id });
    if (plugin === undefined) {
      // A removed plugin's data directory and stored credentials stay: the next install of its id is held to the key that signed it.
      const refused = signerRefusal({ signer: removedSigner(snapshot.contents.namespace_owners, manifest.plugin_id) }, manifest.plugin_id, staged, options);
      return refused === undefined ? ok({ kind: 'new' }) : err(refused);
    }
    if (compareVersions(manifest.version, plugin.lock.version) === 0 && (await this.#samePackage(staged, plugin.lock))) {
      // The same bytes again repair an install root changed since install, and pin the tree of a lock row from before tree pins; under another grant they are installed again.
      const intact = plugin.lock.binding.tree !== undefined && (await verifyBindingTree(plugin.lock.binding)).isOk();
      const unchanged =
        intact &&
        sameGrant(plugin.lock.grant, options.grant) &&
        sameSettings(plugin.descriptor?.launch?.settings, manifest.launch?.settings) &&
        (await this.#sameLaunchArguments(plugin, manifest, options));
      if (unchanged) return ok({ kind: 'unchanged', plugin });
      // The bytes the recorded key signed, given again unsigned, keep that signer: otherwise a repair would drop the pin and let an unsigned upgrade in.
      const installedSigner = plugin.lock.package.signer;
      if (staged.signature === undefined) return ok({ kind: 'repair', root: plugin.lock.binding.install_root, ...(installedSigner === undefined ? {} : { signer: installedSigner }) });
      const refused = signerRefusal({ signer: installedSigner, version: plugin.lock.version }, manifest.plugin_id, staged, options);
      return refused === undefined ? ok({ kind: 'repair', root: plugin.lock.binding.install_root }) : err(refused);
    }
    const refused = versionRefusal(plugin.lock, manifest, staged, options);
    return refused === undefined ? ok({ kind: 'new' }) : err(refused);
  }

  /**
   * Same package digest when both have one (archives); otherwise the same
   * files with the same bytes as the install pinned (its tree pin), so that
   * a directory or npm package given again repairs an install root changed
   * since; a row from before tree pins is compared with its install root.
   */
  async #samePackage(staged: StagedPackage, installed: LockedPlugin): Promise<boolean> {
    const recorded = installed.package.checksum;
    if (staged.digest !== undefined && recorded !== '') return staged.digest === recorded;
    const tree = installed.binding.tree;
    const pinned = tree === undefined ? undefined : await pinnedEntries(installed.binding.install_root, tree);
    if (pinned?.isOk() === true) return sameAsPinned(staged.root, pinned.value);
    return sameTree(staged.root, installed.binding.install_root);
  }

  /**
   * Removes a plugin: its rows and install root go, its namespace owner stays
   * recorded, and its schema files go unless another plugin uses the same
   * body. An install root recorded outside this profile's plugins directory
   * is never deleted (`CATALOG_CORRUPT`, the rows are removed).
   */
  remove(pluginId: string): ResultAsync<void, HostError> {
    const removed: { root?: string } = {};
    return this.#o.store
      .transaction((current) => {
        const lock = Object.hasOwn(current.plugins, pluginId) ? current.plugins[pluginId] : undefined;
        if (lock === undefined) return err(hostError('PLUGIN_NOT_FOUND', `plugin '${pluginId}' is not installed`, { details: { plugin_id: pluginId } }));
        removed.root = lock.binding.install_root;
        return ok(removePlugin(current, pluginId));
      })
      .andThen(() => ResultAsync.fromSafePromise(this.#collectAfterCommit(pluginId)))
      .andThen(() =>
        ResultAsync.fromPromise(this.#deleteInstallRoot(pluginId, removed.root ?? ''), io(`Removing the install root of '${pluginId}'`)),
      )
      .andThen((deleted) =>
        deleted
          ? ok(undefined)
          : err(
              hostError('CATALOG_CORRUPT', `plugin '${pluginId}' was removed from the catalog, but its recorded install root ${removed.root ?? ''} is not one of this profile's install roots; it was left untouched`, {
                details: { plugin_id: pluginId, install_root: removed.root ?? null, removed: true },
              }),
            ),
      );
  }

  /**
   * Deletes the schema-store files that no installed plugin of the profile
   * references and no install in progress (in any process) relies on, and
   * temporary files a crashed install left; returns the deleted file names.
   * Install and remove call it themselves; a host calls it to collect what
   * a process killed between a commit and its collection left behind,
   * without waiting for the next install or remove.
   */
  collectUnreferencedSchemas(): ResultAsync<string[], HostError> {
    return ResultAsync.fromPromise(
      collectSchemaGarbage(this.#o.layout, this.#o.store, { clock: this.#clock, random: this.#random }),
      io('Collecting the schema store'),
    ).andThen((collected) => collected);
  }

  /**
   * Deletes what installs killed mid-way left: staging directories of dead
   * installs, and install roots that neither the lock nor an install in
   * progress (in any process) names. Every install runs it when done; a host
   * calls it to clean up without waiting for the next install.
   */
  collectInstallLeftovers(): ResultAsync<CollectedLeftovers, HostError> {
    return ResultAsync.fromPromise(collectInstallLeftovers(this.#o.layout, this.#o.store, this.#clock), (cause) =>
      isHostError(cause) ? cause : io('Collecting install leftovers')(cause),
    );
  }

  /** A collection after an install: its failure leaves the leftovers for the next one and does not change the install's result. */
  async #collectLeftovers(): Promise<void> {
    const collected = await this.collectInstallLeftovers();
    if (collected.isErr()) this.#logger.warn({ code: collected.error.code }, `install leftovers were not collected: ${collected.error.message}`);
    else if (collected.value.staging.length + collected.value.installRoots.length > 0) this.#logger.info({ ...collected.value }, 'install leftovers collected');
  }

  /** A collection after a committed or undone change: its failure leaves files for the next one and does not change the outcome. */
  async #collectAfterCommit(pluginId: string): Promise<void> {
    const collected = await this.collectUnreferencedSchemas();
    if (collected.isErr()) {
      this.#logger.warn({ plugin_id: pluginId, code: collected.error.code }, `schema files were not collected: ${collected.error.message}`);
    }
  }

  /**
   * Writes the install's schema files under the schema store's lock, pinned
   * first so that no collection deletes them before the install's
   * transaction has committed or failed. The pin's path is left in `pin`
   * as soon as it exists, so that a failure after it can remove it.
   */
  async #storeSchemasPinned(schemas: NormalizedManifest['schemas'], nonce: string, pin: { path?: string }): Promise<Result<void, HostError>> {
    const layout = this.#o.layout;
    return withSchemaStoreLock(layout, { clock: this.#clock, random: this.#random }, async () => {
      const files = schemas.map((s) => layout.schemaFileName(s.ref, s.digest));
      pin.path = await writePin(layout, nonce, files, this.#clock);
      for (const schema of schemas) await storeSchema(layout, schema, nonce);
      await syncDirectory(layout.schemaStoreDir);
    });
  }

  #withStaged<T>(
    source: string,
    options: InstallOptions,
    body: (staged: StagedPackage) => Promise<Result<T, HostError>>,
    installing = false,
  ): ResultAsync<T, HostError> {
    const o = this.#o;
    if (!isNpmSource(source) && options.manifest !== undefined) {
      return errAsync(
        hostError('HOST_INVALID_OPTIONS', 'option manifest applies to npm: sources only; a directory or archive package carries its own manifest', { details: { option: 'manifest' } }),
      );
    }
    if (!isNpmSource(source) && options.bin !== undefined) {
      return errAsync(
        hostError('HOST_INVALID_OPTIONS', "option bin applies to npm: sources only; a directory or archive package's manifest names its executable", { details: { option: 'bin' } }),
      );
    }
    const opened: ResultAsync<StagedPackage, HostError> = isNpmSource(source) ? this.#openNpm(source, options, installing) : openPackageSource(source, {
      stagingRoot: o.layout.stagingDir,
      clock: this.#clock,
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
          .catch((cause: unknown) => err(io('Installing the package')(cause)))
          .finally(() => staged.discard().catch(() => undefined)),
      ),
    );
  }

  /**
   * Every check of the staged package against the profile as it is now, or as `read` (an already taken snapshot) shows
   * it. `installing`: an install's, whose bundle start is judged as the install is (see {@link Installer.#consentToStart}).
   */
  async #inspectStaged(staged: StagedPackage, options: InstallOptions, read?: CatalogSnapshot, installing = false): Promise<Result<ManifestReport, HostError>> {
    const current = read === undefined ? await this.#o.store.snapshot() : ok(read);
    if (current.isErr()) return err(current.error);
    const snapshot = current.value;
    if (staged.manifestFile === 'manifest.json') {
      const bundle = await this.#inspectBundle(staged, snapshot, options, installing);
      if (bundle.isErr() || bundle.value !== undefined) return bundle as Result<ManifestReport, HostError>;
    }
    const manifestPath = join(staged.root, staged.manifestFile);
    const firstParty = options.firstParty ?? false;
    const base = {
      preset: this.#o.preset ?? 'neutral',
      firstParty,
      ...(this.#o.allowedShapes === undefined ? {} : { allowedShapes: this.#o.allowedShapes }),
    } as const;
    // The plugin id is needed to tell a collision with another plugin's schema
    // from this plugin's own previous version, so a first pass reads it. It
    // skips the bundles: schema_refs violations are not structural, so they
    // never decide whether the id is reached.
    let pluginId: string | undefined;
    const first = await new ManifestValidator(base).inspectFile(manifestPath, {
      readSchemaBundle: () => Promise.resolve(undefined),
      hostChecks: (m) => {
        pluginId = m.plugin_id;
        return [];
      },
    });
    if (first.isErr()) return err(first.error);
    const validator = new ManifestValidator({ ...base, knownSchemaDigests: knownSchemaDigests(snapshot.contents.variants, pluginId) });
    // A manifest the host generated for a source that declares nothing (an introspected npm server) has the default's powers, which a grant widens.
    const asStaged = (m: NormalizedManifest): NormalizedManifest => (staged.capabilitiesSource === undefined ? m : { ...m, capabilities_source: staged.capabilitiesSource });
    const report = await validator.inspectFile(manifestPath, { hostChecks: (m) => this.#hostChecks(asStaged(m), snapshot, options) });
    return report.map((r) => (r.manifest === undefined ? r : { ...r, manifest: asStaged(r.manifest) }));
  }

  /** Stages an `npm:` source (see openNpmSource): fetched by npm, whose integrity check stands in for a checksum, which it does not have. */
  #openNpm(source: string, options: InstallOptions, installing: boolean): ResultAsync<StagedPackage, HostError> {
    if (options.checksum !== undefined || options.signature !== undefined) {
      const option = options.checksum === undefined ? 'signature' : 'checksum';
      return errAsync(
        hostError('HOST_INVALID_OPTIONS', `option ${option} does not apply to an npm: source; npm checks each package against its registry integrity`, { details: { option } }),
      );
    }
    const refused = this.#npmSourceRefusal(source, options.grant);
    if (refused !== undefined) return errAsync(refused);
    // The introspection start gets the network the installed plugin will have (a grant widens the host default), never more.
    const capabilities = options.grant === undefined ? ok(DEFAULT_CAPABILITIES) : grantedCapabilities(INTROSPECTED, options.grant);
    if (capabilities.isErr()) return errAsync(capabilities.error);
    const consent = (start: NetworkedStart): Promise<Result<void, HostError>> => this.#consentToStart(start, capabilities.value, options, installing);
    const granted: IntrospectionGrant = {
      clientRequests: options.grant?.client_requests,
      env: options.grant?.env_allow,
      network: networkOf(capabilities.value),
      ...(options.grant?.fs_write_dir === undefined ? {} : { fsWriteDir: options.grant.fs_write_dir }),
      // An install judges every start, asked or not: what it would be refused unasked is refused before any code of the package runs.
      // An inspection installs nothing to refuse: only a start with network is asked about.
      ...(installing || options.accept !== undefined ? { consent } : {}),
    };
    // The bin an earlier install chose stays the server's unless this install names another (an upgrade keeps it).
    const recordedBin = async (id: string): Promise<string | undefined> => {
      const snapshot = await this.#o.store.snapshot();
      const plugins = snapshot.isOk() ? snapshot.value.contents.plugins : {};
      // Once removed, the owner record keeps the bin it ran with, as it keeps its powers.
      return Object.hasOwn(plugins, id) ? plugins[id]?.package.bin : snapshot.isOk() ? ownerRecordOf(snapshot.value, id)?.bin : undefined;
    };
    // The same files as the installed plugin's, under the same grant: the tool list its install recorded for them stands in for a start.
    const recordedIntrospection = async (id: string, tree: string, expected: Readonly<Record<string, unknown>>): Promise<boolean> => {
      const snapshot = await this.#o.store.snapshot();
      const plugin = snapshot.isOk() ? lookupPlugin(snapshot.value, { profile: snapshot.value.profile, plugin_id: id }) : undefined;
      const pin = plugin?.lock.binding.tree;
      if (plugin === undefined || pin === undefined || !sameGrant(plugin.lock.grant, options.grant)) return false;
      // Other arguments may make the server list other tools.
      const args = options.args === undefined ? [] : resolveLaunchArgs(options.args, this.#o.layout.dataDir(id));
      const recorded = launchArgumentsOf(plugin.lock.binding);
      if (args.length !== recorded.length || args.some((arg, i) => arg !== recorded[i])) return false;
      return reuseRecordedManifest(plugin.lock.binding.install_root, pin, tree, expected);
    };
    return openNpmSource(source, {
      ...this.#npmSourceOptions(options.args, granted),
      ...(options.manifest === undefined ? {} : { manifest: options.manifest }),
      ...(options.bin === undefined ? { recordedBin } : { bin: options.bin }),
      ...(installing ? { recordedIntrospection } : {}),
    });
  }

  /**
   * The trust gate before an introspection start, once the package is read
   * and before any code of it runs: the install's own judgement (see
   * {@link judgeSubject}) of what is known then (no tools yet). With no one
   * to ask (`accept` absent), what the install would be refused for whatever
   * the server lists is refused now, so that nothing of it runs first: a
   * package from another npm registry than the version accepted before
   * (`registry_changed`), another npm package than the one the plugin id was
   * accepted as (`package_changed`: the id of a server without a manifest
   * is made from its package name, see pluginIdOf), a power or credential
   * name the grant does not name; and the owner, signer and version
   * refusals (see {@link Installer.#refusalBeforeStart}). With `accept`, a start with network is asked about (`stage:
   * 'introspection'`, with the powers, registry and package it changes), unless the
   * install's own question would be spared: the same owner accepted these
   * powers before. Declining is PLUGIN_TRUST_DECLINED.
   *
   * Judged on a snapshot, not under the profile lock: a person may be asked,
   * and is not kept waiting under it. Another install meanwhile cannot slip a
   * power past the install: the install is judged again when its tools are
   * known, and once more under the lock (see {@link trustUnderLock}).
   */
  async #consentToStart(
    start: NetworkedStart,
    capabilities: DeclaredCapabilities,
    options: InstallOptions,
    installing: boolean,
    source: StartSource = { kind: 'npm', owner: start.namespace_owner ?? undefined, ...(start.registry === undefined ? {} : { registry: start.registry }) },
  ): Promise<Result<void, HostError>> {
    const snapshot = await this.#o.store.snapshot();
    if (snapshot.isErr()) return err(snapshot.error);
    if (installing) {
      const ownerChange = await this.#refusalBeforeStart(snapshot.value, start, source, options);
      if (ownerChange !== undefined) return err(ownerChange);
    }
    // The id of a server without a manifest comes from its package name, but not one to one (pluginIdOf: `a.b` and `a_b` are both `a-b`):
    // another package of an installed id's is known by its name before it runs, as the install knows it (review R9 F3).
    const packageName = registryPackageNameOf({ kind: source.kind, path: start.source_path, ...(source.registry === undefined ? {} : { registry: source.registry }) });
    const subject: TrustSubject = { id: start.plugin_id, capabilities, credentials: start.credentials ?? [], changes: [], owner: source.owner, registry: source.registry, packageName };
    const judged = judgeSubject(snapshot.value, subject, options.grant);
    const { accept } = options;
    if (accept === undefined) {
      // Only an install refuses unasked (wrap and an inspection install nothing); without a callback they are not judged at all.
      if (!installing) return ok(undefined);
      const refused = unaskedRefusal({ plugin_id: start.plugin_id, version: start.version, ...(start.namespace_owner === null ? {} : { namespace_owner: start.namespace_owner }) }, judged);
      return refused === undefined ? ok(undefined) : err(refused);
    }
    if (!hasNetwork(start.network) || judged.spared) return ok(undefined);
    const { added, registryChange, packageChange } = judged;
    const request: TrustRequest = {
      plugin_id: start.plugin_id,
      display_name: start.name,
      version: start.version,
      namespace_owner: start.namespace_owner,
      tos: null,
      risk: start.risk,
      license: start.license,
      source: source.kind,
      source_path: start.source_path,
      capabilities,
      tools: [],
      stage: 'introspection',
      ...(subject.credentials.length === 0 ? {} : { credentials: subject.credentials }),
      ...(added.length === 0 ? {} : { added_capabilities: added }),
      ...(registryChange === undefined ? {} : { registry_change: registryChange }),
      ...(packageChange === undefined ? {} : { package_change: packageChange }),
    };
    const accepted = await Promise.resolve()
      .then(() => accept(request))
      .catch(() => false);
    if (accepted === true) return ok(undefined);
    return err(
      hostError('PLUGIN_TRUST_DECLINED', `the start of '${start.plugin_id}' ${start.version} with network, to list its tools, was not accepted`, {
        details: {
          plugin_id: start.plugin_id,
          namespace_owner: start.namespace_owner,
          stage: 'introspection',
          ...changeDetails(added, []),
          ...(registryChange === undefined ? {} : { reason: 'registry_changed', registry_from: registryChange.from, registry_to: registryChange.to }),
          ...(registryChange !== undefined || packageChange === undefined ? {} : { reason: 'package_changed', package_from: packageChange.from, package_to: packageChange.to }),
        },
      }),
    );
  }

  /**
   * The refusals of the install that need nothing its start would list,
   * judged before the start (so that nothing of the package runs first):
   * no LICENSE file where the host requires one (PLUGIN_LICENSE_MISSING),
   * another recorded namespace owner (PLUGIN_NAMESPACE_CONFLICT, or a
   * reserved prefix), a package not signed by the key that signed the plugin
   * (PLUGIN_SIGNATURE_INVALID `signer_changed`), a lower version than the one
   * installed (PLUGIN_DOWNGRADE_REFUSED unless `allowDowngrade`), and the
   * installed version from other files (PLUGIN_ALREADY_INSTALLED unless
   * `replace`), as the install's inspection and {@link versionRefusal} judge
   * them. The installed version again from the same files (see
   * {@link Installer.#sameBeforeStart}), or files not comparable before the
   * start, is left to the install: the same bytes, given unsigned, repair it
   * under the recorded signer.
   */
  async #refusalBeforeStart(snapshot: CatalogSnapshot, start: NetworkedStart, source: StartSource, options: InstallOptions): Promise<HostError | undefined> {
    const id = start.plugin_id;
    // Whether the LICENSE file the host requires is there needs no tool list: the server of a package without one ran, with the install's network, before the trust gate refused it (review R12 F5).
    const root = source.staged?.root ?? start.root;
    if (this.#o.requireLicense === true && source.kind !== 'directory' && root !== undefined && !(await hasLicenseFile(root).catch(() => false))) return licenseMissing(id, source.kind);
    const claim: NamespaceClaim = { plugin_id: id, ...(source.owner === undefined ? {} : { namespace_owner: source.owner }), firstParty: options.firstParty ?? false, devAllowNamespaceConflict: options.devAllowNamespaceConflict ?? false };
    const namespace = this.#o.namespaceLock.check(claim, snapshot.contents.namespace_owners);
    // A missing owner is the validator's own violation, reported with the manifest's others.
    if (namespace.isErr() && namespace.error.details?.reason !== 'owner_missing') return namespace.error;
    const staged = { ...(source.signer === undefined ? {} : { signature: { keyFingerprint: source.signer } }), ...(source.staged?.digest === undefined ? {} : { digest: source.staged.digest }) };
    const installed = Object.hasOwn(snapshot.contents.plugins, id) ? snapshot.contents.plugins[id] : undefined;
    if (installed === undefined) return signerRefusal({ signer: removedSigner(snapshot.contents.namespace_owners, id) }, id, staged, options);
    if (compareVersions(start.version, installed.version) === 0 && (await this.#sameBeforeStart(installed, start, source)) !== false) return undefined;
    return versionRefusal(installed, start, staged, options);
  }

  /**
   * Whether the package a start would run is the installed version's files
   * (as {@link Installer.#samePackage} compares them), before the start:
   * a bundle's whole staged package, an npm server's files but the manifest
   * its tools make (other files are other bytes whatever it lists; the same
   * files are the same package only if it lists the same tools, which the
   * install compares). Undefined when that cannot be told before the start
   * (a lock row from before tree pins, a pin that no longer reads).
   */
  async #sameBeforeStart(installed: LockedPlugin, start: NetworkedStart, source: StartSource): Promise<boolean | undefined> {
    if (source.staged !== undefined) return this.#samePackage(source.staged, installed);
    const tree = installed.binding.tree;
    if (start.root === undefined || tree === undefined) return undefined;
    const pinned = await pinnedEntries(installed.binding.install_root, tree);
    if (pinned.isErr()) return undefined;
    // An entry is `f <path> <size> <sha256>` or `d <path>`: the path ends before the last two fields.
    const generated = (entry: string): boolean => entry.startsWith('f ') && entry.slice(2, entry.lastIndexOf(' ', entry.lastIndexOf(' ') - 1)) === GENERATED_MANIFEST_FILE;
    return sameAsPinned(start.root, new Set([...pinned.value].filter((entry) => !generated(entry))));
  }

  /**
   * Why the host refuses to run anything of an `npm:` source, checked before npm runs: under `requireSignatures` it is
   * an unsigned package (npm checks a registry's integrity, and a local tarball's only against itself: nothing to
   * sign), and a denylisted env name granted is refused (a registry package's id is known from its name already).
   */
  #npmSourceRefusal(source: string, grant: PluginGrant | undefined): HostError | undefined {
    if (this.#o.requireSignatures === true) return unsignedNpmSource(source);
    const spec = parseNpmSpec(source);
    const grantedEnv = checkGrantedEnv(spec.isOk() && spec.value.kind === 'registry' ? { id: pluginIdOf(spec.value.name) } : { source }, grant, this.#o.envDenylist);
    return grantedEnv.isErr() ? grantedEnv.error : undefined;
  }

  /**
   * The manifest an `npm:` source would be installed with, for a person to
   * review: the package's own, or one generated from the server's
   * `tools/list` in a sandboxed start (`needs_review`). Nothing is installed.
   */
  wrap(source: string, options: WrapOptions = {}): ResultAsync<WrappedServer, HostError> {
    // wrap runs the package's server as an install would: the same policy refuses it first.
    const refused = this.#npmSourceRefusal(source, options.env === undefined ? undefined : { env_allow: options.env });
    if (refused !== undefined) return errAsync(refused);
    // Checked as an install's grant is (a malformed destination fails here); without an accept callback, the caller asking for the network is its consent.
    const network = grantedCapabilities(INTROSPECTED, { ...(options.network === undefined ? {} : { network: options.network }), ...(options.egress === undefined ? {} : { egress: options.egress }) });
    if (network.isErr()) return errAsync(network.error);
    const { accept } = options;
    return wrapNpmSource(source, {
      ...this.#npmSourceOptions(options.args, {
        clientRequests: options.clientRequests,
        env: options.env,
        network: networkOf(network.value),
        // The same question an install asks before the same start.
        // wrap installs nothing, so nothing is refused unasked: only a start with network is asked about.
        ...(accept === undefined ? {} : { consent: (start: NetworkedStart) => this.#consentToStart(start, network.value, { accept }, false) }),
      }),
      ...(options.bin === undefined ? {} : { bin: options.bin }),
    });
  }

  // The introspection start gets what the install grants: the client requests announced, the granted env names with the host's values, and the granted network.
  #npmSourceOptions(args: readonly string[] | undefined, granted: IntrospectionGrant): Omit<NpmSourceOptions, 'manifest'> {
    const o = this.#o;
    const { clientRequests, env, network, consent, fsWriteDir } = granted;
    return {
      stagingRoot: o.layout.stagingDir,
      clock: this.#clock,
      ...(o.limits === undefined ? {} : { limits: o.limits }),
      ...(o.npm === undefined ? {} : { npm: o.npm }),
      ...(args === undefined ? {} : { args }),
      ...(o.spawner === undefined
        ? {}
        : {
            introspection: {
              spawner: o.spawner,
              ...(o.introspectionTimeoutMs === undefined ? {} : { timeoutMs: o.introspectionTimeoutMs }),
              ...(o.startupTimeoutMs === undefined ? {} : { requestTimeoutMs: o.startupTimeoutMs }),
              envDenylist: o.envDenylist,
              hiddenPaths: [o.layout.root],
              ...(o.searchPath === undefined ? {} : { searchPath: o.searchPath }),
              ...(clientRequests === undefined ? {} : { clientRequests }),
              ...(env === undefined || env.length === 0 ? {} : { grantedEnv: { names: env, hostEnv: o.hostEnv ?? {}, denylist: o.envDenylist } }),
              ...(network === undefined ? {} : { grantedNetwork: network }),
              ...(fsWriteDir === undefined ? {} : { fsWriteDir }),
              ...(consent === undefined ? {} : { consent }),
            },
          }),
    };
  }

  /** An MCP Bundle's checks (see readBundleManifest) and the host checks; undefined when the manifest.json is not a bundle's. */
  async #inspectBundle(staged: StagedPackage, snapshot: CatalogSnapshot, options: InstallOptions, installing: boolean): Promise<Result<ManifestReport | undefined, HostError>> {
    const root = staged.root;
    const spawner = this.#o.spawner;
    const read = await readBundleManifest(root, {
      defaultCapabilities: DEFAULT_CAPABILITIES,
      dataDirOf: (id) => this.#o.layout.dataDir(id),
      searchPath: this.#o.searchPath ?? process.env.PATH ?? '',
      ...(options.settings === undefined ? {} : { settings: options.settings }),
      // compatibility.runtimes: the interpreter found on the search path is asked its version in the sandbox only (review R6 N2).
      ...(spawner === undefined ? {} : { interpreterVersion: confinedInterpreterVersion({ spawner, hiddenPaths: [this.#o.layout.root] }) }),
      ...(spawner === undefined ? {} : { listTools: (server: BundleServerStart) => this.#listBundleTools(server, spawner, staged, options, installing) }),
    });
    if (read.isErr() || read.value?.manifest === undefined) return read;
    const violations = sortViolations(this.#hostChecks(read.value.manifest, snapshot, options));
    return ok(violations.length === 0 ? read.value : { ...read.value, violations, manifest: undefined });
  }

  /** The tools a staged bundle's server lists in one sandboxed start (see introspectServer), each with its risk class from its annotations. */
  async #listBundleTools(
    server: BundleServerStart,
    spawner: SandboxSpawner,
    staged: StagedPackage,
    options: InstallOptions,
    installing: boolean,
  ): Promise<Result<readonly ManifestTool[], HostError>> {
    const { source } = staged;
    const signer = staged.signature?.keyFingerprint;
    // A denylisted env name granted is refused before the bundle's server starts, as the host checks after this start would.
    const grantedEnv = checkGrantedEnv(server.plugin === undefined ? { source: source.path } : { id: server.plugin.plugin_id }, options.grant, this.#o.envDenylist);
    if (grantedEnv.isErr()) return err(grantedEnv.error);
    // A bundle declares no capabilities: its start gets the network the install grants, as the installed plugin will (see #openNpm).
    const capabilities = options.grant === undefined ? ok(DEFAULT_CAPABILITIES) : grantedCapabilities(INTROSPECTED, options.grant);
    if (capabilities.isErr()) return err(capabilities.error);
    const network = networkOf(capabilities.value);
    // An install judges every start, asked or not (see #openNpm); an inspection asks about a start with network only.
    if (server.plugin !== undefined && (installing || (hasNetwork(network) && options.accept !== undefined))) {
      const { plugin } = server;
      const start: NetworkedStart = {
        plugin_id: plugin.plugin_id,
        name: plugin.name,
        version: plugin.version,
        // A bundle declares no owner (the install question shows none); the owner recorded for it is the bundle itself, as namespaceOwnerOf names it.
        namespace_owner: null,
        license: plugin.license ?? null,
        risk: BUNDLE_NEEDS_REVIEW,
        source_path: source.path,
        network,
        credentials: plugin.credentials,
      };
      const consented = await this.#consentToStart(start, capabilities.value, options, installing, {
        kind: source.kind,
        owner: `mcpb:${plugin.plugin_id}`,
        ...(signer === undefined ? {} : { signer }),
        staged,
      });
      if (consented.isErr()) return err(consented.error);
    }
    const workDir = join(dirname(server.root), 'introspection');
    const listed = await introspectServer({
      root: server.root,
      executable: server.executable,
      args: server.args,
      // The server is not yet judged against the env denylist (the host checks run after this start): it never sees a denied name.
      env: Object.fromEntries(Object.entries(server.env).filter(([name]) => !this.#o.envDenylist.isProhibited(name))),
      ...(server.interpreter === undefined ? {} : { interpreter: server.interpreter }),
      ...(server.pythonPath === undefined ? {} : { pythonPath: server.pythonPath }),
      spawner,
      workDir,
      hiddenPaths: [this.#o.layout.root],
      timeoutMs: this.#o.introspectionTimeoutMs ?? DEFAULT_INTROSPECTION_TIMEOUT_MS,
      ...(this.#o.startupTimeoutMs === undefined ? {} : { requestTimeoutMs: this.#o.startupTimeoutMs }),
      envDenylist: this.#o.envDenylist,
      ...(server.plugin === undefined ? {} : { pluginId: server.plugin.plugin_id }),
      ...(this.#o.searchPath === undefined ? {} : { searchPath: this.#o.searchPath }),
      grantedNetwork: network,
    });
    // However deep the server's writes in its data directory go (removeTree).
    await removeTree(workDir);
    return listed.map((tools) =>
      tools.map((tool): ManifestTool => ({
        name: tool.name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        risk_class: riskClassOf(tool),
        confirmation_policy: 'none',
        null_elision_safe_fields: [],
        capabilities: [],
        scopes: [],
      })),
    );
  }

  /**
   * The install's trust gate, after every check passed and before anything is
   * written: a package from an archive or a registry must ship a LICENSE
   * when the host requires one, and the `accept` callback, when given, must
   * accept the plugin's {@link TrustRequest}. An owner recorded for the
   * plugin id by an earlier install (kept across remove) already accepted:
   * its reinstalls and upgrades are not asked again, unless the plugin would
   * get a power it was not accepted with (see {@link widensCapabilities}):
   * the installed plugin's, or after a remove those recorded with the owner
   * (a remove from before that record is asked again), or a tool would be
   * easier to call (see {@link riskLowerings}), which is asked, whoever the
   * owner. The owner string is the package's own claim. Without `accept`,
   * the same two changes are refused, whoever the owner: an owner change
   * alone is not (another recorded owner is PLUGIN_NAMESPACE_CONFLICT unless
   * the caller passed the dev profile's devAllowNamespaceConflict, its
   * consent), and neither is a power the caller's own `grant` names.
   */
  async #trust(staged: StagedPackage, manifest: NormalizedManifest, options: InstallOptions, snapshot: CatalogSnapshot): Promise<Result<TrustedBaseline, HostError>> {
    const id = manifest.plugin_id;
    const source = staged.source.kind;
    if (this.#o.requireLicense === true && source !== 'directory' && !(await hasLicenseFile(staged.root).catch(() => false))) return err(licenseMissing(id, source));
    // Calling install accepts what a person can read off the package, not a change from what they accepted before:
    // tools made easier to call, or powers the plugin did not have, need someone to say yes to them.
    const baseline = trustBaselineOf(snapshot, id);
    const judged = judgeTrust(snapshot, manifest, options, this.#claimOf(manifest, options).namespace_owner, staged.source);
    const { changes, added, spared, registryChange, packageChange } = judged;
    if (options.accept === undefined) {
      const refused = unaskedRefusal(manifest, judged);
      return refused === undefined ? ok({ baseline }) : err(refused);
    }
    if (spared) return ok({ baseline });
    const request = installRequest(manifest, staged.source, judged);
    // Kept before the callback sees it: what it accepted is compared under the lock with what would be asked then.
    const asked = canonicalJson(request);
    const answer = await Promise.resolve()
      .then(() => options.accept?.(request))
      .catch(() => false);
    if (answer === true) return ok({ baseline, asked });
    return err(
      hostError('PLUGIN_TRUST_DECLINED', `the install of '${id}' ${manifest.version} was not accepted`, {
        details: {
          plugin_id: id,
          namespace_owner: request.namespace_owner,
          ...changeDetails(added, changes),
          ...(packageChange === undefined ? {} : { reason: 'package_changed', package_from: packageChange.from, package_to: packageChange.to }),
          ...(registryChange === undefined ? {} : { reason: 'registry_changed', registry_from: registryChange.from, registry_to: registryChange.to }),
        },
      }),
    );
  }

  #claimOf(manifest: NormalizedManifest, options: InstallOptions): NamespaceClaim {
    return namespaceClaimOf(manifest, { firstParty: options.firstParty ?? false, devAllowNamespaceConflict: options.devAllowNamespaceConflict ?? false });
  }

  #hostChecks(manifest: NormalizedManifest, snapshot: CatalogSnapshot, options: InstallOptions): Violation[] {
    return manifestHostChecks(manifest, {
      namespaceLock: this.#o.namespaceLock,
      envDenylist: this.#o.envDenylist,
      dataDirOf: (id) => this.#o.layout.dataDir(id),
      namespaceOwners: snapshot.contents.namespace_owners,
      variants: snapshot.contents.variants,
      grant: options.grant,
      firstParty: options.firstParty ?? false,
      devAllowNamespaceConflict: options.devAllowNamespaceConflict ?? false,
    });
  }


  /**
   * `trusted`: what the trust gate judged the install against (see {@link trustBaselineOf}) and what it asked, checked
   * again under the profile lock. `repairs`: the install root of the same package whose tree changed (or was never pinned); it may
   * be replaced while still installed.
   */
  async #publish(staged: StagedPackage, manifest: NormalizedManifest, options: InstallOptions, trusted: TrustedBaseline, repairs?: string): Promise<Result<InstalledPlugin, HostError>> {
    const { plugin_id: id } = manifest;
    const code = pinnedCodeOf(manifest, options.pythonIndexUrl);
    if (code === undefined) {
      return err(hostError('PLUGIN_SHAPE_UNSUPPORTED', noExecutableMessage(manifest), { details: { plugin_id: id, shape: manifest.shape } }));
    }
    const layout = this.#o.layout;
    const nonce = hex(this.#random.bytes(6));
    const installRoot = layout.installRoot(id, manifest.version, nonce);
    // Before anything is written: a tree renamed into a root where its paths are too long could not be deleted again.
    const tooLong = installPathRefusal(installRoot, staged.longestEntryBytes);
    if (tooLong !== undefined) return err(tooLong);
    const pin: { path?: string } = {};
    let moved = false;
    // Undo deletes only what this install created: an install root it did
    // not move into place (the rename failed) is not its to delete. Its
    // schema files go with the collection once its pin is gone; files
    // another plugin references or another install has pinned stay.
    const undo = async (): Promise<void> => {
      if (moved) await removeTree(installRoot);
      await rmdir(dirname(installRoot)).catch(() => undefined);
      if (pin.path !== undefined) {
        await unpin(pin.path);
        await this.#collectAfterCommit(id);
      }
    };
    let committed: CatalogSnapshot;
    const replaced: { root?: string } = {};
    let binding: ExecutableBindingRecord;
    try {
      if (manifest.schemas.length > 0) {
        const stored = await this.#storeSchemasPinned(manifest.schemas, nonce, pin);
        if (stored.isErr()) {
          await undo();
          return err(stored.error);
        }
      }
      await mkdir(dirname(installRoot), { recursive: true, mode: 0o755 });
      // Named before it exists, so that no collection of leftovers takes it for one.
      await claimInstallRoot(staged.root, installRoot);
      await rename(staged.root, installRoot);
      moved = true;
      const bound = await this.#bind(id, installRoot, code, await this.#argsOf(code, options, id, installRoot), staged.writtenFiles);
      if (bound.isErr()) {
        await undo();
        return err(bound.error);
      }
      binding = bound.value;
      if (this.#o.durableInstall === true) await syncTree(installRoot, [dirname(installRoot), layout.pluginsDir]);
      const status = options.initialStatus ? await options.initialStatus(manifest) : 'installed_pending_restart';
      const capabilities = grantedCapabilities(manifest, options.grant);
      if (capabilities.isErr()) {
        await undo();
        return err(capabilities.error);
      }
      const granted = { capabilities: capabilities.value, ...(options.grant === undefined ? {} : { grant: options.grant }) };
      const records = pluginRecords(manifest, binding, staged, status, new Date(this.#clock.now()).toISOString(), granted);
      const transaction = await this.#o.store.transaction((current, now) => {
        // Checked again under the profile lock: another process may have
        // claimed the prefix, an id or a schema ref since the inspection.
        const claimed = this.#o.namespaceLock.claim(this.#claimOf(manifest, options), current.namespace_owners);
        if (claimed.isErr()) return err(claimed.error);
        const conflict = conflictUnderLock(id, records.variants, current.variants);
        if (conflict !== undefined) return err(conflict);
        const previous = Object.hasOwn(current.plugins, id) ? current.plugins[id] : undefined;
        const refused =
          previous === undefined
            ? signerRefusal({ signer: removedSigner(current.namespace_owners, id) }, id, staged, options)
            : previous.binding.install_root === repairs
              ? undefined
              : versionRefusal(previous, manifest, staged, options);
        if (refused !== undefined) return err(refused);
        // Another install or remove of the id since the trust gate changed what this one replaces: judged again, never asked (see trustUnderLock).
        const untrusted =
          trustBaselineOf(now, id) === trusted.baseline ? undefined : trustUnderLock(now, manifest, options, { owner: this.#claimOf(manifest, options).namespace_owner, source: staged.source }, trusted);
        if (untrusted !== undefined) return err(untrusted);
        if (previous !== undefined) replaced.root = previous.binding.install_root;
        return ok(putPlugin({ ...current, namespace_owners: claimed.value }, records));
      });
      if (transaction.isErr()) {
        await undo();
        return err(transaction.error);
      }
      committed = transaction.value;
    } catch (cause) {
      await undo();
      return err(io(`Installing '${id}'`)(cause));
    }
    // Published: from here on nothing may undo the install. A previous root
    // or schema file that cannot be deleted now is left behind rather than
    // failing it.
    if (pin.path !== undefined) await unpin(pin.path).catch(() => undefined);
    if (replaced.root !== undefined && replaced.root !== binding.install_root) {
      await this.#deleteInstallRoot(id, replaced.root).catch(() => false);
    }
    await this.#collectAfterCommit(id);
    const plugin = lookupPlugin(committed, { profile: committed.profile, plugin_id: id });
    return plugin === undefined ? err(hostError('CATALOG_CORRUPT', `plugin '${id}' is missing from the generation its install published`)) : ok(plugin);
  }

  /** Whether this install would start the installed plugin's executable with the arguments its binding records. */
  async #sameLaunchArguments(plugin: InstalledPlugin, manifest: NormalizedManifest, options: InstallOptions): Promise<boolean> {
    const code = pinnedCodeOf(manifest, options.pythonIndexUrl);
    if (code?.kind !== 'executable') return true;
    const args = (await this.#argsOf(code, options, manifest.plugin_id, plugin.lock.binding.install_root)) ?? [];
    const recorded = launchArgumentsOf(plugin.lock.binding);
    return args.length === recorded.length && args.every((arg, i) => arg === recorded[i]);
  }

  /** The arguments recorded in the binding: the package's own (an MCP Bundle's, `${__dirname}` being the install root), else the caller's. */
  async #argsOf(code: PinnedCode, options: InstallOptions, id: string, installRoot: string): Promise<readonly string[] | undefined> {
    if (code.kind === 'executable' && code.args !== undefined) {
      // The binding records the install root's real path; the arguments name it the same way.
      const root = await realpath(installRoot);
      return code.args.map((arg) => arg.replaceAll('${__dirname}', root));
    }
    return options.args === undefined ? undefined : resolveLaunchArgs(options.args, this.#o.layout.dataDir(id));
  }

  async #bind(
    id: string,
    installRoot: string,
    code: PinnedCode,
    args: readonly string[] | undefined,
    written: HashedWhileWritten | undefined,
  ): Promise<Result<ExecutableBindingRecord, HostError>> {
    const bound = await this.#bindPinnedCode(id, installRoot, code, args);
    if (bound.isErr()) return bound;
    // Last, after every change the install makes to the tree (the executable's mode): a file changed since staging wrote it is read again.
    return pinPackageTree(bound.value.install_root, written).map((tree) => ({ ...bound.value, tree }));
  }

  async #bindPinnedCode(id: string, installRoot: string, code: PinnedCode, args: readonly string[] | undefined): Promise<Result<ExecutableBindingRecord, HostError>> {
    // An entry module is imported by the runner, never executed: it keeps its mode.
    if (code.kind === 'esm-entry') return bindModuleEntry({ installRoot, entry: code.path });
    const prepared = await this.#prepareExecutable(id, installRoot, code);
    if (prepared.isErr()) return err(prepared.error);
    const executable = prepared.value;
    const spawner = this.#o.spawner;
    // A Node interpreter other than the host's is asked its version in the sandbox only; without one it is not run (review R6 N2).
    const nodeVersion = spawner === undefined ? undefined : confinedInterpreterVersion({ spawner, hiddenPaths: [this.#o.layout.root] });
    return bindExecutable(
      {
        installRoot,
        executable,
        ...(args === undefined ? {} : { args }),
        ...(code.interpreter === undefined ? {} : { interpreter: code.interpreter }),
        ...(code.pythonPath === undefined ? {} : { pythonPath: code.pythonPath }),
        ...(this.#o.searchPath === undefined ? {} : { searchPath: this.#o.searchPath }),
      },
      nodeVersion,
    );
  }

  /**
   * Makes the manifest's executable runnable and returns the path to pin: the
   * file itself with its mode set, or, when it names a console script of the
   * package's pyproject.toml, the launcher of the private Python environment
   * installed for it (see installConsoleScript).
   */
  async #prepareExecutable(id: string, installRoot: string, code: PinnedCode & { readonly kind: 'executable' }): Promise<Result<string, HostError>> {
    const executable = code.path;
    const script = await consoleScriptOf(installRoot, executable);
    if (script.isErr()) return err(script.error);
    if (script.value === undefined) return (await setExecutableMode(installRoot, executable)).map(() => executable);
    const identity = this.#installIdentity(id);
    if (identity.isErr()) return err(identity.error);
    const limits = resolveLimits(this.#o.limits);
    if (limits.isErr()) return err(limits.error);
    const installed = await installConsoleScript(installRoot, script.value, {
      searchPath: this.#o.searchPath ?? process.env.PATH ?? '',
      limits: limits.value,
      ...(code.pythonIndexUrl === undefined ? {} : { indexUrl: code.pythonIndexUrl }),
      ...(identity.value === undefined ? {} : { identity: identity.value }),
    });
    return installed.map((python) => python.executable);
  }

  /**
   * The user what an install runs for a package runs as: on a Linux root
   * host the plugin's own (the sandbox's choice, or the default range's when
   * the installer has no switching sandbox), never root; elsewhere the host's.
   */
  #installIdentity(id: string): Result<PluginIdentity | undefined, HostError> {
    if (process.platform !== 'linux' || process.getuid?.() !== 0) return ok(undefined);
    const dataRoot = dirname(this.#o.layout.dataDir(id));
    const spawner = this.#o.spawner;
    if (spawner?.switchesUsers === true) return spawner.pluginIdentity(dataRoot, id);
    return checkUidRange(DEFAULT_PLUGIN_UID_RANGE).andThen((range) => pluginIdentity(dataRoot, id, range));
  }

  /**
   * Deletes an install root recorded in the lock, but only when it is one of
   * this profile's install roots for that plugin (`plugins/<id>/<dir>`): a
   * damaged or edited lock must never turn a remove into `rm -rf` elsewhere.
   */
  async #deleteInstallRoot(pluginId: string, root: string): Promise<boolean> {
    const pluginsDir = await realpath(this.#o.layout.pluginsDir).catch(() => this.#o.layout.pluginsDir);
    const parts = relative(pluginsDir, root).split(sep);
    if (!isAbsolute(root) || parts.length !== 2 || parts[0] !== pluginId || parts[1] === '' || parts[1] === '..') return false;
    await removeTree(root);
    // The per-plugin parent goes too once no install root is left in it.
    await rmdir(dirname(root)).catch(() => undefined);
    return true;
  }
}

