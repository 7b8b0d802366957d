import { defineConfig, type Options } from 'tsup';

const shared = {
  shims: true,
  // No source maps in the package: with the sources embedded they were twice the size of the code they map, and
  // without them they would point at src/, which is not shipped. The code is not minified, so stack traces read as is.
  sourcemap: false,
  target: 'node20',
  platform: 'node',
  // canonicalize 4 publishes only an `import` condition, so require() of the
  // CJS build would fail unless it is bundled in.
  noExternal: ['canonicalize'],
} satisfies Options;

/** Built on its own, without shared chunks: the sandbox mounts this one file and Node requires it under the policy. */
const NODE_MAIN_GUARD = 'nodeMainGuard.cjs';
/**
 * Also built on its own: a sandboxed runner sees its own file and the node_modules around the library, so a
 * `dist/` outside node_modules (this repository, a vendored copy) would lack the shared chunks it imports.
 */
const ESM_RUNNER = 'esm-runner.js';

/**
 * The builds run at the same time into dist/, so each one cleans only its own kind of file: the ESM build
 * `.js`, the CommonJS build `.cjs`, the declaration build `.d.ts`/`.d.cts`.
 */
const DECLARATIONS = ['!*.d.ts', '!*.d.cts'];
/**
 * The sandbox launcher (scripts/build-launcher.mjs replaces it by a rename): kept through the clean, or a host
 * starting a plugin during a rebuild would find it missing and `auto` would fall back to bubblewrap.
 */
const LAUNCHER = '!mcp-plugin-launcher';
const OTHER_BUILDS = [LAUNCHER, `!${NODE_MAIN_GUARD}`, `!${NODE_MAIN_GUARD}.map`, `!${ESM_RUNNER}`, `!${ESM_RUNNER}.map`, ...DECLARATIONS];
const LIBRARY_ENTRIES = { index: 'src/index.ts', testing: 'src/testing/index.ts' };

/**
 * The package's builds. A function of the options a caller overrides, so that
 * a build asked for no declarations (`build({ dts: false })` in tests and
 * benches) leaves the declaration build out instead of turning it into a
 * second, unsplit JS build racing the others.
 */
export function packageBuilds(overrides: Options = {}): Options[] {
  return [
    {
      ...shared,
      // The CLI is ESM only (`bin` runs dist/cli.js) and shares the library's chunks; each command's module is
      // imported when it runs, so esbuild makes it a chunk of its own and a command loads only what it uses.
      entry: { ...LIBRARY_ENTRIES, cli: 'src/cli/main.ts' },
      format: ['esm'],
      splitting: true,
      clean: [...OTHER_BUILDS, '!*.cjs', '!*.cjs.map'],
    },
    {
      ...shared,
      entry: LIBRARY_ENTRIES,
      format: ['cjs'],
      // Shared chunks in CommonJS too (tsup's opt-in for cjs), so `mcp-plugin-host` and `mcp-plugin-host/testing`
      // load one copy of the library: without it each .cjs entry bundles its own PluginHost and HostError classes.
      splitting: true,
      clean: [...OTHER_BUILDS, '!*.js', '!*.js.map'],
    },
    ...(overrides.dts === false
      ? []
      : [
          {
            ...shared,
            entry: LIBRARY_ENTRIES,
            format: ['esm', 'cjs'],
            dts: { entry: LIBRARY_ENTRIES, only: true },
            clean: [LAUNCHER, `!${NODE_MAIN_GUARD}`, `!${ESM_RUNNER}`, '!*.js', '!*.js.map', '!*.cjs', '!*.cjs.map'],
          } satisfies Options,
        ]),
    {
      ...shared,
      // Found next to the built modules at run time (see src/binding/nodeMain.ts).
      entry: { nodeMainGuard: 'src/binding/nodeMainGuard.cjs' },
      format: ['cjs'],
      splitting: false,
    },
    {
      ...shared,
      entry: { 'esm-runner': 'src/shapes/esm/runner.ts' },
      format: ['esm'],
      splitting: false,
    },
  ];
}

export default defineConfig(packageBuilds);
