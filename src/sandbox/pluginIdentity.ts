import { createHash } from 'node:crypto';
import { lstatSync, readdirSync } from 'node:fs';
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

/** A range of host user ids given to plugins, one per plugin: `first` up to `first + count - 1`. */
export interface PluginUidRange {
  /** The lowest id of the range. */
  readonly first: number;
  /** How many ids the range holds. */
  readonly count: number;
}

/** The default range, from `etc/sandbox/plugin-uids.json`. */
export const DEFAULT_PLUGIN_UID_RANGE: PluginUidRange = { first: pluginUids.first, count: pluginUids.count };

/** Checks a configured range: positive integers, above the root and system ids, below 2^32 - 1 (the "no id" value). */
export function checkUidRange(range: PluginUidRange): Result<PluginUidRange, HostError> {
  const { first, count } = range;
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(count) || first < 1000 || count < 1 || first + count > 0xffff_ffff) {
    return err(
      hostError('HOST_INVALID_OPTIONS', `pluginUidRange ${JSON.stringify(range)} is not a range of ordinary user ids`, {
        details: { option: 'pluginUidRange', first, count },
        hint: 'Pass integers with first >= 1000, count >= 1 and first + count <= 4294967295, a range no real user or other service uses.',
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
 * The user a plugin runs as when the host is root: the owner of its data
 * directory once it has one from the range (stable across upgrades and host
 * restarts), otherwise an id derived from a hash of the plugin id, moving
 * onward past ids that own another plugin's data directory, so no two
 * plugins share a user. The group id equals the user id.
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
  const own = ownerInRange(join(dataRoot, pluginId), range);
  if (own !== undefined && !taken.has(own)) return ok({ uid: own, gid: own });
  const start = createHash('sha256').update(pluginId).digest().readUInt32BE(0) % range.count;
  for (let step = 0; step < range.count; step++) {
    const uid = range.first + ((start + step) % range.count);
    if (!taken.has(uid)) return ok({ uid, gid: uid });
  }
  return err(
    hostError('HOST_INVALID_OPTIONS', `every user id of the plugin range is taken; no id is left for '${pluginId}'`, {
      details: { plugin_id: pluginId, first: range.first, count: range.count },
      hint: 'Configure a larger pluginUidRange, or remove the data directories of plugins that are gone.',
    }),
  );
}
