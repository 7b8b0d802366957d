import { homedir } from 'node:os';
import { join } from 'node:path';
import secretLocations from '../../etc/sandbox/secret-locations.json' with { type: 'json' };

/**
 * The well-known secret locations hidden from every plugin (SSH, cloud and
 * registry credentials, keyrings, shadow files), as written in
 * `etc/sandbox/secret-locations.json`; `~/` means the host user's home.
 */
export const DEFAULT_SECRET_PATHS: readonly string[] = secretLocations.paths;

/** Expands a leading `~/` (or a lone `~`) to `home`; other paths are returned as they are. */
export function expandHome(path: string, home: string = homedir()): string {
  if (path === '~') return home;
  return path.startsWith('~/') ? join(home, path.slice(2)) : path;
}
