/**
 * Module-entry binding: the code of an `esm-module` plugin is its entry
 * module, so that file is what gets pinned at install and re-verified before
 * every start of the ESM runner.
 *
 * - {@link ExecutableBinding.bindModuleEntry} (install) applies the path refusals of
 *   executables (absolute, `..`, links, outside the root, not a regular file,
 *   writable by others) plus the ES module extensions, and records the
 *   entry's SHA-256 in the same lock record shape, marked `kind: 'esm-entry'`.
 * - {@link verifyModuleEntry} (every start, never cached) re-hashes the entry
 *   while copying it to a private unnamed file and hands back a descriptor on
 *   that copy. The runner inherits the descriptor and imports the entry's
 *   source from it, so the bytes it evaluates are the bytes that were hashed.
 */
import type { FileHandle } from 'node:fs/promises';
import { extname, isAbsolute } from 'node:path';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import type { PluginCommand, VerifiedExecutable } from '../process/VerifiedExecutable.js';
import { copyPinnedFile, forQuarantine, realInstallRoot, type ExecutableBindingRecord, type VerifyExecutableOptions } from './ExecutableBinding.js';
import { normalizeExecutablePath } from './relativePath.js';
import { openInsideRoot } from './safeOpen.js';
import { isSha256Hex, sha256OfHandle } from './sha256.js';
import { ioError } from '../errors/ioError.js';
import { untrusted } from './untrusted.js';
import { markVerified } from './verified.js';

/** Input of {@link ExecutableBinding.bindModuleEntry}. */
export interface BindModuleEntryOptions {
  /** The plugin's install root (absolute; links in its own path are resolved once, here). */
  readonly installRoot: string;
  /** The manifest's `entry`, relative to the install root. */
  readonly entry: string;
}

/** An entry module verified just before a start of the ESM runner. */
export interface VerifiedModuleEntry {
  /** The install root, as recorded (a real path). */
  readonly installRoot: string;
  /** The entry, relative to the install root, `/`-separated. */
  readonly entryPath: string;
  /** The SHA-256 (hex) of the verified bytes. */
  readonly sha256: string;
  /** A read-only descriptor on an unnamed copy of exactly the verified bytes; the runner inherits it. */
  readonly fd: number;
  /** Closes the descriptor; call once the runner has been spawned (or spawning failed). */
  release(): void;
}


/**
 * What the lock records as `argv_normalized` of an entry binding. It only
 * describes the launch (the ESM runner serving the install root); the real
 * command is built at each start, since the runner's location belongs to the
 * host's installation of this library, not to the plugin.
 */
function moduleEntryArgv(installRoot: string): string[] {
  return ['esm-runner', '--', installRoot];
}

/** Extensions Node loads as ES modules without asking a package.json (`.js` as ESM needs `"type": "module"`). */
export const ESM_ENTRY_EXTENSIONS: readonly string[] = ['.mjs', '.js'];

function checkExtension(relative: string): Result<string, HostError> {
  if (ESM_ENTRY_EXTENSIONS.includes(extname(relative))) return ok(relative);
  return err(
    untrusted('unsupported_format', `The entry "${relative}" is not an ES module file (${ESM_ENTRY_EXTENSIONS.join(', ')}).`, { path: relative }),
  );
}

/**
 * Pins an `esm-module` plugin's entry module at install. Refuses, with
 * `PLUGIN_EXECUTABLE_UNTRUSTED` and `details.reason`: absolute paths, `..`,
 * links anywhere below the root, files outside it, non-regular files, files
 * others may write, and extensions other than `.mjs` / `.js`.
 */
export function bindModuleEntry(options: BindModuleEntryOptions): ResultAsync<ExecutableBindingRecord, HostError> {
  return new ResultAsync(
    (async (): Promise<Result<ExecutableBindingRecord, HostError>> => {
      const relative = normalizeExecutablePath(options.entry).andThen(checkExtension);
      if (relative.isErr()) return err(relative.error);
      const root = await realInstallRoot(options.installRoot);
      if (root.isErr()) return err(root.error);
      const opened = await openInsideRoot(root.value, relative.value);
      if (opened.isErr()) return err(opened.error);
      try {
        const sha256 = await sha256OfHandle(opened.value.handle);
        return ok({
          executable_path: relative.value,
          executable_sha256: sha256,
          argv_normalized: moduleEntryArgv(root.value),
          install_root: root.value,
          kind: 'esm-entry',
        });
      } catch (e) {
        return err(ioError('Reading', opened.value.path, e));
      } finally {
        await opened.value.handle.close().catch(() => undefined);
      }
    })(),
  );
}

/** Checks an `esm-entry` binding record's own consistency; returns its entry path. */
export function checkEntryRecord(record: ExecutableBindingRecord): Result<string, HostError> {
  const relative = normalizeExecutablePath(record.executable_path).andThen(checkExtension);
  const argv = isAbsolute(record.install_root) ? moduleEntryArgv(record.install_root) : [];
  const consistent =
    relative.isOk() &&
    relative.value === record.executable_path &&
    record.kind === 'esm-entry' &&
    record.interpreter === undefined &&
    isSha256Hex(record.executable_sha256) &&
    argv.length > 0 &&
    record.argv_normalized.length === argv.length &&
    argv.every((part, i) => record.argv_normalized[i] === part);
  if (!consistent) {
    return err(
      untrusted('binding_inconsistent', 'The recorded entry binding is malformed or is not an esm-entry binding.', {
        executable_path: record.executable_path,
      }),
    );
  }
  return ok(record.executable_path);
}

function verifiedEntry(record: ExecutableBindingRecord, sha256: string, handle: FileHandle): VerifiedModuleEntry {
  let released = false;
  return {
    installRoot: record.install_root,
    entryPath: record.executable_path,
    sha256,
    fd: handle.fd,
    release(): void {
      if (released) return;
      released = true;
      void handle.close().catch(() => undefined);
    },
  };
}

async function verify(record: ExecutableBindingRecord, options: VerifyExecutableOptions): Promise<Result<VerifiedModuleEntry, HostError>> {
  const relative = checkEntryRecord(record);
  if (relative.isErr()) return err(relative.error);
  const copied = await copyPinnedFile(record, relative.value, options);
  if (copied.isErr()) return err(copied.error);
  return ok(verifiedEntry(record, copied.value.sha256, copied.value.handle));
}

/**
 * The command that runs a verified entry: the ESM runner's `command`, whose
 * arguments tell it to read the entry from fd 3, inherits the entry's
 * descriptor as fd 3 (the command's own descriptors follow it, from fd 4)
 * and carries its digest. Releasing it releases the entry.
 */
export function runVerifiedEntry(command: PluginCommand, entry: VerifiedModuleEntry): VerifiedExecutable {
  return markVerified(
    {
      argv: command.argv,
      inheritFds: [entry.fd, ...command.inheritFds],
      readOnlyPaths: command.readOnlyPaths,
      installRoot: command.installRoot,
      release: () => {
        command.release();
        entry.release();
      },
    },
    entry.sha256,
  );
}

/**
 * Verifies a recorded entry binding just before the ESM runner starts.
 * Never cached: every call re-hashes the installed entry (opened without
 * following links, compared in constant time). A mismatch is
 * `PLUGIN_EXECUTABLE_UNTRUSTED` with `details.reason` (`digest_mismatch`,
 * `link`, `missing`, `binding_inconsistent`, …) and `details.quarantine: true`. The caller must call `release()` once the runner has been spawned.
 */
export function verifyModuleEntry(record: ExecutableBindingRecord, options: VerifyExecutableOptions): ResultAsync<VerifiedModuleEntry, HostError> {
  return new ResultAsync(verify(record, options).then((r) => r.mapErr(forQuarantine)));
}
