import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

/** Where a profile's directory is when the host does not name one. */
export interface ProfileLocation {
  /** The host application's name; the profile lives under `$XDG_DATA_HOME/<appName>/`. */
  readonly appName: string;
  /** The profile's name. */
  readonly profile: string;
  /** The environment to read `XDG_DATA_HOME` and `HOME` from. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** `$XDG_DATA_HOME/<appName>/<profile>`, with `~/.local/share` when XDG_DATA_HOME is unset or relative. */
export function defaultProfileDir(location: ProfileLocation): string {
  const env = location.env ?? process.env;
  const xdg = env.XDG_DATA_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(env.HOME ?? homedir(), '.local', 'share');
  return join(base, location.appName, location.profile);
}

/**
 * The one map of a profile directory. Everything a host writes lives below
 * it, and the sandbox hides all of it from plugins except each plugin's own
 * install root (read-only) and data directory.
 */
export class ProfileLayout {
  /** The profile directory (absolute). */
  readonly root: string;

  /** @param profileDir - The profile directory; resolved to an absolute path. */
  constructor(profileDir: string) {
    this.root = resolve(profileDir);
  }

  /** Where packages are unpacked before they are validated and published. */
  get stagingDir(): string {
    return join(this.root, 'staging');
  }

  /** The parent of every install root. */
  get pluginsDir(): string {
    return join(this.root, 'plugins');
  }

  /** A fresh install root for one install of a plugin (a new one per install, so an upgrade never edits a live root). */
  installRoot(pluginId: string, version: string, nonce: string): string {
    return join(this.pluginsDir, pluginId, `${encodeURIComponent(version)}-${nonce}`);
  }

  /** The plugin's persistent data directory (its writable area unless `fs_write_dir` names a subtree). */
  dataDir(pluginId: string): string {
    return join(this.root, 'data', pluginId);
  }

  /** The profile's schema store: `plugin-schemas/<ref>.<sha256>.json`. */
  get schemaStoreDir(): string {
    return join(this.root, 'plugin-schemas');
  }

  /**
   * The name of a served schema's file in the schema store,
   * `<ref>.<sha256>.json`: the digest of its content is part of the name.
   */
  schemaFileName(ref: string, sha256: string): string {
    return `${ref}.${sha256}.json`;
  }

  /** The stored copy of one served schema. */
  schemaFile(ref: string, sha256: string): string {
    return join(this.schemaStoreDir, this.schemaFileName(ref, sha256));
  }

  /** The pins of installs in progress, which keep the schema files they rely on from being collected. */
  get schemaPinsDir(): string {
    return join(this.root, '.schema-pins');
  }

  /** The lock file held while schema files are written, pinned or collected. */
  get schemaStoreLockFile(): string {
    return join(this.root, '.schema-store.lock');
  }

  /** Host-private directory for the verified copies that spawns execute. */
  get execDir(): string {
    return join(this.root, 'exec');
  }
}
