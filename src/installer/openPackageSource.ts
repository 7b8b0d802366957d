import { mkdir, mkdtemp, realpath, rename, rm, rmdir, chmod, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { systemClock, type Clock } from '../ports/ports.js';
import { copyAndHash, digestsEqual, parseChecksum, type PackageDigest } from './checksum.js';
import { copyDirectory } from './copyDirectory.js';
import { claimStage, STAGE_PREFIX } from './installLeftovers.js';
import { extractTgz } from './extractTar.js';
import { extractZip } from './extractZip.js';
import { resolveLimits, type PackageLimits } from './limits.js';
import type { PackageManifestName } from '../manifest/ManifestValidator.js';
import { locatePackageRoot } from './packageRoot.js';
import { Refusal, refuse, refuseEntry, toHostError } from './refusal.js';
import { decodeSignature, parseTrustedKeys, readSidecarSignature, verifyDigestSignature, type TrustedKey } from './signature.js';
import { DIRECTORY_MODE, StagingTree } from './StagingTree.js';

/** What kind of package source a path turned out to be. */
export type PackageSourceKind = 'directory' | 'tgz' | 'zip';

/** Options of {@link openPackageSource}. */
export interface PackageSourceOptions {
  /**
   * The directory staging happens in; created if missing. Put it on the same
   * file system as the final install root, so the staged root can be renamed
   * into place.
   */
  readonly stagingRoot: string;
  /** The expected archive SHA-256, `sha256:<hex>` or bare hex (from `[package].checksum` or the caller). */
  readonly checksum?: string;
  /** Refuse an archive that comes without `checksum` (remote-like installs). */
  readonly requireChecksum?: boolean;
  /**
   * The Ed25519 signature over the digest, as base64 text or raw bytes. When
   * absent, `<archive>.sig` (base64 text) is read if it exists.
   */
  readonly signature?: string | Uint8Array;
  /** Public keys whose signatures are accepted: PEM (SPKI) or raw 32-byte keys in base64. */
  readonly trustedKeys?: readonly string[];
  /** Refuse a package that is not signed by a trusted key (Open Discovery's REQUIRE_SIGNATURES). */
  readonly requireSignatures?: boolean;
  /** Overrides of {@link DEFAULT_PACKAGE_LIMITS}. */
  readonly limits?: Partial<PackageLimits>;
  /** Stamps the staging directory's owner record (see installLeftovers.ts). */
  readonly clock?: Clock;
}

/** A package staged in a private directory, verified and ready for manifest validation. */
export interface StagedPackage {
  /**
   * The package root (mode 0755): the directory holding the manifest. Rename
   * it to the install root to publish it; it lives inside a staging directory
   * that {@link StagedPackage.discard} removes.
   */
  readonly root: string;
  /** The manifest file found at the root. */
  readonly manifestFile: PackageManifestName;
  /** The archive's SHA-256; absent for directory sources. */
  readonly digest?: PackageDigest;
  /** The trusted key that signed the digest, when a signature was verified. */
  readonly signature?: { readonly keyFingerprint: string };
  /** Where the package came from. */
  readonly source: { readonly kind: PackageSourceKind; readonly path: string };
  /** The single top-level folder of the archive that was stripped, if any. */
  readonly strippedTopDirectory?: string;
  /** Entries and file bytes staged. */
  readonly stats: { readonly entries: number; readonly bytes: number };
  /**
   * Symbolic links of the package that stayed inside it and were left out of
   * the staged tree (npm's `node_modules/.bin/*`), by entry name; absent when
   * there were none. Links that lead outside the package refuse it.
   */
  readonly droppedLinks?: readonly string[];
  /** Removes the staging directory and whatever is still in it; safe to call twice. */
  discard(): Promise<void>;
}

interface Verification {
  readonly limits: PackageLimits;
  readonly checksum: PackageDigest | undefined;
  readonly keys: readonly TrustedKey[];
}

function readOptions(options: PackageSourceOptions): Result<Verification, HostError> {
  const limits = resolveLimits(options.limits);
  if (limits.isErr()) return err(limits.error);
  const keys = parseTrustedKeys(options.trustedKeys ?? []);
  if (keys.isErr()) return err(keys.error);
  if (options.requireSignatures === true && keys.value.length === 0) {
    return err(
      hostError('HOST_INVALID_OPTIONS', 'requireSignatures is set but no trustedKeys are configured', {
        details: { option: 'trustedKeys' },
      }),
    );
  }
  if (options.checksum === undefined) return ok({ limits: limits.value, checksum: undefined, keys: keys.value });
  const checksum = parseChecksum(options.checksum);
  if (checksum.isErr()) return err(checksum.error);
  return ok({ limits: limits.value, checksum: checksum.value, keys: keys.value });
}

function detectFormat(head: Buffer): 'tgz' | 'zip' | undefined {
  if (head[0] === 0x1f && head[1] === 0x8b) return 'tgz';
  if (head[0] === 0x50 && head[1] === 0x4b && ((head[2] === 3 && head[3] === 4) || (head[2] === 5 && head[3] === 6))) return 'zip';
  return undefined;
}

async function signatureOf(path: string, options: PackageSourceOptions, keys: readonly TrustedKey[]): Promise<Buffer | undefined> {
  const given = options.signature ?? (await readSidecarSignature(path));
  if (given === undefined) {
    if (options.requireSignatures === true) {
      refuse('PLUGIN_SIGNATURE_INVALID', `signatures are required and '${path}' has none (no signature given, no ${path}.sig)`, {
        details: { reason: 'missing' },
      });
    }
    return undefined;
  }
  // With no trusted key nothing can check a signature; it is ignored unless signatures are required.
  if (keys.length === 0) return undefined;
  const decoded = decodeSignature(given);
  if (decoded.isErr()) throw new Refusal(decoded.error);
  return decoded.value;
}

interface Staged {
  readonly tree: StagingTree;
  readonly kind: PackageSourceKind;
  readonly digest?: PackageDigest;
  readonly signer?: TrustedKey;
}

async function stageArchive(path: string, stage: string, options: PackageSourceOptions, v: Verification): Promise<Staged> {
  if (options.requireChecksum === true && v.checksum === undefined) {
    refuse('PLUGIN_CHECKSUM_MISMATCH', `a checksum is required for '${path}' and none was given`, { details: { reason: 'missing' } });
  }
  const signature = await signatureOf(path, options, v.keys);
  const copy = join(stage, 'archive');
  const hashed = await copyAndHash(path, copy, v.limits.maxArchiveBytes);
  if (v.checksum !== undefined && !digestsEqual(v.checksum, hashed.digest)) {
    refuse('PLUGIN_CHECKSUM_MISMATCH', `'${path}' has SHA-256 ${hashed.digest}, expected ${v.checksum}`, {
      details: { reason: 'mismatch', expected: v.checksum, actual: hashed.digest },
    });
  }
  let signer: TrustedKey | undefined;
  if (signature !== undefined) {
    const verified = verifyDigestSignature(hashed.digest, signature, v.keys);
    if (verified.isErr()) throw new Refusal(verified.error);
    signer = verified.value;
  }
  const kind = detectFormat(hashed.head);
  if (kind === undefined) {
    refuseEntry('unknown_format', undefined, `'${path}' is neither a gzip-compressed tar nor a zip archive`, {
      head: hashed.head.subarray(0, 4).toString('hex'),
    });
  }
  const tree = new StagingTree(join(stage, 'tree'), v.limits);
  await mkdir(tree.root, { mode: 0o700 });
  await (kind === 'tgz' ? extractTgz : extractZip)(copy, tree, v.limits);
  await rm(copy, { force: true });
  return { tree, kind, digest: hashed.digest, ...(signer === undefined ? {} : { signer }) };
}

async function stageDirectory(path: string, stage: string, options: PackageSourceOptions, v: Verification): Promise<Staged> {
  if (options.requireChecksum === true || v.checksum !== undefined) {
    refuse('PLUGIN_CHECKSUM_MISMATCH', `'${path}' is a directory; only archives have a checksum to verify`, {
      details: { reason: 'directory_source' },
    });
  }
  if (options.requireSignatures === true || options.signature !== undefined) {
    refuse('PLUGIN_SIGNATURE_INVALID', `'${path}' is a directory; only archives can be signed`, {
      details: { reason: 'directory_source' },
    });
  }
  const source = await realpath(path);
  const staging = await realpath(stage);
  if (staging === source || staging.startsWith(source + sep)) {
    refuse('HOST_INVALID_OPTIONS', 'stagingRoot must not be inside the package directory being installed', {
      details: { option: 'stagingRoot' },
    });
  }
  const tree = new StagingTree(join(stage, 'tree'), v.limits);
  await mkdir(tree.root, { mode: 0o700 });
  await copyDirectory(source, tree);
  return { tree, kind: 'directory' };
}

async function stagePackage(path: string, options: PackageSourceOptions): Promise<Result<StagedPackage, HostError>> {
  const verification = readOptions(options);
  if (verification.isErr()) return err(verification.error);
  const v = verification.value;
  const absolute = resolve(path);
  let isDirectory: boolean;
  try {
    const info = await stat(absolute);
    if (!info.isDirectory() && !info.isFile()) refuseEntry('not_a_file', undefined, `'${absolute}' is neither a directory nor a regular file`);
    isDirectory = info.isDirectory();
  } catch (cause) {
    return err(toHostError(cause, 'Reading the package source', absolute));
  }

  let stage: string;
  try {
    await mkdir(options.stagingRoot, { recursive: true });
    stage = await mkdtemp(join(options.stagingRoot, STAGE_PREFIX));
  } catch (cause) {
    return err(toHostError(cause, 'Creating a staging directory in', options.stagingRoot));
  }
  const discard = (): Promise<void> => rm(stage, { recursive: true, force: true });
  try {
    await claimStage(stage, options.clock ?? systemClock);
    const staged = await (isDirectory ? stageDirectory : stageArchive)(absolute, stage, options, v);
    const found = await locatePackageRoot(staged.tree.root, staged.kind !== 'directory');
    const root = join(stage, 'package');
    await rename(found.dir, root);
    if (found.strippedTopDirectory !== undefined) await rmdir(staged.tree.root);
    await chmod(root, DIRECTORY_MODE);
    return ok({
      root,
      manifestFile: found.manifestFile,
      source: { kind: staged.kind, path: absolute },
      stats: { entries: staged.tree.entryCount, bytes: staged.tree.byteCount },
      ...(staged.tree.droppedLinks.length === 0 ? {} : { droppedLinks: staged.tree.droppedLinks }),
      discard,
      ...(staged.digest === undefined ? {} : { digest: staged.digest }),
      ...(staged.signer === undefined ? {} : { signature: { keyFingerprint: staged.signer.fingerprint } }),
      ...(found.strippedTopDirectory === undefined ? {} : { strippedTopDirectory: found.strippedTopDirectory }),
    });
  } catch (cause) {
    const error = toHostError(cause, 'Staging', absolute);
    await discard().catch(() => undefined);
    return err(error);
  }
}

/**
 * Stages a package source — a local directory (development) or a `.tgz` /
 * `.zip` archive, recognised by its first bytes — into a fresh private
 * directory under `options.stagingRoot`, verified and ready for manifest
 * validation.
 *
 * Checks run in this order: options; checksum present when required;
 * signature present when required; archive size while it is copied and
 * hashed; checksum; signature; format; every entry while extracting; the
 * manifest at the root. The first failure wins and leaves nothing behind.
 *
 * Symbolic links whose target stays inside the package are left out (see
 * {@link StagedPackage.droppedLinks}); links are never followed.
 *
 * Fails with `PLUGIN_ARCHIVE_INVALID` (malformed archive, limit hit, a link
 * leading outside the package, a hard link, device, absolute, traversing,
 * duplicate entries; `details.reason`, `details.entry`, `details.limit`,
 * `details.target`), `PLUGIN_CHECKSUM_MISMATCH`,
 * `PLUGIN_SIGNATURE_INVALID`, `PLUGIN_MANIFEST_NOT_FOUND`,
 * `PLUGIN_EXECUTABLE_UNTRUSTED` (a link leading outside a directory source),
 * `HOST_INVALID_OPTIONS` or `HOST_IO_ERROR`.
 */
export function openPackageSource(path: string, options: PackageSourceOptions): ResultAsync<StagedPackage, HostError> {
  return new ResultAsync(stagePackage(path, options));
}
