/**
 * The digest check of a recorded binding on its own, without preparing a
 * launch: for deciding, after a plugin failed, whether its code changed on
 * disk. Nothing is copied and no descriptor outlives the call.
 */
import { err, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { checkRecordShape, forQuarantine, hashPinnedFile, type ExecutableBindingRecord } from './ExecutableBinding.js';
import { openPinnedInterpreter } from './interpreter.js';
import { checkEntryRecord } from './ModuleEntryBinding.js';
import { verifyPackageTree } from './packageTree.js';

/**
 * Checks every file of a binding's install root against its pinned file
 * list (see `verifyPackageTree`); a binding recorded before whole trees were
 * pinned has none, and passes. Refusals carry `details.quarantine: true`.
 */
export function verifyBindingTree(record: ExecutableBindingRecord): ResultAsync<void, HostError> {
  if (record.tree === undefined) return okAsync(undefined);
  return verifyPackageTree(record.install_root, record.tree, record.executable_path)
    .map(() => undefined)
    .mapErr(forQuarantine);
}

async function recheck(record: ExecutableBindingRecord): Promise<Result<void, HostError>> {
  const relative = record.kind === 'esm-entry' ? checkEntryRecord(record) : checkRecordShape(record);
  if (relative.isErr()) return err(relative.error);
  const tree = await verifyBindingTree(record);
  if (tree.isErr()) return err(tree.error);
  const hashed = await hashPinnedFile(record, relative.value);
  if (hashed.isErr()) return err(hashed.error);
  if (record.interpreter === undefined) return ok(undefined);
  const interpreter = await openPinnedInterpreter(record.interpreter);
  if (interpreter.isErr()) return err(interpreter.error);
  await interpreter.value.handle.close().catch(() => undefined);
  return ok(undefined);
}

/**
 * Re-hashes a binding's pinned file (an executable, or an ESM plugin's
 * entry) and its pinned interpreter where they are, after checking the rest
 * of the install root against the pinned file list. Refuses exactly as
 * `verifyExecutableBinding` and `verifyModuleEntry` do, with
 * `PLUGIN_EXECUTABLE_UNTRUSTED`, `details.reason` and `details.quarantine: true`.
 */
export function recheckPinnedCode(record: ExecutableBindingRecord): ResultAsync<void, HostError> {
  return new ResultAsync(recheck(record).then((r) => r.mapErr(forQuarantine)));
}
