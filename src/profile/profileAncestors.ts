/**
 * The folders above a profile directory, checked as ssh's StrictModes
 * checks the path to `authorized_keys` (sandbox/replaceableFolders.ts, the
 * rule the Landlock launcher's path is held to): the profile directory's own
 * owner and mode say nothing if a folder above it lets another local user
 * rename the profile away and put one of theirs in its place (a
 * `plugins.lock` naming their install roots, a catalog the host publishes
 * and runs). Review R9 N3.
 */
import { resolve } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { replaceableFolder } from '../sandbox/replaceableFolders.js';
import { hostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';

/**
 * Refuses the profile directory (`HOST_INVALID_OPTIONS`, `details.option`
 * `profileDir`) when a folder above it could be changed by a user other
 * than `uid` and root: one owned by such a user (`reason`
 * `ancestor_foreign_owner`), or one its group or others can write without
 * the sticky bit (`ancestor_writable_by_others`); `details.ancestor` and
 * `details.mode` name it, and so does the hint. A sticky folder owned by root
 * or `uid` (`/tmp`, mode 1777) lets others add entries but not rename or
 * remove this user's, and is accepted. The folders of the path as given and
 * of its real path are checked.
 */
export function profileAncestorsTrusted(profileDir: string, uid: number): Result<void, HostError> {
  const given = resolve(profileDir);
  const found = replaceableFolder(given, uid);
  if (found === undefined) return ok(undefined);
  const { folder } = found;
  switch (found.reason) {
    case 'unresolved':
      return err(ioError('Resolving the profile directory', given, found.cause));
    case 'missing':
      return err(ioError('Reading a folder above the profile directory', folder, Object.assign(new Error(`${folder} is gone`), { code: 'ENOENT' })));
    case 'foreign_owner':
      return err(
        hostError('HOST_INVALID_OPTIONS', `The folder ${folder} above the profile directory ${given} belongs to user ${found.ownerUid}, not to this process's user (${uid}) or root: that user can move the profile away and put another in its place.`, {
          details: { option: 'profileDir', reason: 'ancestor_foreign_owner', path: given, ancestor: folder, owner_uid: found.ownerUid, mode: found.mode },
          hint: `Keep the profile below folders only you or root own (${folder} belongs to user ${found.ownerUid}, mode ${found.mode}), or have them handed over (chown).`,
        }),
      );
    case 'writable_by_others':
      return err(
        hostError('HOST_INVALID_OPTIONS', `The folder ${folder} above the profile directory ${given} can be written by its group or by others and is not sticky (mode ${found.mode}): another user can move the profile away and put another in its place.`, {
          details: { option: 'profileDir', reason: 'ancestor_writable_by_others', path: given, ancestor: folder, mode: found.mode },
          hint: `Make ${folder} (mode ${found.mode}) writable by its owner alone (chmod go-w ${folder}) or sticky as /tmp is (chmod +t ${folder}), or keep the profile elsewhere.`,
        }),
      );
  }
}
