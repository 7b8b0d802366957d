'use strict';
// Preloaded (--require) into a Node plugin started by its path: under an
// integrity policy (Node 20/21) or with the verified copy mounted at that
// path. Node resolves the main script like a require() of it: when the
// path is not a file it tries extensions and the directory's package.json
// or index, and the policy names only the exact path. Resolving the main
// to exactly that path means a file put beside it or in its place is never
// run; a missing main fails to load instead. Node resolves a CommonJS main
// twice (once to choose the loader, once to load it), so the rule stays.
// Worker threads inherit the preload but have no main script of their own.
//
// Every Node start of such a plugin pays for this file, so it loads no module but node:module: requiring
// node:worker_threads for its isMainThread cost 0.7-1.7 ms of CPU per start (Node 20; docs/performance.md "One cold
// call"). (Node's Module as this module's module.constructor would spare node:module, but the policy hides it.)
const Module = require('node:module');

// require()'s global folders without HOME ($HOME/.node_modules, $HOME/.node_libraries): HOME is the plugin's data
// directory, which it writes and which outlives upgrades, so a module planted there would load unpinned
// (src/binding/nodeGlobalPaths.ts says the same for the other launches). Every thread reads them at its start.
{
  const home = process.env.HOME;
  if (home !== undefined) {
    delete process.env.HOME;
    try {
      Module._initPaths();
    } finally {
      process.env.HOME = home;
    }
  }
}

// In a worker thread Node replaces the process methods a worker lacks (chdir, abort) by stubs it marks `disabled`.
// Were the mark gone in some Node, a worker would still see no main script here (its process.argv[1] is unset unless
// the plugin gave the worker argv), and at worst the rule would resolve that worker's own entry exactly too.
const isMainThread = process.chdir.disabled !== true;

if (isMainThread && typeof process.argv[1] === 'string') {
  const { resolve } = require('node:path');
  const main = resolve(process.argv[1]);
  const findPath = Module._findPath;
  Module._findPath = function findMainExactly(request, paths, isMain) {
    if (isMain === true && request === main) return main;
    return findPath.apply(this, arguments);
  };
}
