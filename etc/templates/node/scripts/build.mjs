// Bundles src/server.mjs and the MCP SDK into plugin/bin/server.mjs: the plugin
// folder is what the host installs, and it must run without a node_modules.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/server.mjs'],
  outfile: 'plugin/bin/server.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Some of the SDK's dependencies are CommonJS and call require().
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});
