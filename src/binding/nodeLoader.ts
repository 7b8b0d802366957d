/**
 * Node reads its main module by path and resolves the module's relative
 * imports from that path. To run the verified bytes while keeping the
 * install root's layout, a Node interpreter is started with a tiny `--import`
 * bootstrap (a `data:` URL, so nothing on disk can be swapped) that registers
 * one loader hook: when the main module's URL is loaded, its source comes
 * from the inherited descriptor of the verified copy; every other module
 * loads normally. Needs Node 20.6+ (`module.register`); older Node fails to
 * start instead of running unverified code.
 */

const HOOKS_SOURCE = `
import { closeSync, fstatSync, readSync } from 'node:fs';
let main;
export function initialize(data) { main = data; }
export async function load(url, context, nextLoad) {
  if (main === undefined || url !== main.url) return nextLoad(url, context);
  const { fd } = main;
  main = undefined;
  const size = fstatSync(fd).size;
  const source = Buffer.alloc(size);
  let offset = 0;
  while (offset < size) {
    const n = readSync(fd, source, offset, size - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  closeSync(fd);
  return { format: context.format ?? 'commonjs', source: source.subarray(0, offset), shortCircuit: true };
}
`;

const dataUrl = (source: string): string => `data:text/javascript,${encodeURIComponent(source)}`;

/** The `--import` argument that makes Node run the main module's source from descriptor `fd`. */
export function nodeVerifiedMainImport(fd: number): string {
  const bootstrap =
    `import { register } from 'node:module';` +
    `import { pathToFileURL } from 'node:url';` +
    `register(${JSON.stringify(dataUrl(HOOKS_SOURCE))}, { data: { url: pathToFileURL(process.argv[1]).href, fd: ${fd} } });`;
  return dataUrl(bootstrap);
}
