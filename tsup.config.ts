import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    testing: 'src/testing/index.ts',
    'esm-runner': 'src/shapes/esm/runner.ts',
    cli: 'src/cli/main.ts',
    // Found next to the built modules at run time (see src/binding/nodeMain.ts).
    nodeMainGuard: 'src/binding/nodeMainGuard.cjs',
  },
  shims: true,
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts', testing: 'src/testing/index.ts' } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
  // canonicalize 4 publishes only an `import` condition, so require() of the
  // CJS build would fail unless it is bundled in.
  noExternal: ['canonicalize'],
});
