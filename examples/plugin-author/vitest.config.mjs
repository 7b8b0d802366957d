import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Inside the mcp-plugin-host repository this example runs against the kit's
// source; copied into your own repository, `mcp-plugin-host/testing` comes
// from node_modules and this file needs nothing but `test`.
const kitSource = fileURLToPath(new URL('../../src/testing/index.ts', import.meta.url));

export default defineConfig({
  ...(existsSync(kitSource) ? { resolve: { alias: { 'mcp-plugin-host/testing': kitSource } } } : {}),
  test: {
    include: ['test/**/*.test.mjs'],
    // Every test starts a real sandboxed process: give slow CI machines room.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
