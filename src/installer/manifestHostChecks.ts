/**
 * The install checks that need the host's policy but not the package's files:
 * the grant, an executable to pin, namespace ownership, ids taken by other
 * plugins, the env denylist and the write directory. The installer runs them
 * on every package; {@link inspectManifestFile} runs them on a lone manifest
 * without opening a host (no catalog, no sandbox, none of the run-time code).
 */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { errAsync, type ResultAsync } from 'neverthrow';
import type { CatalogVariant } from '../catalog/catalogTypes.js';
import { EnvDenylist } from '../env/EnvDenylist.js';
import type { HostError } from '../errors/HostError.js';
import { ManifestValidator, type ManifestPreset, type ManifestReport } from '../manifest/ManifestValidator.js';
import type { DeclaredCapabilities, NormalizedManifest, PluginGrant } from '../manifest/model.js';
import { violation, type Violation } from '../manifest/violations.js';
import { NamespaceLock, type NamespaceClaim, type NamespaceOwners, type ProfileKind } from '../namespace/NamespaceLock.js';
import { resolveWriteDir } from '../sandbox/writeDir.js';
import { grantedCapabilities } from './grant.js';
import { catalogIdViolations } from './installConflicts.js';

/** What install says of an executable the package lacks. */
export const executableNotInPackage = (relPath: string): string => `executable '${relPath}' is not in the package`;

/**
 * The message for a directory package whose manifest names an executable
 * the package lacks, found by reading the package, so that it is reported
 * even where the binding step cannot run (no sandbox); undefined when the
 * executable is there.
 */
export async function missingExecutableMessage(dir: string, executable: string | undefined): Promise<string | undefined> {
  if (executable === undefined) return undefined;
  try {
    await lstat(join(dir, executable));
    return undefined;
  } catch {
    return executableNotInPackage(executable);
  }
}

/** Where a refused grant is reported: under `/grant/<field>` when one field is at fault. */
export const grantPointer = (error: HostError): string => {
  const field = error.details?.['field'] ?? error.details?.['option'];
  return typeof field === 'string' ? `/grant/${field.replace(/^grant\.?/, '')}`.replace(/\/$/, '') : '/grant';
};

/** Why a manifest cannot be installed when it names no file to pin. */
export const noExecutableMessage = (m: NormalizedManifest): string =>
  `plugin '${m.plugin_id}' of shape ${m.shape} has no executable this installer can pin`;

/**
 * The owner a plugin claims its namespace for. An Open Discovery manifest has
 * no `namespace_owner`: its registry identity is its `name` (the registry
 * installs it as `<name>@<version>`), so that is the owner recorded, under an
 * `open-discovery:` prefix no reverse-DNS owner can spell. Another package
 * of any form then cannot take the plugin id over with another owner.
 */
export function namespaceOwnerOf(m: NormalizedManifest): string | undefined {
  if (m.form === 'mcpb') return `mcpb:${m.plugin_id}`;
  if (m.namespace_owner !== undefined || m.form !== 'open-discovery') return m.namespace_owner;
  return `open-discovery:${m.plugin_id}`;
}

/** The file an install pins: an executable, or the entry module of an `esm-module` plugin. */
export type PinnedCode =
  | { readonly kind: 'executable'; readonly path: string; readonly interpreter?: string; readonly pythonPath?: readonly string[]; readonly pythonIndexUrl?: string; readonly args?: readonly string[] }
  | { readonly kind: 'esm-entry'; readonly path: string };

/** The file a manifest asks to be pinned, or undefined when it names none. */
export function pinnedCodeOf(m: NormalizedManifest, pythonIndexUrl?: string): PinnedCode | undefined {
  if (m.shape === 'esm-module') return m.entry === undefined ? undefined : { kind: 'esm-entry', path: m.entry };
  if (m.executable === undefined) return undefined;
  const interpreter = m.launch?.interpreter;
  const pythonPath = m.launch?.python_path;
  return {
    kind: 'executable',
    path: m.executable,
    ...(interpreter === undefined ? {} : { interpreter }),
    ...(pythonPath === undefined ? {} : { pythonPath }),
    ...(pythonIndexUrl === undefined ? {} : { pythonIndexUrl }),
    ...(m.launch === undefined ? {} : { args: m.launch.args }),
  };
}

/** The host's side of {@link manifestHostChecks}. */
export interface ManifestHostPolicy {
  /** The host's namespace rules (reserved prefixes, recorded owners). */
  readonly namespaceLock: NamespaceLock;
  /** The host's env denylist. */
  readonly envDenylist: EnvDenylist;
  /** The plugin's data directory (the write directory is resolved inside it). */
  readonly dataDirOf: (pluginId: string) => string;
  /** Recorded namespace owners. */
  readonly namespaceOwners: NamespaceOwners;
  /** Installed variants, whose ids a new plugin may not take. */
  readonly variants: readonly CatalogVariant[];
  /** The grant the install asks for, if any. */
  readonly grant: PluginGrant | undefined;
  /** Installed as a bundled first-party plugin (no namespace owner needed). */
  readonly firstParty: boolean;
  /** The dev-only override of another recorded namespace owner. */
  readonly devAllowNamespaceConflict: boolean;
}

/** The namespace claim a manifest makes under a policy. */
export function namespaceClaimOf(manifest: NormalizedManifest, policy: Pick<ManifestHostPolicy, 'firstParty' | 'devAllowNamespaceConflict'>): NamespaceClaim {
  const owner = namespaceOwnerOf(manifest);
  return {
    plugin_id: manifest.plugin_id,
    ...(owner === undefined ? {} : { namespace_owner: owner }),
    firstParty: policy.firstParty,
    devAllowNamespaceConflict: policy.devAllowNamespaceConflict,
  };
}

/** Every violation of a normalized manifest against the host's policy (see the module comment). */
export function manifestHostChecks(manifest: NormalizedManifest, policy: ManifestHostPolicy): Violation[] {
  const out: Violation[] = [];
  const granted = grantedCapabilities(manifest, policy.grant);
  if (granted.isErr()) out.push(violation('structure', granted.error.code, grantPointer(granted.error), granted.error.message));
  const capabilities: DeclaredCapabilities = granted.unwrapOr(manifest.capabilities);
  if (pinnedCodeOf(manifest) === undefined) {
    out.push(violation('shape', 'PLUGIN_SHAPE_UNSUPPORTED', '', noExecutableMessage(manifest)));
  }
  const ns = policy.namespaceLock.check(namespaceClaimOf(manifest, policy), policy.namespaceOwners);
  // A missing owner is already the validator's own namespace violation.
  if (ns.isErr() && ns.error.details?.reason !== 'owner_missing') out.push(violation('namespace', ns.error.code, '/namespace_owner', ns.error.message));
  out.push(...catalogIdViolations(manifest, policy.variants));
  const env = policy.envDenylist;
  for (const [field, names, pointer] of [
    ['env_allow', capabilities.env_allow, '/declared_capabilities/env_allow'],
    ['needs_user_creds', manifest.requirements.needs_user_creds, '/requirements/needs_user_creds'],
    // The env a bundle sets passes the same denylist as the names it could ask the host for.
    ['env_allow', Object.keys(manifest.launch?.env ?? {}), '/server/mcp_config/env'],
  ] as const) {
    const checked = env.check(manifest.plugin_id, names, field);
    if (checked.isErr()) out.push(violation('env', checked.error.code, pointer, checked.error.message));
  }
  const write = resolveWriteDir(policy.dataDirOf(manifest.plugin_id), capabilities.fs_write_dir);
  if (write.isErr()) out.push(violation('structure', write.error.code, '/declared_capabilities/fs_write_dir', write.error.message));
  return out;
}

/** Options of {@link inspectManifestFile}. */
export interface InspectManifestFileOptions {
  /** The host preset whose rules apply (shapes, env denylist, reserved namespaces). Default `neutral`. */
  readonly preset?: ManifestPreset;
  /** The profile kind the manifest would be installed into. Default `dev`, as a lone manifest's package is a directory. */
  readonly profileKind?: ProfileKind;
  /** Install despite another recorded namespace owner (dev profiles only), as the install option. */
  readonly devAllowNamespaceConflict?: boolean;
}

/** The data directory the write-directory rule resolves against: only its relation to `fs_write_dir` is checked. */
const NOMINAL_DATA_DIR = '/data';

/**
 * Every install check a manifest can be held to without its package, as a
 * host of `options.preset` would run it into an empty profile: the
 * manifest's own checks (schema, fields, schema bundles beside it) and the
 * host's (namespace, env denylist, write directory, an executable named).
 * It opens no host and loads none of the run-time code, so it suits editors
 * and CI. The package checks (files, links, limits, pinning the executable)
 * and MCP Bundle manifests need {@link PluginHost.inspect} on the package.
 *
 * @param path - The manifest file; its form is read from its name (`*.toml`, `mcp-plugin.json`, `manifest.json`)
 *   or, under any other name, from its content.
 * @param options - The host rules to apply.
 */
export function inspectManifestFile(path: string, options: InspectManifestFileOptions = {}): ResultAsync<ManifestReport, HostError> {
  const preset = options.preset ?? 'neutral';
  const policy = EnvDenylist.create({ preset }).andThen((envDenylist) =>
    NamespaceLock.create({ preset, profileKind: options.profileKind ?? 'dev' }).map((namespaceLock) => ({ envDenylist, namespaceLock })),
  );
  if (policy.isErr()) return errAsync(policy.error);
  const { envDenylist, namespaceLock } = policy.value;
  return new ManifestValidator({ preset }).inspectFile(path, {
    hostChecks: (manifest) =>
      manifestHostChecks(manifest, {
        envDenylist,
        namespaceLock,
        dataDirOf: () => NOMINAL_DATA_DIR,
        namespaceOwners: {},
        variants: [],
        grant: undefined,
        firstParty: false,
        devAllowNamespaceConflict: options.devAllowNamespaceConflict ?? false,
      }),
  });
}
