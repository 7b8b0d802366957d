'use strict';
// Preloaded (--require) into a Node 20/21 plugin run under an integrity
// policy. Node resolves the main script like a require() of it: when the
// path is not a file it tries extensions and the directory's package.json
// or index, and the policy names only the exact path. Resolving the main
// to exactly that path means a file put beside it or in its place is never
// run; a missing main fails to load instead. Node resolves a CommonJS main
// twice (once to choose the loader, once to load it), so the rule stays.
// Worker threads inherit the preload but have no main script of their own.
const { isMainThread } = require('node:worker_threads');

if (isMainThread && typeof process.argv[1] === 'string') {
  const Module = require('node:module');
  const { resolve } = require('node:path');
  const main = resolve(process.argv[1]);
  const findPath = Module._findPath;
  Module._findPath = function findMainExactly(request, paths, isMain) {
    if (isMain === true && request === main) return main;
    return findPath.apply(this, arguments);
  };
}
