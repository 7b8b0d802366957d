import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // This example lives inside the mcp-plugin-host repository, whose own tests
  // run it against the kit's source. In your repository, delete `resolve`:
  // `mcp-plugin-host/testing` then comes from node_modules.
  resolve: {
    alias: { 'mcp-plugin-host/testing': fileURLToPath(new URL('../../src/testing/index.ts', import.meta.url)) },
  },
  test: {
    include: ['test/**/*.test.mjs'],
    // Every test starts a real sandboxed process: give slow CI machines room.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
