import { constants } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import { join } from 'node:path';
import { errAsync, ResultAsync } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { validateEntryName } from './entryName.js';
import { executableNotInPackage } from './manifestHostChecks.js';
import { refuse, toHostError } from './refusal.js';
import { EXECUTABLE_MODE } from './StagingTree.js';

const untrusted = (relPath: string, reason: string, message: string): HostError =>
  hostError('PLUGIN_EXECUTABLE_UNTRUSTED', message, { details: { path: relPath, reason } });

async function markExecutable(root: string, relPath: string, segments: readonly string[]): Promise<void> {
  for (let depth = 1; depth < segments.length; depth++) {
    const dir = await lstat(join(root, ...segments.slice(0, depth))).catch((cause: unknown) => {
      if ((cause as NodeJS.ErrnoException).code === 'ENOENT') throw untrusted(relPath, 'missing', executableNotInPackage(relPath));
      throw cause;
    });
    if (!dir.isDirectory()) {
      refuse('PLUGIN_EXECUTABLE_UNTRUSTED', `'${relPath}' goes through something that is not a plain directory`, {
        details: { path: relPath, reason: dir.isSymbolicLink() ? 'symlink' : 'not_a_directory' },
      });
    }
  }
  const handle = await open(join(root, ...segments), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (cause: unknown) => {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw untrusted(relPath, 'symlink', `executable '${relPath}' is a link`);
      if (code === 'ENOENT') throw untrusted(relPath, 'missing', executableNotInPackage(relPath));
      throw cause;
    },
  );
  try {
    if (!(await handle.stat()).isFile()) throw untrusted(relPath, 'not_a_file', `executable '${relPath}' is not a regular file`);
    await handle.chmod(EXECUTABLE_MODE);
  } finally {
    await handle.close();
  }
}

/**
 * Gives the file at `relPath` (a `/`-separated path inside `root`) mode 0755,
 * for the executable a manifest names when the archive did not mark it
 * executable. Refuses (`PLUGIN_EXECUTABLE_UNTRUSTED`) a path that is
 * absolute, traverses with `..`, names a link or anything but a regular file,
 * or does not exist; the file is opened without following links.
 */
export function setExecutableMode(root: string, relPath: string): ResultAsync<void, HostError> {
  const name = validateEntryName(relPath);
  if (name.isErr()) {
    return errAsync(untrusted(relPath, name.error.reason, `executable path '${relPath}': ${name.error.message}`));
  }
  if (name.value.segments.length === 0 || name.value.trailingSlash) {
    return errAsync(untrusted(relPath, 'not_a_file', `executable path '${relPath}' names a directory`));
  }
  return ResultAsync.fromPromise(markExecutable(root, relPath, name.value.segments), (cause) =>
    toHostError(cause, 'Making executable', relPath),
  );
}
