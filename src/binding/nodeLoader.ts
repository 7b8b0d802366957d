/**
 * Node reads its main module by path and resolves the module's relative
 * imports from that path. To run the verified bytes while keeping the
 * install root's layout, a Node interpreter is started with a tiny `--import`
 * bootstrap (a `data:` URL, so nothing on disk can be swapped) that installs
 * one module-loader hook: when the main module's URL is loaded, its source
 * comes from the inherited descriptor of the verified copy; every other
 * module loads normally. The first module Node loads must be the main
 * module's exact URL: Node resolves a main script that is not a file to a
 * sibling with an extension or to a directory's index, and such a file put
 * in the script's place must not run.
 *
 * Two flavours of the same hook: in-thread (`module.registerHooks`, Node
 * 22.15+ and 23.5+) and on Node's loader worker (`module.register`, Node
 * 20.6+), which costs about 20–30 ms more per start. A Node without the
 * chosen API fails to start instead of running unverified code.
 */

import { HOME_FREE_GLOBAL_PATHS } from './nodeGlobalPaths.js';

/**
 * Shared by both hook flavours: the entry check, and reading the whole file
 * behind descriptor `fd` (then closing it). The hook reads it when the main
 * module loads, before any plugin code has run, and worker threads install
 * no hook, so descriptor 3 is still the verified copy when it is read.
 */
const READ_VERIFIED_SOURCE = `
function checkEntry(url, mainUrl) {
  if (url !== mainUrl) throw new Error('mcp-plugin-host: the main module resolved to ' + url + ', not to the verified ' + mainUrl);
}
function readVerified(fd) {
  const stat = fstatSync(fd);
  if (!stat.isFile()) throw new Error('mcp-plugin-host: descriptor ' + fd + ' is not the verified main module (a forked Node child inherits the flags but not the descriptor)');
  const size = stat.size;
  const source = Buffer.alloc(size);
  let offset = 0;
  while (offset < size) {
    const n = readSync(fd, source, offset, size - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  closeSync(fd);
  return source.subarray(0, offset);
}
`;

// Node leaves the format open for an extensionless or package-less .js main (newer Node then detects it from the syntax); asking the next loader settles it.
const WORKER_HOOKS_SOURCE = `
import { closeSync, fstatSync, readSync } from 'node:fs';
${READ_VERIFIED_SOURCE}
let main;
let served = false;
export function initialize(data) { main = data; }
export async function load(url, context, nextLoad) {
  if (served) return nextLoad(url, context);
  checkEntry(url, main.url);
  served = true;
  const format = context.format ?? (await nextLoad(url, context)).format ?? 'commonjs';
  return { format, source: readVerified(main.fd), shortCircuit: true };
}
`;

const dataUrl = (source: string): string => `data:text/javascript,${encodeURIComponent(source)}`;

/**
 * The `--import` argument that makes Node (20.6+) run the main module's
 * source from descriptor `fd`, through a hook on the loader worker. Worker
 * threads inherit the argument; only the main thread installs the hook.
 */
export function nodeVerifiedMainImport(fd: number): string {
  const bootstrap =
    `import Module, { register } from 'node:module';` +
    `import { pathToFileURL } from 'node:url';` +
    `import { isMainThread } from 'node:worker_threads';` +
    HOME_FREE_GLOBAL_PATHS +
    `if (isMainThread) register(${JSON.stringify(dataUrl(WORKER_HOOKS_SOURCE))}, { data: { url: pathToFileURL(process.argv[1]).href, fd: ${fd} } });`;
  return dataUrl(bootstrap);
}

/** The same as {@link nodeVerifiedMainImport} for Node 22.15+ and 23.5+, through an in-thread hook. */
export function nodeVerifiedMainImportInThread(fd: number): string {
  const bootstrap = `
import { closeSync, fstatSync, readSync } from 'node:fs';
import Module, { registerHooks } from 'node:module';
import { pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';
${READ_VERIFIED_SOURCE}
${HOME_FREE_GLOBAL_PATHS}
if (isMainThread) {
  const mainUrl = pathToFileURL(process.argv[1]).href;
  let served = false;
  registerHooks({
    load(url, context, nextLoad) {
      if (served) return nextLoad(url, context);
      checkEntry(url, mainUrl);
      served = true;
      const format = context.format ?? nextLoad(url, context).format ?? 'commonjs';
      return { format, source: readVerified(${fd}), shortCircuit: true };
    },
  });
}
`;
  return dataUrl(bootstrap);
}
