import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.mjs'],
    // Every test starts a real sandboxed process: give slow CI machines room.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
