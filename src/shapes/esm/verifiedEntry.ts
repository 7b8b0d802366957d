/**
 * The runner's side of a pinned entry. The host hashes the installed entry
 * while copying it to an unnamed private file and passes a descriptor on the
 * copy; the runner reads the bytes from that descriptor, checks them against
 * the pinned SHA-256, and installs a module loader hook that answers the
 * entry's `file:` URL with exactly those bytes: in the runner's own thread
 * where Node has `module.registerHooks` (22.15+, 23.5+), otherwise on Node's
 * loader worker through `module.register` (20.6+, 20–30 ms slower to start). The entry keeps its real URL,
 * so its relative imports and `import.meta.url` behave as if it were loaded
 * from disk, but nothing written to the install root after verification can
 * change the code that is evaluated.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, readSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { err, ok, type Result } from 'neverthrow';
import { normalizeExecutablePath } from '../../binding/relativePath.js';
import { digestsEqual } from '../../binding/sha256.js';
import { untrusted } from '../../binding/untrusted.js';
import { hostError, type HostError } from '../../errors/HostError.js';
import { ioError } from '../../errors/ioError.js';
import type { ResolvedEntry } from './entry.js';
import type { EsmRunnerVerifiedEntry } from './runnerArgs.js';

// Runs in Node's loader thread; the bytes arrive once through `initialize`.
const HOOKS_SOURCE = `
let entry;
export function initialize(data) { entry = data; }
export async function load(url, context, nextLoad) {
  if (entry === undefined || url !== entry.url) return nextLoad(url, context);
  return { format: context.format ?? 'module', source: entry.source, shortCircuit: true };
}
`;

interface LoadContext {
  readonly format?: string | null | undefined;
}
interface LoadResult {
  readonly format?: string | null | undefined;
  readonly source?: string | Uint8Array | null | undefined;
  readonly shortCircuit?: boolean;
}
/** The two hook APIs, typed here because Node 20's types predate `registerHooks`. */
interface NodeModuleHooks {
  readonly registerHooks?: (hooks: {
    load(url: string, context: LoadContext, nextLoad: (url: string, context: LoadContext) => LoadResult): LoadResult;
  }) => unknown;
  readonly register?: (specifier: string, options: { data: unknown }) => void;
}

function readDescriptor(fd: number): Buffer {
  const size = fstatSync(fd).size;
  const bytes = Buffer.alloc(size);
  let offset = 0;
  while (offset < size) {
    const n = readSync(fd, bytes, offset, size - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  return bytes.subarray(0, offset);
}

/**
 * Reads the verified entry bytes, checks them and the manifest's `entry`
 * against the pin, and registers the hook that serves them. Returns the
 * entry to hand to the loader (so it imports that path, not a re-resolved
 * one). Refusals are PLUGIN_EXECUTABLE_UNTRUSTED.
 */
export function serveVerifiedEntry(root: string, manifestEntry: string | undefined, pin: EsmRunnerVerifiedEntry): Result<ResolvedEntry, HostError> {
  const declared = normalizeExecutablePath(manifestEntry ?? '');
  if (declared.isErr() || declared.value !== pin.path) {
    return err(
      untrusted('binding_inconsistent', `the manifest's entry ${JSON.stringify(manifestEntry ?? null)} is not the entry pinned at install (${pin.path})`, {
        entry: manifestEntry ?? null,
        pinned: pin.path,
      }),
    );
  }
  let source: Buffer;
  try {
    source = readDescriptor(pin.fd);
    closeSync(pin.fd);
  } catch (cause) {
    return err(ioError(`Reading the verified entry from descriptor ${pin.fd}`, undefined, cause));
  }
  if (!digestsEqual(pin.sha256, createHash('sha256').update(source).digest('hex'))) {
    return err(untrusted('digest_mismatch', `the entry bytes handed to the runner do not have the pinned SHA-256 ${pin.sha256}`, { pinned: pin.sha256 }));
  }
  const path = join(root, ...pin.path.split('/'));
  const url = pathToFileURL(path).href;
  const { registerHooks, register } = nodeModule as NodeModuleHooks;
  if (typeof registerHooks === 'function') {
    let served = false;
    registerHooks({
      load(loadedUrl, context, nextLoad) {
        if (served || loadedUrl !== url) return nextLoad(loadedUrl, context);
        served = true;
        return { format: context.format ?? 'module', source, shortCircuit: true };
      },
    });
    return ok({ root, path });
  }
  // Node before 20.6 has neither; starting without the hook would run unverified code.
  if (typeof register !== 'function') {
    return err(hostError('HOST_INVALID_OPTIONS', `esm runner: Node ${process.version} cannot serve verified module bytes (module.register needs Node 20.6 or later)`));
  }
  register(`data:text/javascript,${encodeURIComponent(HOOKS_SOURCE)}`, { data: { url, source: new Uint8Array(source) } });
  return ok({ root, path });
}
