/**
 * Node's CommonJS global folders. Besides `node_modules` up the tree,
 * `require()` looks in `$HOME/.node_modules` and `$HOME/.node_libraries`,
 * read from HOME once at start-up. A plugin's HOME is its data directory,
 * which it writes and which outlives its upgrades and reinstalls: a module
 * planted there answers every `require()` its tree cannot (an optional
 * dependency such as `ws`'s `bufferutil`) at every later start, from a file
 * no pin lists. Every Node launch of a plugin (the `--import` bootstraps,
 * the main-module guard, the ESM runner) rebuilds the folders without HOME
 * before the plugin's code loads; Node's own folder `<prefix>/lib/node`
 * stays. A Node without `Module._initPaths` fails to start instead.
 */
import Module from 'node:module';

/**
 * The statement that rebuilds the global folders without HOME, for a
 * bootstrap that has Node's `Module` (the default export of `node:module`)
 * in scope as `Module`. HOME is taken out of the environment only while
 * Node reads it again, then put back as it was.
 */
export const HOME_FREE_GLOBAL_PATHS = `{
  const home = process.env.HOME;
  if (home !== undefined) {
    delete process.env.HOME;
    try { Module._initPaths(); } finally { process.env.HOME = home; }
  }
}`;

/** Does what {@link HOME_FREE_GLOBAL_PATHS} does, in this process (the ESM runner, before it loads the plugin). */
export function dropHomeGlobalPaths(): void {
  const home = process.env['HOME'];
  if (home === undefined) return;
  delete process.env['HOME'];
  try {
    (Module as unknown as { _initPaths(): void })._initPaths();
  } finally {
    process.env['HOME'] = home;
  }
}
