/**
 * The directories the host creates and binds for one plugin (its data
 * directory and its writable directory), opened one name at a time without
 * following links. A plugin can plant links and files anywhere in its own
 * data directory, and a later version of it may name such a link in
 * `fs_write_dir`; resolving a path string there would hand the plugin
 * whatever the link points to. Instead each directory is created and opened
 * relative to its parent's descriptor (through `/proc/self/fd`, since Node
 * has no `mkdirat`/`openat`), with O_NOFOLLOW, its real path checked against
 * the data directory's, and the descriptor (not the path) is what the
 * sandbox binds, so a rename after the check cannot redirect the mount.
 */
import { closeSync, constants, fchmodSync, fchownSync, fstatSync, lchownSync, lstatSync, mkdirSync, openSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import type { PluginIdentity } from './pluginIdentity.js';

/** A directory opened for binding: its verified real path and the host descriptor on it. */
export interface OpenedDirectory {
  /** The real host path the descriptor was verified to name (also where the sandbox shows it). */
  readonly path: string;
  /** The host's descriptor on the directory (O_DIRECTORY, close-on-exec); the spawn hands it to the launcher. */
  readonly fd: number;
}

/** A plugin's opened directories; `close` releases both descriptors (idempotent). */
export interface PluginDirectories {
  /** The data directory (`HOME`), bound read-only. */
  readonly data: OpenedDirectory;
  /** The writable directory: the data directory itself or the `fs_write_dir` subtree. */
  readonly write: OpenedDirectory;
  /** Closes the descriptors. */
  close(): void;
}

/** What {@link openPluginDirectories} needs. */
export interface PluginDirectoryRequest {
  /** The host-owned parent of every plugin's data directory (`<profile>/data`); created if missing. */
  readonly dataRoot: string;
  /** The plugin id: the data directory's name under `dataRoot`. */
  readonly pluginId: string;
  /** The names from the data directory down to the writable directory (`writeDirComponents`). */
  readonly writeComponents: readonly string[];
  /** The manifest's `fs_write_dir`, for error details. */
  readonly fsWriteDir: string;
  /** The user the plugin runs as, when the host switches users: directories are given to it (mode 0700). */
  readonly owner?: PluginIdentity;
}

const OPEN_DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

const procPath = (fd: number, name?: string): string => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

// Without /proc (macOS) names are reached through the parent's path and checked against the descriptor by identity.
const VIA_PROC = process.platform === 'linux';

/** How `name` inside the directory open as `parentFd` (at `parentPath`) is reached. */
const entryPath = (parentFd: number, parentPath: string, name: string): string => (VIA_PROC ? procPath(parentFd, name) : join(parentPath, name));

/** The real path of the directory open as `fd`, expected to be `expected`. */
function realPathOf(fd: number, expected: string): string {
  if (VIA_PROC) return readlinkSync(procPath(fd));
  const real = realpathSync(expected);
  const opened = fstatSync(fd);
  const named = statSync(real);
  return opened.dev === named.dev && opened.ino === named.ino ? real : `${real} (not the directory that was opened)`;
}

/** What sits at `name` inside the directory `parentFd`, for an error's details. */
function describeEntry(parentFd: number, parentPath: string, name: string): Record<string, unknown> {
  try {
    const path = entryPath(parentFd, parentPath, name);
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return { found: 'symlink', link_target: readlinkSync(path) };
    if (st.isFile()) return { found: 'file' };
    if (st.isDirectory()) return { found: 'directory' };
    return { found: 'special file' };
  } catch (cause) {
    return { found: (cause as NodeJS.ErrnoException).code ?? 'unknown' };
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed.
  }
}

/**
 * Creates (mode 0700) and opens `name` inside `parentFd` without following a
 * link at `name`, and checks the opened directory really is
 * `<parentPath>/<name>`: mkdir never follows a final link (EEXIST) and
 * O_NOFOLLOW refuses one (ELOOP), O_DIRECTORY anything but a directory.
 */
function openChild(parentFd: number, parentPath: string, name: string, refuse: (name: string, details: Record<string, unknown>) => HostError): Result<{ fd: number; created: boolean }, HostError> {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) return err(refuse(name, { found: 'invalid name' }));
  let created = false;
  try {
    mkdirSync(entryPath(parentFd, parentPath, name), 0o700);
    created = true;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'EEXIST') {
      return err(ioError('Creating', join(parentPath, name), cause));
    }
  }
  let fd: number;
  try {
    fd = openSync(entryPath(parentFd, parentPath, name), OPEN_DIRECTORY);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENOENT') return err(refuse(name, describeEntry(parentFd, parentPath, name)));
    return err(ioError('Opening', join(parentPath, name), cause));
  }
  const expected = join(parentPath, name);
  let real: string;
  try {
    real = realPathOf(fd, expected);
  } catch (cause) {
    closeQuietly(fd);
    return err(ioError('Resolving', expected, cause));
  }
  if (real !== expected) {
    closeQuietly(fd);
    return err(refuse(name, { found: 'moved directory', real_path: real }));
  }
  return ok({ fd, created });
}

/**
 * Gives a plugin's data directory tree to its user (Linux: only a root host
 * running bubblewrap switches users), never following a link:
 * directories are entered through O_NOFOLLOW descriptors, everything else
 * changes owner with lchown. A file with several names is left as it is: one
 * of its other names may lie outside the data directory.
 */
function giveTree(dirFd: number, owner: PluginIdentity): void {
  for (const entry of readdirSync(procPath(dirFd), { withFileTypes: true })) {
    const path = procPath(dirFd, entry.name);
    try {
      if (entry.isDirectory()) {
        const fd = openSync(path, OPEN_DIRECTORY);
        try {
          fchownSync(fd, owner.uid, owner.gid);
          giveTree(fd, owner);
        } finally {
          closeSync(fd);
        }
      } else if (entry.isSymbolicLink() || lstatSync(path).nlink === 1) {
        lchownSync(path, owner.uid, owner.gid);
      }
    } catch {
      // Replaced while walked (a running instance); the next spawn walks again.
    }
  }
}

/**
 * Creates and opens a plugin's data directory and writable directory, each
 * verified to lie inside the data directory, without following any link the
 * plugin could have placed. A link, file or moved directory on the way fails
 * with PLUGIN_FS_WRITE_OUTSIDE_SANDBOX naming the component and what it is;
 * nothing is created outside the data directory. With an `owner`, the data
 * directory is made theirs (mode 0700, the existing tree migrated) and so is
 * every directory created for them.
 */
export function openPluginDirectories(request: PluginDirectoryRequest): Result<PluginDirectories, HostError> {
  const { dataRoot, pluginId, owner } = request;
  const opened: number[] = [];
  const closeAll = (): void => {
    for (const fd of opened.splice(0)) closeQuietly(fd);
  };
  const refuse = (component: string, details: Record<string, unknown>): HostError =>
    hostError('PLUGIN_FS_WRITE_OUTSIDE_SANDBOX', `the writable directory of '${pluginId}' does not resolve to a directory inside its data directory: ${JSON.stringify(component)} is a ${String(details.found)}`, {
      details: { plugin_id: pluginId, fs_write_dir: request.fsWriteDir, component, ...details },
      hint: 'Remove the link or file the plugin left in its data directory at that name (or declare another fs_write_dir); the host never follows links inside a data directory.',
    });
  try {
    mkdirSync(dataRoot, { recursive: true, mode: 0o700 });
    const rootFd = openSync(dataRoot, constants.O_RDONLY | constants.O_DIRECTORY);
    opened.push(rootFd);
    const rootPath = realPathOf(rootFd, dataRoot);
    const data = openChild(rootFd, rootPath, pluginId, refuse);
    if (data.isErr()) {
      closeAll();
      return err(data.error);
    }
    opened.push(data.value.fd);
    const dataPath = join(rootPath, pluginId);
    if (owner !== undefined) {
      const st = fstatSync(data.value.fd);
      if (st.uid !== owner.uid || st.gid !== owner.gid) {
        // The directory itself last: an interrupted migration is walked again at the next spawn.
        giveTree(data.value.fd, owner);
        fchownSync(data.value.fd, owner.uid, owner.gid);
      }
      if ((st.mode & 0o777) !== 0o700) fchmodSync(data.value.fd, 0o700);
    }
    let parentFd = data.value.fd;
    let parentPath = dataPath;
    for (const name of request.writeComponents) {
      const child = openChild(parentFd, parentPath, name, refuse);
      if (child.isErr()) {
        closeAll();
        return err(child.error);
      }
      opened.push(child.value.fd);
      if (owner !== undefined && child.value.created) fchownSync(child.value.fd, owner.uid, owner.gid);
      parentFd = child.value.fd;
      parentPath = join(parentPath, name);
    }
    const dataFd = data.value.fd;
    const writeFd = parentFd;
    // Only the two bound descriptors stay open; the data root and intermediate directories are done with.
    for (const fd of opened.splice(0)) if (fd !== dataFd && fd !== writeFd) closeQuietly(fd);
    opened.push(dataFd);
    if (writeFd !== dataFd) opened.push(writeFd);
    return ok({ data: { path: dataPath, fd: dataFd }, write: { path: parentPath, fd: writeFd }, close: closeAll });
  } catch (cause) {
    closeAll();
    return err(ioError(`Preparing the data directory of '${pluginId}'`, undefined, cause));
  }
}

/**
 * Where {@link openPluginDirectories} binds a plugin's directories, without
 * creating anything: the data root's real path (when it exists) joined with
 * the plugin id and the write components. What `info()` reports.
 */
export function pluginDirectoryPaths(dataRoot: string, pluginId: string, writeComponents: readonly string[]): { readonly data: string; readonly write: string } {
  let root = dataRoot;
  try {
    root = realpathSync(dataRoot);
  } catch {
    // Not created yet: the first spawn creates it where it is named.
  }
  const data = join(root, pluginId);
  return { data, write: join(data, ...writeComponents) };
}
