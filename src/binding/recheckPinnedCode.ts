/**
 * The digest check of a recorded binding on its own, without preparing a
 * launch: for deciding, after a plugin failed, whether its code changed on
 * disk. Nothing is copied and no descriptor outlives the call.
 */
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { checkRecordShape, forQuarantine, hashPinnedFile, type ExecutableBindingRecord } from './ExecutableBinding.js';
import { openPinnedInterpreter } from './interpreter.js';
import { checkEntryRecord } from './ModuleEntryBinding.js';

async function recheck(record: ExecutableBindingRecord): Promise<Result<void, HostError>> {
  const relative = record.kind === 'esm-entry' ? checkEntryRecord(record) : checkRecordShape(record);
  if (relative.isErr()) return err(relative.error);
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
 * entry) and its pinned interpreter where they are. Refuses exactly as
 * `verifyExecutableBinding` and `verifyModuleEntry` do, with
 * `PLUGIN_EXECUTABLE_UNTRUSTED`, `details.reason` and `details.quarantine: true`.
 */
export function recheckPinnedCode(record: ExecutableBindingRecord): ResultAsync<void, HostError> {
  return new ResultAsync(recheck(record).then((r) => r.mapErr(forQuarantine)));
}
