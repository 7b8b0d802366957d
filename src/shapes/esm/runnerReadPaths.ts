/**
 * What a sandboxed ESM runner must be able to read of this library's own
 * installation, whatever layout the host application's package manager
 * chose: npm hoisted or nested (`node_modules/mcp-plugin-host/node_modules`
 * when the application needs another major of a dependency), pnpm's and
 * npm's linked stores, workspaces that link the package from elsewhere.
 *
 * Node runs the runner script by its real path and resolves each bare
 * import from the importing file's real directory upward, through every
 * `node_modules` on the way (a directory named `node_modules` is never
 * searched for a nested one), then loads what it found by its real path.
 * So the sandbox gets: the script (as named and as real) and its folder,
 * its package's `package.json` and what the package publishes (`files`),
 * and the folder of every dependency as Node finds it on the lookup path of
 * that package, then of each dependency's real directory, transitively.
 * Never a whole `node_modules`: the application's holds its other packages
 * and tool caches (`.cache`, with transpiled application source).
 */
import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';

const DEPENDENCY_FIELDS = ['dependencies', 'optionalDependencies', 'peerDependencies'] as const;

const computed = new Map<string, readonly string[]>();

const within = (path: string, dir: string): boolean => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

const realOrUndefined = (path: string): string | undefined => {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
};

/** The nearest directory at or above `dir` holding a package.json. */
function packageRootOf(dir: string): string | undefined {
  for (let current = dir; ; current = dirname(current)) {
    if (existsSync(join(current, 'package.json'))) return current;
    if (current === dirname(current)) return undefined;
  }
}

/** The `node_modules` folders Node's resolution searches from a file in `dir`, nearest first, that exist. */
function lookupFolders(dir: string): string[] {
  const out: string[] = [];
  for (let current = dir; ; current = dirname(current)) {
    if (basename(current) !== 'node_modules') {
      const folder = join(current, 'node_modules');
      if (existsSync(folder)) out.push(folder);
    }
    if (current === dirname(current)) return out;
  }
}

function packageJsonOf(packageDir: string): Record<string, unknown> {
  try {
    const manifest: unknown = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
    return typeof manifest === 'object' && manifest !== null ? (manifest as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** What the package publishes (`files`, plain names only) beside its package.json. */
function publishedParts(packageDir: string): string[] {
  const files = packageJsonOf(packageDir)['files'];
  const names = Array.isArray(files) ? files.filter((f): f is string => typeof f === 'string' && /^[\w.-]+\/?$/.test(f) && !f.startsWith('.')) : [];
  return ['package.json', ...names.map((name) => name.replace(/\/$/, ''))];
}

function dependencyNames(packageDir: string): string[] {
  const manifest = packageJsonOf(packageDir);
  const names = new Set<string>();
  for (const field of DEPENDENCY_FIELDS) {
    const table = manifest[field];
    if (typeof table === 'object' && table !== null) for (const name of Object.keys(table)) names.add(name);
  }
  return [...names];
}

class ReadableSet {
  readonly #paths = new Set<string>();

  /** Adds a path and, when it goes through links, the real path too. */
  add(path: string): void {
    this.#paths.add(path);
    const real = realOrUndefined(path);
    if (real !== undefined) this.#paths.add(real);
  }

  covers(path: string): boolean {
    return [...this.#paths].some((dir) => within(path, dir));
  }

  /** Every path, minus those inside another one (each is one mount). */
  list(): string[] {
    const all = [...this.#paths].sort((a, b) => a.length - b.length);
    return all.filter((path, i) => !all.slice(0, i).some((outer) => within(path, outer)));
  }
}

const isLink = (path: string): boolean => {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
};

function addDependencyClosure(packageDir: string, readable: ReadableSet, visited: Set<string>): void {
  if (visited.has(packageDir)) return;
  visited.add(packageDir);
  const folders = lookupFolders(packageDir);
  for (const name of dependencyNames(packageDir)) {
    const found = folders.map((folder) => join(folder, name)).find((candidate) => existsSync(candidate));
    const real = found === undefined ? undefined : realOrUndefined(found);
    if (found === undefined || real === undefined) continue;
    // Only what Node resolves: the dependency's own folder, never the whole node_modules it sits in (an
    // application's node_modules holds its other packages and tool caches such as .cache). The sandbox mounts
    // real paths, so a dependency reached through a link (pnpm's store) needs the folder of links it sits in.
    if (isLink(found)) readable.add(dirname(found));
    if (!readable.covers(real)) readable.add(real);
    addDependencyClosure(real, readable, visited);
  }
}

/**
 * The paths a sandbox must expose read-only for Node to run the runner
 * `script` with everything it imports; computed once per script and process.
 */
export function runnerReadPaths(script: string): readonly string[] {
  const known = computed.get(script);
  if (known !== undefined) return known;
  const readable = new ReadableSet();
  readable.add(script);
  const real = realOrUndefined(script) ?? script;
  // The runner's chunks and data sit beside it, published or not (a build run from a checkout).
  readable.add(dirname(real));
  const own = packageRootOf(dirname(real));
  if (own !== undefined) {
    for (const part of publishedParts(own)) if (existsSync(join(own, part))) readable.add(join(own, part));
    addDependencyClosure(own, readable, new Set());
  }
  const paths = readable.list();
  computed.set(script, paths);
  return paths;
}
