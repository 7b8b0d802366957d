import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { errnoOf } from '../errors/ioError.js';

/**
 * Creates `dir` and its missing parents one level at a time, after walking up
 * to the nearest existing directory (at most as many steps as the path has
 * parts). Node's recursive mkdir retries ENOENT without end on a file system
 * that refuses new names (any path under /proc), so a profile directory given
 * there would hang the host instead of failing. Rejects with the errno error
 * of the level that could not be read or made (ENOTDIR for a level that is a
 * file).
 */
export async function makeDirectoryLevels(dir: string, mode: number): Promise<void> {
  const missing: string[] = [];
  for (let level = resolve(dir); ; level = dirname(level)) {
    try {
      if ((await stat(level)).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, '${level}'`), { code: 'ENOTDIR', path: level });
    } catch (cause) {
      if (errnoOf(cause) !== 'ENOENT') throw cause;
      missing.unshift(level);
      if (dirname(level) === level) break;
    }
  }
  for (const level of missing) {
    await mkdir(level, { mode }).catch((cause: unknown) => {
      if (errnoOf(cause) !== 'EEXIST') throw cause;
    });
  }
}
