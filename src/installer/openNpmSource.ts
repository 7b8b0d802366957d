/**
 * Staging an `npm:` source: npm fetches the package and its production
 * dependencies (see npmFetch.ts), then the package directory goes through
 * the same copier as a local directory (entry names, limits, modes; links
 * inside the package left out, links out of it refused) into the staging
 * tree, where it gets its manifest: the one the package ships, else the
 * caller's, else one generated from the server's own `tools/list`.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { hostError, reworded, type HostError } from '../errors/HostError.js';
import { copyDirectory } from './copyDirectory.js';
import { claimStage, makeStage } from './installLeftovers.js';
import { resolveLimits, type PackageLimits } from './limits.js';
import type { StagedPackage } from './openPackageSource.js';
import { locatePackageRoot } from './packageRoot.js';
import { toHostError } from './refusal.js';
import { DIRECTORY_MODE, StagingTree } from './StagingTree.js';
import { PACKAGE_MANIFEST_NAMES, type PackageManifestName } from '../manifest/ManifestValidator.js';
import { DEFAULT_PARSE_LIMITS } from '../manifest/parse.js';
import { readAtMost } from '../manifest/readAtMost.js';
import { systemClock, type Clock } from '../ports/ports.js';
import type { SandboxSpawner } from '../sandbox/SandboxSpawner.js';
import type { EnvDenylist } from '../env/EnvDenylist.js';
import { introspectServer, type GrantedIntrospectionEnv, type IntrospectionNetwork } from './introspect.js';
import { fetchNpmPackage, NPM_SOURCE_PREFIX, npmFailure, parseNpmSpec, type FetchedNpmPackage, type NpmSettings } from './npmFetch.js';
import { declaredNodeEngine } from './npmEngines.js';
import { withSkippedInstallScripts } from './npmInstallScripts.js';
import type { ClientRequestKind } from '../manifest/model.js';
import { binOf, generatedManifest, otherBinsOf, pluginIdOf } from './npmManifest.js';
import { removeTree } from './removeTree.js';

/** Where a staged npm package's manifest came from. */
export type NpmManifestOrigin = 'package' | 'caller' | 'introspection';

/** How the sandboxed introspection of a server without a manifest runs. */
export interface NpmIntrospectionOptions {
  /** The host's sandbox. */
  readonly spawner: SandboxSpawner;
  /** Host paths the server must not read (the profile directory). */
  readonly hiddenPaths: readonly string[];
  /** PATH that resolves a `#!/usr/bin/env` interpreter. */
  readonly searchPath?: string;
  /** Time for its whole introspection: the start, `initialize` and every `tools/list` page. Default 30 s. */
  readonly timeoutMs?: number;
  /** Time for each of those requests (the host's `startupTimeoutMs`, as any start of it gets). Default `timeoutMs`. */
  readonly requestTimeoutMs?: number;
  /** The host's env denylist, so that a failure naming a denylisted variable is pointed at the credential way. */
  readonly envDenylist?: EnvDenylist;
  /** The client requests the install grants (announced at `initialize`, so the server lists the tools that use them). */
  readonly clientRequests?: readonly ClientRequestKind[];
  /** The host env the install grants, for a server that needs a token to start (see {@link GrantedIntrospectionEnv}). */
  readonly grantedEnv?: GrantedIntrospectionEnv;
  /** The network the install grants explicitly, for a server that connects while it starts; without it the start is offline. */
  readonly grantedNetwork?: IntrospectionNetwork;
  /** The writable directory the install grants (`fs_write_dir`, relative to the data directory), made for the start as for every start of the plugin. */
  readonly fsWriteDir?: string;
  /**
   * Called before the start (with or without network), once the package is
   * fetched and before any of its code runs: the install's trust gate, which
   * asks about a start with network and refuses what the install would be
   * refused unasked; an error ends the staging with it. Absent: the grant is
   * the consent.
   */
  readonly consent?: (start: NetworkedStart) => Promise<Result<void, HostError>>;
}

/** What is known of an npm server before its introspection start: the generated manifest's facts but its tools. */
export interface NetworkedStart {
  /** The plugin id the generated manifest will have. */
  readonly plugin_id: string;
  /** The package name. */
  readonly name: string;
  /** The package version. */
  readonly version: string;
  /** The owner the install question shows: `npm:<name>` for an npm server, null for a bundle, which declares none. */
  readonly namespace_owner: string | null;
  /** The package.json license, or null. */
  readonly license: string | null;
  /** The generated manifest's `risk` (not reviewed, and the skipped install scripts). */
  readonly risk: string;
  /** The `<name>@<version>` npm resolved, or the local tarball's path. */
  readonly source_path: string;
  /** The network the start gets. */
  readonly network: IntrospectionNetwork;
  /** The registry npm fetched a registry package from (absent for a local tarball): a change of it is asked as an owner change. */
  readonly registry?: string;
  /** The credential names (`needs_user_creds`) the plugin will need, when known before its start (an MCP Bundle's sensitive settings). */
  readonly credentials?: readonly string[];
  /**
   * The staged package's files, as the install will pin them but for the
   * manifest the start's tools make (an npm server's; absent for a bundle):
   * what the version installed is compared with before the start.
   */
  readonly root?: string;
}

/** Options of {@link openNpmSource}. */
export interface NpmSourceOptions {
  /** The directory staging happens in (created if missing), on the install root's file system. */
  readonly stagingRoot: string;
  /** Overrides of the default package limits. */
  readonly limits?: Partial<PackageLimits>;
  /** Stamps the staging directory's owner record. */
  readonly clock?: Clock;
  /** Which npm and which registry. */
  readonly npm?: NpmSettings;
  /** The manifest to install the package with (a GUM JSON document); refused when the package ships a manifest of its own. */
  readonly manifest?: Readonly<Record<string, unknown>>;
  /** Arguments the server is started with (for the introspection; the install records its own). */
  readonly args?: readonly string[];
  /**
   * The package's executable to run as its server, by its `bin` name, for a
   * package whose server is not its default bin (see {@link binOf}); refused
   * beside a manifest, which names the executable itself.
   */
  readonly bin?: string;
  /**
   * The bin an earlier install of the plugin id chose (its lock records it),
   * used when {@link bin} is absent: an upgrade keeps the choice.
   */
  readonly recordedBin?: (pluginId: string) => Promise<string | undefined>;
  /**
   * Asked before an introspection start, with the plugin id, the staged tree
   * and the manifest the start would generate but for its tools: writes the
   * manifest an earlier install generated for exactly these files under the
   * same grant into the tree and answers true, and then nothing of the
   * package runs (see `reuseRecordedManifest`).
   */
  readonly recordedIntrospection?: (pluginId: string, tree: string, expected: Readonly<Record<string, unknown>>) => Promise<boolean>;
  /** How to ask a server that ships no manifest, when the caller gave none, for its tools. */
  readonly introspection?: NpmIntrospectionOptions;
}

/** An npm package staged for the Installer, with where its manifest came from. */
export interface StagedNpmPackage extends StagedPackage {
  /** Whether the manifest is the package's own, the caller's, or generated by introspection (then not yet reviewed). */
  readonly manifestOrigin: NpmManifestOrigin;
}

// What manifestFor decided: where the manifest came from, and the bin named for the generated one (the option's or the recorded one).
interface ManifestChoice {
  readonly origin: NpmManifestOrigin;
  readonly bin?: string;
}

/** How long an introspection may take when the caller sets no time (its start, `initialize` and `tools/list`). */
export const DEFAULT_INTROSPECTION_TIMEOUT_MS = 30_000;

/** Whether `source` is an `npm:` source. */
export function isNpmSource(source: string): boolean {
  return source.startsWith(NPM_SOURCE_PREFIX);
}

/**
 * The manifest file a fetched package ships at its root, if any, and whether
 * it is a plugin manifest: every name but `manifest.json` is one of ours, while
 * a `manifest.json` is a GUM manifest (`plugin_id`) or an MCP Bundle's
 * (`server` with `manifest_version`/`dxt_version`) only by its content —
 * other tools use that name too.
 */
export async function shippedManifest(root: string): Promise<{ readonly name: PackageManifestName; readonly plugin: boolean } | undefined> {
  const name = PACKAGE_MANIFEST_NAMES.find((candidate) => existsSync(join(root, candidate)));
  if (name !== 'manifest.json') return name === undefined ? undefined : { name, plugin: true };
  let document: unknown;
  try {
    const bytes = await readAtMost(join(root, name), DEFAULT_PARSE_LIMITS.maxBytes);
    // Over the manifest size limit: the validator reports it, and no more of it is read.
    if (bytes.length > DEFAULT_PARSE_LIMITS.maxBytes) return { name, plugin: true };
    document = JSON.parse(bytes.toString('utf8'));
  } catch {
    // Not JSON: the validator reports it as a broken plugin manifest, with its position.
    return { name, plugin: true };
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) return { name, plugin: false };
  const keys = new Set(Object.keys(document));
  const bundle = keys.has('server') && (keys.has('manifest_version') || keys.has('dxt_version'));
  return { name, plugin: keys.has('plugin_id') || keys.has('manifest_schema_version') || bundle };
}

// The generated manifest's facts, before the tools are known, for the consent to a start with network.
function networkedStart(
  fetched: Pick<FetchedNpmPackage, 'packageJson' | 'installScripts' | 'registry'>,
  executable: string,
  sourcePath: string,
  network: IntrospectionNetwork,
  root: string,
): NetworkedStart {
  const facts = generatedManifest({ packageJson: fetched.packageJson, executable, tools: [], installScripts: fetched.installScripts });
  const text = (key: string): string => String(facts[key]);
  return {
    plugin_id: text('plugin_id'),
    name: text('name'),
    version: text('version'),
    namespace_owner: text('namespace_owner'),
    license: typeof facts['license'] === 'string' ? facts['license'] : null,
    risk: text('risk'),
    source_path: sourcePath,
    network,
    ...(fetched.registry === undefined ? {} : { registry: fetched.registry }),
    root,
  };
}

async function manifestFor(
  tree: StagingTree,
  fetched: Pick<FetchedNpmPackage, 'packageJson' | 'installScripts' | 'registry'>,
  stage: string,
  options: NpmSourceOptions,
  sourcePath: string,
): Promise<Result<ManifestChoice, HostError>> {
  const packageJson = fetched.packageJson;
  const shipped = await shippedManifest(tree.root);
  // A manifest names its executable itself: a bin named beside it would be silently ignored.
  if (options.bin !== undefined && (shipped !== undefined || options.manifest !== undefined)) {
    return err(
      npmFailure('manifest_conflict', `the bin option applies to an npm package installed with a generated manifest; '${String(packageJson['name'])}' is installed with ${shipped === undefined ? 'the manifest option' : `its own manifest (${shipped.name})`}, which names its executable`, {
        bin: options.bin,
        ...(shipped === undefined ? {} : { file: shipped.name }),
      }),
    );
  }
  if (shipped !== undefined) {
    if (!shipped.plugin) {
      return err(
        npmFailure('manifest_conflict', `npm package '${String(packageJson['name'])}' ships a ${shipped.name} that is not a plugin manifest (neither GUM nor an MCP Bundle), and the host's manifest would have to replace it`, {
          file: shipped.name,
        }),
      );
    }
    if (options.manifest !== undefined) {
      return err(
        npmFailure('manifest_conflict', `npm package '${String(packageJson['name'])}' ships its own manifest (${shipped.name}); install it without the manifest option, or review that one`, {
          file: shipped.name,
        }),
      );
    }
    return ok({ origin: 'package' });
  }
  const write = (manifest: unknown): Promise<void> => writeFile(join(tree.root, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o644 });
  if (options.manifest !== undefined) {
    // The manifest a person reviewed (wrap) describes one version: installed over another (`npm:<name>` resolving to a
    // version published since), it would pin code nobody reviewed and record the reviewed version for it.
    const reviewed = options.manifest['version'];
    const fetched = packageJson['version'];
    if (typeof reviewed === 'string' && typeof fetched === 'string' && reviewed !== fetched) {
      const name = String(packageJson['name']);
      return err(
        hostError('PLUGIN_NPM_INSTALL_FAILED', `the manifest option describes version ${reviewed}, and npm fetched '${name}' ${fetched}`, {
          details: { reason: 'manifest_conflict', manifest_version: reviewed, package_version: fetched },
          hint: `Install the version the manifest was made for (npm:${name}@${reviewed}), or make it again for ${fetched} (wrap npm:${name}@${fetched}), review it and install with that one.`,
        }),
      );
    }
    await write(options.manifest);
    return ok({ origin: 'caller' });
  }
  const recorded = options.bin === undefined ? await options.recordedBin?.(pluginIdOf(String(packageJson['name']))) : undefined;
  const bin = options.bin ?? recorded;
  const executable = binOf(packageJson, bin);
  if (executable.isErr()) {
    if (recorded === undefined || executable.error.details['reason'] !== 'unknown_bin') return err(executable.error);
    // An upgrade kept the bin an earlier install chose: say where the name came from, the caller named none.
    return err(
      reworded(executable.error, {
        message: `${executable.error.message}, the bin the installed version was installed with (recorded in the lock)`,
        details: { ...executable.error.details, recorded: true },
      }),
    );
  }
  const introspection = options.introspection;
  if (introspection === undefined) {
    return err(npmFailure('no_manifest', `npm package '${String(packageJson['name'])}' ships no manifest; pass the manifest install option`));
  }
  const network = introspection.grantedNetwork;
  // Nothing of the package runs before the install's trust gate: asked about a start with network, refused what it would refuse unasked.
  if (introspection.consent !== undefined) {
    const consented = await introspection.consent(networkedStart(fetched, executable.value, sourcePath, network ?? { network: false }, tree.root));
    if (consented.isErr()) return err(consented.error);
  }
  const expected = generatedManifest({ packageJson, executable: executable.value, tools: [], installScripts: fetched.installScripts });
  // Judged as the start would be (above); the same files as installed, under the same grant: what their start listed then is
  // recorded, and nothing needs to run.
  if (await options.recordedIntrospection?.(String(expected['plugin_id']), tree.root, expected)) {
    // As after a start: the tree is readable to a server's own user, as an install root is.
    await chmod(tree.root, DIRECTORY_MODE);
    return ok({ origin: 'introspection', ...(bin === undefined ? {} : { bin }) });
  }
  const workDir = join(stage, 'introspection');
  // The server may run as a user of its own: the tree must be readable to it, as an install root is.
  await chmod(tree.root, DIRECTORY_MODE);
  const nodeEngine = declaredNodeEngine(packageJson);
  const tools = await introspectServer({
    root: tree.root,
    executable: executable.value,
    spawner: introspection.spawner,
    workDir,
    hiddenPaths: introspection.hiddenPaths,
    timeoutMs: introspection.timeoutMs ?? DEFAULT_INTROSPECTION_TIMEOUT_MS,
    ...(introspection.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: introspection.requestTimeoutMs }),
    ...(introspection.envDenylist === undefined ? {} : { envDenylist: introspection.envDenylist }),
    pluginId: String(expected['plugin_id']),
    ...(options.args === undefined ? {} : { args: options.args }),
    ...(introspection.searchPath === undefined ? {} : { searchPath: introspection.searchPath }),
    ...(introspection.clientRequests === undefined ? {} : { clientRequests: introspection.clientRequests }),
    ...(introspection.grantedEnv === undefined ? {} : { grantedEnv: introspection.grantedEnv }),
    ...(network === undefined ? {} : { grantedNetwork: network }),
    ...(introspection.fsWriteDir === undefined ? {} : { fsWriteDir: introspection.fsWriteDir }),
    ...(nodeEngine === undefined ? {} : { nodeEngine }),
    otherBins: otherBinsOf(packageJson, executable.value),
  });
  // However deep the server's writes in its data directory go: Node's rm stops at the path limit.
  await removeTree(workDir);
  if (tools.isErr()) return err(withSkippedInstallScripts(tools.error, fetched.installScripts));
  await write(generatedManifest({ packageJson, executable: executable.value, tools: tools.value, installScripts: fetched.installScripts }));
  return ok({ origin: 'introspection', ...(bin === undefined ? {} : { bin }) });
}

async function stageNpm(source: string, options: NpmSourceOptions): Promise<Result<StagedNpmPackage, HostError>> {
  const spec = parseNpmSpec(source);
  if (spec.isErr()) return err(spec.error);
  const limits = resolveLimits(options.limits);
  if (limits.isErr()) return err(limits.error);
  const made = await makeStage(options.stagingRoot);
  if (made.isErr()) return err(made.error);
  const stage = made.value;
  const discard = (): Promise<void> => removeTree(stage);
  const fail = async (error: HostError): Promise<Result<never, HostError>> => {
    await discard().catch(() => undefined);
    return err(error);
  };
  try {
    await claimStage(stage, options.clock ?? systemClock);
    const work = join(stage, 'npm');
    await mkdir(work, { mode: 0o700 });
    const fetched = await fetchNpmPackage(spec.value, work, options.npm, limits.value);
    if (fetched.isErr()) return await fail(fetched.error);
    const tree = new StagingTree(join(stage, 'tree'), limits.value);
    await mkdir(tree.root, { mode: 0o700 });
    await copyDirectory(fetched.value.dir, tree);
    await removeTree(work);
    const path = spec.value.kind === 'registry' ? `${fetched.value.name}@${fetched.value.version}` : spec.value.path;
    const origin = await manifestFor(tree, fetched.value, stage, options, path);
    if (origin.isErr()) return await fail(origin.error);
    const found = await locatePackageRoot(tree.root, false);
    const root = join(stage, 'package');
    await rename(found.dir, root);
    await chmod(root, DIRECTORY_MODE);
    return ok({
      root,
      manifestFile: found.manifestFile,
      source: {
        kind: 'npm',
        path,
        ...(fetched.value.registry === undefined ? {} : { registry: fetched.value.registry }),
        ...(origin.value.bin === undefined ? {} : { bin: origin.value.bin }),
      },
      stats: { entries: tree.entryCount, bytes: tree.byteCount },
      ...(tree.droppedLinks.length === 0 ? {} : { droppedLinks: tree.droppedLinks }),
      writtenFiles: tree.writtenFiles,
      longestEntryBytes: tree.longestNameBytes,
      ...(origin.value.origin === 'introspection' ? { capabilitiesSource: 'host_default' as const } : {}),
      manifestOrigin: origin.value.origin,
      discard,
    });
  } catch (cause) {
    return fail(toHostError(cause, 'Staging', source));
  }
}

/**
 * Stages an `npm:<name>@<version>` or `npm:<path>.tgz` source for the
 * Installer: fetched by npm (install scripts never run, dev dependencies
 * left out, integrity checked by npm), copied into a private staging tree
 * under the same limits and entry rules as any package, and given its
 * manifest. The staged package has no digest: npm's integrity check stands
 * for it, and an unchanged reinstall is recognised by its files.
 *
 * Fails with PLUGIN_NPM_INSTALL_FAILED (`details.reason`: `invalid_spec`,
 * `npm_unavailable`, `npm_failed` with `details.stderr_tail`,
 * `layout_unexpected`, `no_bin`, `unknown_bin`, `no_manifest`, `manifest_conflict`,
 * `dependency_source`, `package_mismatch`), the copier's
 * PLUGIN_ARCHIVE_INVALID / PLUGIN_EXECUTABLE_UNTRUSTED, the introspection's
 * errors, or HOST_IO_ERROR.
 */
export function openNpmSource(source: string, options: NpmSourceOptions): ResultAsync<StagedNpmPackage, HostError> {
  return new ResultAsync(stageNpm(source, options));
}
