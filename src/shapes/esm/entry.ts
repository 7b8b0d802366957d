import { realpath, stat } from 'node:fs/promises';
import { extname, isAbsolute, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { ESM_ENTRY_EXTENSIONS } from '../../binding/ModuleEntryBinding.js';
import { hostError, type HostError } from '../../errors/HostError.js';

/** A plugin entry that resolved inside its plugin root. */
export interface ResolvedEntry {
  /** The plugin root, links resolved. */
  readonly root: string;
  /** The entry file, links resolved; always inside `root`. */
  readonly path: string;
}

const entryInvalid = (message: string, details: Record<string, unknown>, cause?: unknown): HostError =>
  hostError('PLUGIN_ENTRY_INVALID', message, cause === undefined ? { details } : { details, cause });

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/**
 * Resolves `<root>/<entry>` with every link followed and requires the result
 * to be a regular `.mjs`/`.js` file inside the plugin root (itself resolved),
 * so neither `../` nor a link can point the loader outside the package.
 */
export function resolveEntry(root: string, entry: string): ResultAsync<ResolvedEntry, HostError> {
  const resolve = async (): Promise<Result<ResolvedEntry, HostError>> => {
    const details = { root, entry };
    if (isAbsolute(entry)) return err(entryInvalid(`entry ${JSON.stringify(entry)} must be relative to the plugin root`, details));
    let realRoot: string;
    let realEntry: string;
    try {
      realRoot = await realpath(root);
    } catch (cause) {
      return err(entryInvalid(`plugin root ${root} cannot be resolved`, details, cause));
    }
    try {
      realEntry = await realpath(join(realRoot, entry));
    } catch (cause) {
      return err(entryInvalid(`entry ${JSON.stringify(entry)} does not exist in ${root}`, details, cause));
    }
    if (!isInside(realRoot, realEntry)) {
      return err(entryInvalid(`entry ${JSON.stringify(entry)} resolves to ${realEntry}, outside the plugin root ${realRoot}`, { ...details, resolved: realEntry }));
    }
    if (!ESM_ENTRY_EXTENSIONS.includes(extname(realEntry))) {
      return err(entryInvalid(`entry ${JSON.stringify(entry)} must be an ES module file (${ESM_ENTRY_EXTENSIONS.join(', ')})`, details));
    }
    const isFile = await stat(realEntry).then((info) => info.isFile(), () => false);
    if (!isFile) return err(entryInvalid(`entry ${JSON.stringify(entry)} is not a regular file`, details));
    return ok({ root: realRoot, path: realEntry });
  };
  return new ResultAsync(resolve());
}

/** The `createPlugin` export of an ES module. */
export type CreatePlugin = (server: unknown) => unknown;

let importGeneration = 0;

/**
 * Imports the entry and returns its `createPlugin` export. `fresh` adds a
 * query string to the file URL so that Node evaluates the file again instead
 * of answering from its module cache (hot reload); the modules the entry
 * itself imports stay cached.
 */
export function importCreatePlugin(entry: ResolvedEntry, fresh: boolean): ResultAsync<CreatePlugin, HostError> {
  const url = pathToFileURL(entry.path);
  if (fresh) url.search = `reload=${Date.now()}-${++importGeneration}`;
  const details = { entry: entry.path };
  return ResultAsync.fromPromise(import(url.href) as Promise<Record<string, unknown>>, (cause) =>
    entryInvalid(`importing ${entry.path} failed: ${cause instanceof Error ? cause.message : String(cause)}`, details, cause),
  ).andThen((module) => {
    const createPlugin = module['createPlugin'];
    return typeof createPlugin === 'function'
      ? ok(createPlugin as CreatePlugin)
      : err(entryInvalid(`${entry.path} does not export createPlugin(server)`, details));
  });
}
