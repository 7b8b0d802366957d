import type { PluginCommand, VerifiedExecutable } from '../process/VerifiedExecutable.js';

/**
 * The one place a {@link VerifiedExecutable} is made: the binding module
 * marks a command whose code it has just hashed to `sha256`. Only the
 * launch fields are copied, so nothing of an unverified command's own
 * marks carries over.
 */
export function markVerified(command: PluginCommand, sha256: string): VerifiedExecutable {
  const verified = {
    argv: command.argv,
    inheritFds: command.inheritFds,
    ...(command.programFile === undefined ? {} : { programFile: command.programFile }),
    ...(command.mountedMain === undefined ? {} : { mountedMain: command.mountedMain }),
    readOnlyPaths: command.readOnlyPaths,
    installRoot: command.installRoot,
    sha256,
    release: () => command.release(),
  };
  return verified as VerifiedExecutable;
}
