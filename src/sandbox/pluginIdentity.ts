import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import pluginUids from '../../etc/sandbox/plugin-uids.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';

/** The host user and group a plugin's processes run as. */
export interface PluginIdentity {
  /** The host user id (real, effective, saved and file-system). */
  readonly uid: number;
  /** The host group id; no supplementary groups. */
  readonly gid: number;
}

/** A range of host user ids: `first` for the install's introspection, one per plugin from `first + 1` up to `first + count - 1`. */
export interface PluginUidRange {
  /** The lowest id of the range. */
  readonly first: number;
  /** How many ids the range holds, at least 2. */
  readonly count: number;
}

/** The default range, from `etc/sandbox/plugin-uids.json`. */
export const DEFAULT_PLUGIN_UID_RANGE: PluginUidRange = { first: pluginUids.first, count: pluginUids.count };

/** The user and group ids the host's account files name (`/etc/passwd`, `/etc/group`), with one of their names. */
function localAccountIds(): Map<number, string> {
  const ids = new Map<number, string>();
  for (const file of pluginUids.accountDatabases) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const [name, , id] = line.split(':');
      if (name && id && /^\d+$/.test(id) && !ids.has(Number(id))) ids.set(Number(id), name);
    }
  }
  return ids;
}

/**
 * Checks a configured range: positive integers, above the root and system
 * ids, below 2^32 - 1 (the "no id" value), and holding no id an account of
 * the host has (as user or group), since a plugin would share that account's
 * files, limits and kernel accounting.
 */
export function checkUidRange(range: PluginUidRange): Result<PluginUidRange, HostError> {
  const { first, count } = range;
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(count) || first < 1000 || count < 2 || first + count > 0xffff_ffff) {
    return err(
      hostError('HOST_INVALID_OPTIONS', `pluginUidRange ${JSON.stringify(range)} is not a range of ordinary user ids`, {
        details: { option: 'pluginUidRange', first, count },
        hint: 'Pass integers with first >= 1000, count >= 2 (the first id is the install introspection\'s) and first + count <= 4294967295, a range no real user or other service uses.',
      }),
    );
  }
  const taken = [...localAccountIds()].find(([id]) => inRange(id, range));
  if (taken !== undefined) {
    return err(
      hostError('HOST_INVALID_OPTIONS', `pluginUidRange ${JSON.stringify(range)} holds id ${taken[0]} of the host account '${taken[1]}'`, {
        details: { option: 'pluginUidRange', first, count, account_id: taken[0], account: taken[1] },
        hint: 'Pass a range no user or group of the host uses (the default starts at 1900000000); plugins must never run as an existing account.',
      }),
    );
  }
  return ok(range);
}

const inRange = (uid: number, range: PluginUidRange): boolean => uid >= range.first && uid < range.first + range.count;

/** The owner of a data directory when it is a real directory owned by an id of the range. */
function ownerInRange(path: string, range: PluginUidRange): number | undefined {
  try {
    const st = lstatSync(path);
    return st.isDirectory() && inRange(st.uid, range) ? st.uid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The user an install's introspection runs a package's server as when the
 * host is root: the range's first id, which {@link pluginIdentity} gives no
 * plugin, so that the server of a package not yet accepted shares no user
 * with an installed plugin (its files, its processes).
 */
export function introspectionIdentity(range: PluginUidRange = DEFAULT_PLUGIN_UID_RANGE): PluginIdentity {
  return { uid: range.first, gid: range.first };
}

/**
 * The user a plugin runs as when the host is root: the owner of its data
 * directory once it has one from the range (stable across upgrades and host
 * restarts), otherwise an id derived from a hash of the plugin id, moving
 * onward past ids that own another plugin's data directory, so no two
 * plugins share a user. The group id equals the user id. The range's first
 * id is never a plugin's ({@link introspectionIdentity}); a data directory
 * it owns is given another.
 *
 * @param dataRoot - The parent of every plugin's data directory (`<profile>/data`).
 */
export function pluginIdentity(dataRoot: string, pluginId: string, range: PluginUidRange = DEFAULT_PLUGIN_UID_RANGE): Result<PluginIdentity, HostError> {
  let names: string[] = [];
  try {
    names = readdirSync(dataRoot);
  } catch {
    // No data directory yet: no plugin owns an id.
  }
  const taken = new Map<number, string>();
  for (const name of names) {
    const uid = ownerInRange(join(dataRoot, name), range);
    if (uid !== undefined && name !== pluginId) taken.set(uid, name);
  }
  const reserved = introspectionIdentity(range).uid;
  const own = ownerInRange(join(dataRoot, pluginId), range);
  if (own !== undefined && own !== reserved && !taken.has(own)) return ok({ uid: own, gid: own });
  const pluginIds = range.count - 1;
  const start = createHash('sha256').update(pluginId).digest().readUInt32BE(0) % pluginIds;
  for (let step = 0; step < pluginIds; step++) {
    const uid = reserved + 1 + ((start + step) % pluginIds);
    if (!taken.has(uid)) return ok({ uid, gid: uid });
  }
  return err(
    hostError('HOST_INVALID_OPTIONS', `every user id of the plugin range is taken; no id is left for '${pluginId}'`, {
      details: { plugin_id: pluginId, first: range.first, count: range.count },
      hint: 'Configure a larger pluginUidRange, or remove the data directories of plugins that are gone.',
    }),
  );
}
